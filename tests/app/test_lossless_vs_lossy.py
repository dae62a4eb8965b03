"""Where the Speedup Lives: the measured lossless-vs-lossy table behind its button, the chart, the
worked example and the bridge table. One real measurement on the bundled pair (about a minute)."""
import pytest

from specdec_core.analysis import fidelity
from tests.app.helpers import chart, page

PAGE = "chapters/speedup_lives.py"


def table(at, first_column: str):
    """The dataframe whose first column is `first_column` (AppTest does not expose a dataframe's key)."""
    found = [d.value for d in at.dataframe if list(d.value.columns)[:1] == [first_column]]
    assert len(found) == 1, [list(d.value.columns) for d in at.dataframe]
    return found[0]


def test_first_paint_measures_nothing():
    at = page(PAGE, max_new=8, temp=0, gamma=4)
    assert at.button(key="sl_fidelity_run").label == "Measure the comparison"
    assert not at.dataframe
    with pytest.raises(KeyError):
        at.get_by_key("sl_fidelity_chart")


@pytest.fixture(scope="module")
def measured():
    at = page(PAGE, max_new=8, temp=0, gamma=4)
    at.button(key="sl_fidelity_run").click().run(timeout=600)
    assert not at.exception, at.exception
    return at


@pytest.mark.slow  # runs the page's whole measurement
def test_table_has_every_variant_and_speculative_decoding(measured):
    rows = table(measured, "method")
    methods = list(rows["method"])
    assert methods == ["int8 weights", "4-bit weights", "bf16", "first 6 of 8 layers", "first 4 of 8 layers",
                       "distilled drafter", fidelity.SPECULATIVE]
    spec = rows[rows["method"] == fidelity.SPECULATIVE].iloc[0]
    assert spec["agreement, teacher-forced"] == "100.0%" and spec["identical continuations"] == "3 of 3"
    quantised = rows[rows["method"].isin(["int8 weights", "4-bit weights"])]
    assert (quantised["speed vs fp32 target"] == "not measured (simulated)").all()
    assert rows[rows["method"] == "first 4 of 8 layers"].iloc[0]["speed vs fp32 target"].endswith(")")


@pytest.mark.slow  # runs the page's whole measurement
def test_chart_puts_speculative_decoding_at_distance_zero(measured):
    fig = chart(measured, "sl_fidelity_chart")
    spec = next(t for t in fig["data"] if t["name"] == "speculative")
    assert spec["x"][0] < 1e-9 and spec["y"][0] > 0
    assert not any(n in t.get("text", []) for t in fig["data"] for n in ("int8 weights", "4-bit weights"))


@pytest.mark.slow  # runs the page's whole measurement
def test_worked_example_marks_the_first_difference_in_text(measured):
    html = " ".join(h.proto.body for h in measured.get("html"))
    assert "[≠" in html or "Identical for all" in " ".join(m.value for m in measured.markdown)
    assert "They part at token" in " ".join(m.value for m in measured.markdown) or "Identical for all" in \
        " ".join(m.value for m in measured.markdown)


@pytest.mark.slow  # runs the page's whole measurement
def test_bridge_table_outputs_are_the_targets_again(measured):
    bridge = table(measured, "drafter")
    assert (bridge["output = the target's"] == "3 of 3 prompts identical").all()
    assert bridge["drafter"].str.contains("bundled").sum() == 1


@pytest.mark.slow  # runs the page's whole measurement
def test_second_press_is_served_from_the_cache(measured):
    measured.run()
    assert measured.button(key="sl_fidelity_run").label == "Measure again"
    assert len(table(measured, "method")) == 7


# --- Identical Outputs: the shipped rules ---------------------------------------------------------------

@pytest.mark.slow  # runs the page's whole measurement
def test_lab_shows_the_lossy_rules_failing_with_their_gains_beside_them():
    """Default settings = the documented run: exact and exact-match pass, each lossy rule fails with
    power near 1, and the exact-match rule accepts less than the exact rule."""
    at = page("chapters/identical_outputs.py", max_new=8)
    at.button(key="id_shipped").click().run(timeout=600)
    assert not at.exception, at.exception
    rows = table(at, "rule").set_index("rule")
    from specdec_core import lossy
    from specdec_core.exact_match import EXACT_MATCH
    from specdec_core.speculative import EXACT
    assert rows.loc[EXACT.name, "verdict"] == rows.loc[EXACT_MATCH.name, "verdict"] == "passes"
    power = [c for c in rows.columns if c.startswith("power at K")][0]
    for name in lossy.RULES:
        assert rows.loc[name, "verdict"] == "FAILS"
        assert float(rows.loc[name, power]) > 0.99
    accept = "acceptance rate (accepted ÷ drafted)"
    assert float(rows.loc[EXACT_MATCH.name, accept]) < float(rows.loc[EXACT.name, accept])
    assert float(rows.loc[lossy.RELAXED.name, accept]) > float(rows.loc[EXACT.name, accept])
    assert rows.loc[EXACT.name, "speedup vs plain sampling"].endswith("runs)")
    text = " ".join(m.value for m in at.markdown)
    assert "Σ p·q" in text and "Σ min(p, q)" in text
