"""The Wall-Clock Race."""
import re

import pytest

from specdec_core import theory
from specdec_core.analysis import race
from tests.app.helpers import chart, metric, page


def test_race_greedy_lanes_produce_identical_texts():
    at = page("chapters/race.py", max_new=12, temp=0, gamma=3)
    at.button(key="race_run").click().run()
    assert not at.exception
    live = at.session_state["race_live"]["race"]
    assert live.identical and len(live.standard.tokens) == 12
    assert live.standard.target_passes == 12 and live.speculative.target_passes <= 12
    assert any("Identical texts" in m.value for m in at.success)
    assert re.fullmatch(r"\d+\.\d\d×", metric(at, "Measured speedup"))  # the median alone; the spread beside it
    # 5 races, two more at a time while they disagree (a busy machine), up to 15: the figure is the median of
    # however many ran, and the page says how many.
    n = live.speedups.n
    assert n in range(race.RACE_REPEATS, race.RACE_MAX_REPEATS + 1, 2) and n == len(live.repetitions)
    assert metric(at, "Measured speedup") == f"{live.speedup:.2f}×"
    spread = live.speedups.text()  # "1.62× (1.55–1.70, 5 runs)", in a caption or, when busy, a warning
    assert spread.endswith(f", {n} runs)") and any(spread in el.value for el in [*at.caption, *at.warning])
    elapsed = [m.value for m in at.metric if m.label == "Elapsed"]  # the lanes show their wall-clock times
    assert elapsed == [f"{live.standard.elapsed * 1e3:.0f} ms", f"{live.speculative.elapsed * 1e3:.0f} ms"]
    assert live.standard.result.total_s <= live.standard.elapsed  # nothing subtracted from the wall clock
    spec = chart(at, "race_chart")
    assert [t["name"] for t in spec["data"]] == ["standard", "speculative"]
    assert spec["data"][0]["y"][-1] == 12 == spec["data"][1]["y"][-1]
    assert all(b >= a for a, b in zip(spec["data"][1]["x"], spec["data"][1]["x"][1:]))  # time only moves forward


def test_race_simulation_uses_the_theory_module_and_the_alpha_dials_controls():
    """One set of α / γ / c controls: set on The α Dial, read by the race (kept across pages by the frame)."""
    at = page("chapters/alpha_dial.py", max_new=8)
    at.slider(key="ad_alpha").set_value(0.8).run()
    at.slider(key="ad_gamma").set_value(4).run()
    at.slider(key="ad_c").set_value(0.02).run()
    at.switch_page("chapters/race.py").run()
    assert not at.exception and not at.get("slider") or all(s.key != "race_alpha" for s in at.slider)
    assert metric(at, "Ideal hardware: expected speedup") == f"{theory.speedup(0.8, 4, 0.02, 1.0):.2f}×"
    lines = chart(at, "race_sim_chart")["data"]
    assert len(lines) == 3 and all(t["y"][-1] == 40 for t in lines)
    assert lines[0]["x"][-1] == 40  # standard: one token per target pass


def test_race_gamma_sweep_draws_measured_points_over_the_formula():
    at = page("chapters/race.py", max_new=8, temp=0)
    at.button(key="race_sweep").click().run()
    assert not at.exception
    sweep = at.session_state["race_sweep_result"]["sweep"]
    assert [r["gamma"] for r in sweep["rows"]] == list(range(1, 9))
    assert all(r["speedup"] > 0 and r["tokens_per_pass"] >= 1 for r in sweep["rows"])
    traces = chart(at, "race_sweep_chart")["data"]
    measured = next(t for t in traces if t["name"] == "measured here")
    assert measured["x"] == list(range(1, 9))
    ideal = next(t for t in traces if t["name"].startswith("formula, ideal"))
    alpha = sweep["alpha"]  # the formula uses the α the sweep measured, and one c for every γ
    c = theory.expected_tokens(alpha, 1) / ideal["y"][0] - 1
    assert ideal["y"] == pytest.approx([theory.speedup(alpha, g, c, 1.0) for g in range(1, 9)], rel=1e-9)


def test_the_recorded_llama_cpp_table_is_shown_as_recorded():
    """The one figure not measured live says so, with when and where; every recorded row is shown."""
    from ui.content import peer
    saved = peer.recorded()
    assert saved is not None, "assets/llama_cpp_peer.json: run scripts/bench/llama_cpp_peer.py --save assets/llama_cpp_peer.json"
    at = page("chapters/race.py", max_new=8, temp=0)
    assert not at.exception
    fold = next(e for e in at.expander if "llama.cpp" in e.label)
    text = " ".join(m.value for m in fold.markdown)
    assert "Recorded, not live" in text and saved["when"] in text and saved["cpu"] in text
    table = fold.dataframe[0].value
    assert list(table["engine, precision, decoding"]) == [r["contestant"] for r in saved["rows"]]
