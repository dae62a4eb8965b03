"""Home and the chapters Serial Tax, Why Verification Is Free, A Round Token by Token, The α Dial:
each renders, and its main control changes what it shows. Bundled pair, few tokens."""

import re

import pytest

from specdec_core import speculative_generate, theory
from specdec_core.pairs import load_pair
from specdec_core.analysis.round_stats import acceptance_by_position, measured_alpha, tokens_per_round
from specdec_core.trace import RoundTrace
from ui import settings, stepper, tables
from ui.stepper import Cursor
from tests.app.helpers import chart, metric, page


@pytest.fixture(scope="module")
def pair():
    return load_pair("shakespeare")


# --- Home -------------------------------------------------------------------------------------------

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


# --- The Serial Tax -----------------------------------------------------------------------------------

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


# --- Why Verification Is Free -------------------------------------------------------------------------

def test_verification_sliders_drive_the_formulas():
    at = page("chapters/verification.py", gamma=3, max_new=8)
    at.slider(key="vf_gamma").set_value(4).run()
    at.slider(key="vf_c").set_value(0.0).run()
    at.slider(key="vf_alpha").set_value(0.8).run()
    assert metric(at, "Expected tokens per target pass") == f"{theory.expected_tokens(0.8, 4):.2f}"
    assert metric(at, "Speedup, paper's model (v = 1)") == f"{theory.walltime_improvement(0.8, 4, 0.0):.2f}×"
    at.slider(key="vf_alpha").set_value(0.5).run()
    assert metric(at, "Speedup, paper's model (v = 1)") == f"{theory.walltime_improvement(0.5, 4, 0.0):.2f}×"
    v = float(metric(at, "v(γ) measured here"))  # shown to 2 decimals
    here = float(metric(at, "Speedup with this machine's v(γ)").rstrip("×"))
    expected = theory.expected_tokens(0.5, 4)
    assert v > 0 and abs(here - expected / v) <= 0.006 + expected * 0.005 / v**2


def test_verification_shows_gamma_plus_one_distributions_from_one_pass():
    at = page("chapters/verification.py", gamma=3, max_new=8)
    panels = [t for t in chart(at, "vf_dists")["data"] if t.get("type") == "bar"]
    assert len(panels) == 4  # γ + 1 distributions
    assert all(0 <= x <= 1 for t in panels for x in t["x"])
    assert any("one" in m.value.lower() and "pass" in m.value for m in at.markdown)
    assert any(r"\max(0,\ p - q)" in l.value for l in at.latex)


# --- A Round, Token by Token -------------------------------------------------------------------------

def _round_status(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**Round "))


@pytest.mark.parametrize("temp", [1.0, 0.0])
def test_round_by_round_steps_advance_through_the_core_trace(pair, temp):
    at = page("chapters/round_by_round.py", gamma=3, max_new=12, temp=temp, seed=5)
    s = at.session_state["settings"]
    expected = speculative_generate(pair.target, pair.draft, pair.tokenizer.encode(s.prompt), gamma=3,
                                    max_new_tokens=12, sampling=s.sampling, seed=5)
    n = len(expected.rounds)
    assert _round_status(at).startswith(f"**Round 1 of {n}** · step 1 of {stepper.steps_in(expected.rounds[0])}")
    at.button(key="rr_next").click().run()
    assert at.session_state["rr_cursor"] == Cursor(0, 1)
    assert "Verify" in " ".join(m.value for m in at.markdown)
    at.button(key="rr_next").click().run()
    judged = " ".join(m.value for m in at.markdown)
    assert ("Greedy" in judged) == (temp == 0.0) and "Judge draft 1" in judged
    at.button(key="rr_round").click().run()  # finish round 1
    assert at.session_state["rr_cursor"] == Cursor(0, stepper.last_step(expected.rounds[0]))
    assert at.get_by_key("rr_csv") is not None
    at.button(key="rr_round").click().run()  # run round 2 to its end
    assert _round_status(at).startswith(f"**Round 2 of {n}**")
    first_kind = expected.rounds[0].next_kind
    assert any(f"tok-{first_kind}" in h.value for h in at.html)
    at.button(key="rr_reset").click().run()
    assert at.session_state["rr_cursor"] == Cursor()


def test_round_by_round_tables_show_dashes_not_none():
    """Before the target pass, p(x), min(1, p/q), u and the verdicts are not known yet: dashes."""
    at = page("chapters/round_by_round.py", gamma=3, max_new=8, temp=1.0, seed=5)
    table = next(d.value for d in at.dataframe if "u" in d.value.columns)  # the drafts of this round
    assert (table["p(x)"] == tables.DASH).all() and (table["u"] == tables.DASH).all()
    for frame in [d.value for d in at.dataframe]:
        assert not frame.isna().any().any()
        assert not frame.astype(str).isin(["None", "nan", "NaN"]).any().any()


def test_readable_tables_fill_every_gap():
    frame = tables.readable([{"a": 1, "b": None, "c": 0.12345}, {"a": 2, "b": "x", "c": float("nan")}], {"c": ".3f"})
    assert frame.to_dict("list") == {"a": [1, 2], "b": [tables.DASH, "x"], "c": ["0.123", tables.DASH]}


def test_stepper_walks_every_step_once(pair):
    result = speculative_generate(pair.target, pair.draft, pair.tokenizer.encode("ROMEO:"), gamma=4,
                                  max_new_tokens=20, seed=1)
    rounds, cur, seen = result.rounds, Cursor(), 1
    while not stepper.finished(rounds, cur):
        cur = stepper.next_step(rounds, cur)
        seen += 1
    assert seen == sum(stepper.steps_in(r) for r in rounds)
    assert stepper.rounds_completed(rounds, cur) == len(rounds)
    assert stepper.next_step(rounds, cur) == cur and stepper.run_round(rounds, cur) == cur
    assert stepper.run_round(rounds, Cursor()) == Cursor(0, stepper.last_step(rounds[0]))


# --- The α Dial ---------------------------------------------------------------------------------------

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


def _round(accept_prob, n_accepted, kind):
    n = len(accept_prob)
    return RoundTrace(index=0, position=0, draft_tokens=list(range(n)), n_accepted=n_accepted, next_token=0,
                      next_kind=kind, emitted=[0] * (n_accepted + 1), q_draft=[1.0] * n, p_draft=accept_prob,
                      accept_prob=accept_prob, uniforms=None, draft_pass_s=[0.0] * n, target_pass_s=0.0,
                      draft_passes=n)


def test_round_stats_by_position():
    rounds = [_round([0.9, 0.2, 0.5], 1, "corrective"),  # judged: 0.9 (accepted), 0.2 (rejected)
              _round([0.6, 0.8, 0.7], 3, "bonus"),  # all three judged and accepted
              _round([0.1, 0.3, 0.3], 0, "corrective")]  # only the first judged
    assert measured_alpha(rounds) == pytest.approx((0.9 + 0.2 + 0.6 + 0.8 + 0.7 + 0.1) / 6)
    assert tokens_per_round(rounds) == pytest.approx((2 + 4 + 1) / 3)
    frame = acceptance_by_position(rounds, 3)
    assert list(frame["reached"]) == [3, 2, 1] and list(frame["accepted"]) == [2, 1, 1]
    assert list(frame["rate"]) == pytest.approx([2 / 3, 0.5, 1.0])
