"""The α Dial."""
import re

from specdec_core import theory
from tests.app.helpers import chart, metric, page


def test_alpha_slider_moves_the_optimal_gamma():
    at = page("chapters/alpha_dial.py", max_new=8)
    at.slider(key="ad_c").set_value(0.02).run()
    at.slider(key="ad_alpha").set_value(0.5).run()
    low = int(metric(at, "Optimal γ"))
    at.slider(key="ad_alpha").set_value(0.95).run()
    high = int(metric(at, "Optimal γ"))
    assert low == theory.optimal_gamma(0.5, 0.02, max_gamma=20)
    assert high == theory.optimal_gamma(0.95, 0.02, max_gamma=20)
    assert high > low
    stars = [t for t in chart(at, "ad_speedup")["data"] if t.get("marker", {}).get("symbol") == "star"]
    assert [high] in [t["x"] for t in stars]


def test_alpha_dial_reproduces_the_papers_table_1():
    at = page("chapters/alpha_dial.py", max_new=8)
    table = at.dataframe[0].value
    assert len(table) == 6 and list(table["match"]) == ["✓"] * 6


def test_the_table_2_caption_counts_the_rows_above_the_free_draft_formula():
    """4 of the paper's 12 measured speeds beat (1 − α^(γ+1)) / (1 − α): EnDe T5-small T = 1, CNNDM T5-small
    T = 0 and T = 1, CNNDM T5-base T = 1. The caption must not say that every row stays below it."""
    at = page("chapters/alpha_dial.py", max_new=8)
    caption = next(c.value for c in at.caption if "T5-XXL (11B) target" in c.value)
    assert "8 of 12 measured speeds sit below" in caption and "The other 4 sit above it" in caption


def test_alpha_dial_measures_each_drafter(pair):
    at = page("chapters/alpha_dial.py", max_new=8, gamma=3)
    at.slider(key="ad_rounds").set_value(10).run()
    at.button(key="ad_run").click().run()
    assert not at.exception
    measured = at.session_state["ad_measured"]
    assert list(measured["results"]) == list(pair.drafts)
    for res in measured["results"].values():
        assert 0 <= res["alpha"] <= 1 and res["tokens_per_pass"] >= 1 and res["rounds"] == 10
        assert res["measured"].n == 3 and res["measured"].median == res["speedup"] and res["c"] > 0
    assert any(re.search(r"× \(\d+\.\d\d–\d+\.\d\d, 3 runs\)", el.value) for el in [*at.caption, *at.warning])
    table = at.dataframe[-1].value
    assert list(table["drafter"]) == list(pair.drafts)
    spec = chart(at, "ad_by_position")
    assert spec["data"][0]["x"] == [1, 2, 3]


def test_hard_tasks_are_easier_measures_alpha_per_kind_of_text(pair):
    from specdec_core.analysis.task_kinds import KINDS, alpha_by_kind
    at = page("chapters/alpha_dial.py", max_new=8, temp=1.0)
    at.button(key="ad_kinds_run").click().run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "kind of text" in d.value.columns)
    expected = alpha_by_kind(pair.target, pair.draft, pair.tokenizer, at.session_state["settings"].sampling,
                             context_length=pair.context_length)
    assert list(table["kind of text"]) == list(KINDS)
    assert list(table["α (mean β over the passage)"]) == [round(expected[k]["alpha"], 3) for k in KINDS]
