"""Impact & Lineage."""
import re

from specdec_core import NgramDrafter, UnigramDrafter
from tests.app.helpers import page


def test_impact_shootout_measures_every_drafter(pair):
    at = page("chapters/impact.py", max_new=10, temp=0, gamma=3)
    at.radio(key="im_prompt").set_value("repeating").run()
    at.button(key="im_run").click().run()
    assert not at.exception
    rows = at.session_state["im_result"]["out"]["rows"]
    assert [r["drafter"] for r in rows] == [f"model: {label}" for label in pair.drafts] + [
        "reads the target: Medusa heads", "reads the target: EAGLE drafter", "reads the target: EAGLE-3 drafter",
        NgramDrafter().name, UnigramDrafter().name]
    assert all(r["speedup"] > 0 and r["tokens_per_pass"] >= 1 for r in rows)
    assert next(r for r in rows if r["drafter"] == NgramDrafter().name)["draft_passes_per_token"] == 0
    assert all(r["measured"].n == 3 and r["measured"].low <= r["speedup"] <= r["measured"].high for r in rows)
    assert next(r for r in rows if r["drafter"] == NgramDrafter().name)["c"] == 0
    model_drafters = ("model: ", "reads the target: ")  # c from the runs' own draft passes
    assert all(r["c"] > 0 for r in rows if r["drafter"].startswith(model_drafters))
    assert any(re.search(r"× \(\d+\.\d\d–\d+\.\d\d, 3 runs\)", el.value) for el in [*at.caption, *at.warning])
    assert len(at.dataframe[-1].value) == len(rows)
    assert any("Medusa" in m.value for m in at.markdown) and any("first token" in m.value.lower() for m in at.markdown)
