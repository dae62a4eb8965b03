"""Home."""
import re

from tests.app.helpers import metric, page


def test_home_shows_paper_and_measured_figures():
    at = page("chapters/home.py", max_new=12, temp=0)
    assert metric(at, "Faster decoding") == "2–3×"
    assert float(metric(at, "Tokens per target pass")) >= 1.0
    assert metric(at, "Same tokens as plain greedy") == "yes"  # greedy speculative == greedy plain
    assert any("from the paper" in c.value for c in at.caption)
    assert any("measured here" in c.value for c in at.caption)


def test_home_measures_the_speedup_behind_a_button_and_shows_its_spread():
    at = page("chapters/home.py", max_new=10, temp=0, seed=3)
    at.button(key="home_speedup").click().run()
    assert not at.exception
    assert re.fullmatch(r"\d+\.\d\d×", metric(at, "Wall-clock speedup here"))
    assert any(re.search(r"× \(\d+\.\d\d–\d+\.\d\d, 5 runs\)", el.value) for el in [*at.caption, *at.warning])
