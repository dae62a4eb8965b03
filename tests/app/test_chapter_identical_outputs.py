"""Identical Outputs."""
import pytest

from specdec_core.analysis import lab
from specdec_core.broken import BROKEN_RULES
from specdec_core.speculative import EXACT
from tests.app.helpers import chart, page


def test_identical_outputs_page_greedy_diff_is_empty():
    at = page("chapters/identical_outputs.py", max_new=10, gamma=3)
    assert any("(empty" in c.value for c in at.code)
    assert any(m.value.startswith("Identical") for m in at.success)


def test_every_drafter_of_the_demo_gives_the_plain_tokens(pair):
    at = page("chapters/identical_outputs.py", max_new=10, gamma=3)
    options = at.radio(key="io_drafter").options
    assert len(options) == len(pair.drafts) + 1  # the pair's drafters and the n-gram lookup
    for option in options:
        at.radio(key="io_drafter").set_value(option).run()
        assert not at.exception
        assert any(m.value.startswith("Identical") for m in at.success), option
        assert any("(empty" in c.value for c in at.code), option


@pytest.mark.slow  # the lab's documented sample size
def test_identical_outputs_page_lab_and_broken_rules(documented_runs):
    """Default settings = the documented run: the page shows the same verdicts as the core."""
    at = page("chapters/identical_outputs.py", max_new=10)
    assert at.number_input(key="id_k").value == lab.DOCUMENTED_K
    at.button(key="id_sample").click().run()
    assert not at.exception
    res = at.session_state["id_result"]["result"]
    assert res.speculative_test.pvalue == pytest.approx(documented_runs[EXACT.name].speculative_test.pvalue)
    hist = chart(at, "id_hist")["data"]
    assert [t["name"] for t in hist] == ["exact p", f"speculative ({EXACT.name})", "plain sampling"]
    at.button(key="id_break").click().run()
    assert not at.exception
    verdicts = {r["rule"]: r["verdict"] for r in at.session_state["id_break_result"]["rows"]}
    assert verdicts == {EXACT.name: "passes", **{r.name: "FAILS" for r in BROKEN_RULES}}


def test_the_shipped_rules_sentence_says_what_the_table_shows():
    """The words under the shipped rules' table follow the run: an exact rule that chance rejected, a peaked
    prefix where exact match keeps almost every draft, a lossy rule the test missed."""
    from types import SimpleNamespace

    from specdec_core import lossy
    from specdec_core.exact_match import EXACT_MATCH
    from ui.sections.identical_outputs_lab import shipped_reading

    def rows(exact_passes: bool, lossy_passes: bool) -> list[dict]:
        verdicts = [(EXACT.name, exact_passes), (EXACT_MATCH.name, True)]
        verdicts += [(rule.name, lossy_passes) for rule in lossy.RULES.values()]
        return [{"rule": name, "test": SimpleNamespace(passes=passes)} for name, passes in verdicts]

    usual = shipped_reading(rows(True, False), {"exact": 0.8, "exact_match": 0.32})
    assert "Both exact rules pass" in usual and "40%" in usual and "less than half" in usual
    assert "The test catches" in usual and "does not catch" not in usual
    unlucky = shipped_reading(rows(False, True), {"exact": 1.0, "exact_match": 0.82})  # p ≈ q ≈ (0.9, 0.1)
    assert "Both exact rules pass" not in unlucky and "rejects *exact* this time" in unlucky
    assert "82%" in unlucky and "less than half" not in unlucky
    assert "does not catch" in unlucky and "The test catches" not in unlucky
