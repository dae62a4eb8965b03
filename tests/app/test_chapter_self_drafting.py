"""Drafters That Read the Target: placed after the trees, its idea and terms before the demo, the four
drafters' first rounds, (folded) the measured comparison with acceptance by position (accepted ÷ reached,
the α Dial's quantity) and a calibration chart per drafter, and the stored EAGLE-3 benchmark with its ablation."""
import math

from tests.app.helpers import chart, page, unfolded_text
from ui.content import chapters


def test_the_chapter_follows_the_trees():
    paths = [c.path for c in chapters.CHAPTERS]
    assert paths.index("chapters/self_drafting.py") == paths.index("chapters/trees.py") + 1


DRAFTERS = ["distilled draft", "Medusa heads", "EAGLE drafter", "EAGLE-3 drafter"]


def test_the_four_drafters_are_measured_side_by_side(pair):
    at = page("chapters/self_drafting.py", max_new=12, temp=0)
    assert len(at.dataframe) == 3  # the first round, and (folded) the EAGLE-3 ablation and the heads' training record
    assert any("Try this" in i.value for i in at.info)
    first = at.dataframe[0].value  # one round, four drafters: the lesson's demo, first on the page
    assert list(first[""]) == ["target (what it writes)", *DRAFTERS]
    at.button(key="sd_run").click().run()
    assert not at.exception
    rows = at.session_state["sd_result"]["out"]["rows"]
    assert [r["drafter"] for r in rows] == DRAFTERS
    assert all(r["tokens_per_pass"] >= 1 and r["c"] > 0 and r["measured"].n == 3 for r in rows)
    positions = chart(at, "sd_positions")
    assert len(positions["data"]) == 4
    for bars, r in zip(positions["data"], rows):  # the conditional rate, as on the α Dial, not accepted ÷ drafted
        assert all((y is None and c != c) or (y is not None and math.isclose(y, c)) for y, c in zip(bars["y"], r["conditional"]))
    assert "accepted ÷ reached" in positions["layout"]["title"]["text"]
    assert len([t for t in chart(at, "sd_calibration")["data"] if t.get("mode") == "lines+markers"]) == 4


def test_the_eagle3_ablation_is_the_stored_measurement(pair):
    """The fold's table and verdicts are the stored benchmark's figures, not text written beside them."""
    from ui.sections.self_drafting_eagle3 import BENCH, stored_bench
    bench = stored_bench(str(BENCH))
    at = page("chapters/self_drafting.py", max_new=8, temp=0)
    table = at.dataframe[1].value
    greedy = {r["drafter"]: r for r in bench["compare"]["T=0"]}
    shown = table[table["sampling"] == "T=0"]
    assert list(shown["tokens per target pass"]) == [round(greedy[k]["tokens_per_pass"], 2) for k in
                                                     ("distilled draft", "EAGLE drafter", "ablation: eagle1",
                                                      "ablation: ttt", "ablation: vocab", "ablation: vocab2048",
                                                      "EAGLE-3 drafter")]
    ratio = greedy["EAGLE-3 drafter"]["tokens_per_pass"] / greedy["distilled draft"]["tokens_per_pass"]
    fusion = greedy["EAGLE-3 drafter"]["tokens_per_pass"] / greedy["ablation: vocab2048"]["tokens_per_pass"]
    assert any(f"{ratio:.2f}×" in m.value for m in at.markdown)
    assert any(f"fusing 3 target layers: {greedy['EAGLE-3 drafter']['tokens_per_pass']:.2f} tokens per pass" in m.value
               and f"({fusion:.2f}×)" in m.value for m in at.markdown)
    assert len(chart(at, "sd_eagle3_positions")["data"]) == 2 * len(bench["compare"])


def test_terms_are_defined_before_the_demo_uses_them():
    at = page("chapters/self_drafting.py", max_new=8, temp=0)
    text = " ".join(m.value for m in at.markdown)
    for term in ("**hidden state**", "**LM head**", "**head**", "**distilled draft**"):
        assert term in text, term
    assert text.index("The idea:") < text.index("**hidden state**")
    shown = unfolded_text(at)  # the measurement and its six concepts wait in a fold
    for folded in ("AUC", "calibrat", "acceptance length", "speedup"):
        assert folded not in shown, folded


def test_the_step_through_offers_the_drafters_that_read_the_target():
    at = page("chapters/round_by_round.py", max_new=8, temp=0)
    for which in ("medusa", "eagle", "eagle3"):
        at.radio(key="rr_drafter").set_value(which).run()
        assert not at.exception
        assert any("rounds" in c.value for c in at.caption)
