"""The Serial Tax."""
import re

import pytest

from tests.app.helpers import chart, metric, page


def test_serial_tax_decode_counts_one_pass_per_token():
    at = page("chapters/serial_tax.py", max_new=9)
    assert not any(m.label == "Target passes" for m in at.metric)  # nothing decoded yet
    at.toggle(key="st_slow").set_value(False).run()
    at.button(key="st_run").click().run()
    assert not at.exception
    assert metric(at, "Target passes") == "9" and metric(at, "Tokens generated") == "9"
    spec = chart(at, "st_cumulative")
    assert "K tokens = K passes" in spec["layout"]["title"]["text"]
    assert spec["data"][0]["x"] == list(range(1, 10))
    cumulative = spec["data"][0]["y"]
    assert all(b > a for a, b in zip(cumulative, cumulative[1:]))
    assert any("tok-target" in h.value for h in at.html)


@pytest.mark.slow  # times passes over 1 to 32 positions
def test_serial_tax_measures_one_pass_over_k_positions():
    at = page("chapters/serial_tax.py", max_new=4)
    at.button(key="st_sweep_run").click().run()
    assert not at.exception
    measured = chart(at, "st_sweep")["data"][0]
    assert measured["x"] == list(range(1, 33)) and all(t > 0 for t in measured["y"])
    assert measured["error_y"]["array"] and measured["error_y"]["arrayminus"]  # the spread, drawn
    assert "× one position" in metric(at, "Cost of 32 positions in one pass")
    # The live figure says its spread: "1.23 ms (1.10–1.40, 5 runs)", in a caption or a busy-machine warning.
    assert any(re.search(r"ms \(\d+\.\d\d–\d+\.\d\d, 5 runs\)", el.value) for el in [*at.caption, *at.warning])
