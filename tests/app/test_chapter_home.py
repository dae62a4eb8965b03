"""Home."""
import re

from specdec_core.analysis import race
from tests.app.helpers import metric, page


def test_home_shows_paper_and_measured_figures():
    at = page("chapters/home.py", max_new=12, temp=0)
    assert metric(at, "Faster decoding") == "2–3×"
    assert float(metric(at, "Tokens per target pass")) >= 1.0
    assert metric(at, "Same tokens as plain decoding") == "yes"  # greedy speculative == greedy plain
    assert any("from the paper" in c.value for c in at.caption)
    assert any("measured here" in c.value for c in at.caption)


def test_home_measures_the_speedup_behind_a_button_and_shows_its_spread():
    at = page("chapters/home.py", max_new=10, temp=0, seed=3)
    at.button(key="home_speedup").click().run()
    assert not at.exception
    median = metric(at, "Wall-clock speedup here")
    assert re.fullmatch(r"\d+\.\d\d×", median)
    # "1.62× (1.55–1.70, 5 runs)": 5 races, two more at a time while they disagree (a busy machine), up to 15.
    spreads = [m for el in [*at.caption, *at.warning] for m in re.finditer(
        r"(\d+\.\d\d)× \((\d+\.\d\d)–(\d+\.\d\d), (\d+) runs\)", el.value)]
    assert len(spreads) == 1
    mid, low, high, n = spreads[0].groups()
    assert f"{mid}×" == median and float(low) <= float(mid) <= float(high)
    assert int(n) in range(race.RACE_REPEATS, race.RACE_MAX_REPEATS + 1, 2)

