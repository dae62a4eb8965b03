"""A Round, Token by Token, and its stepper."""
import pytest

from specdec_core import speculative_generate
from tests.app.helpers import page, unfolded_text
from ui.widgets import stepper, tables
from ui.widgets.stepper import Cursor


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
    judged = next(m.value for m in at.markdown if m.value.startswith("**3 · Judge draft 1.**"))
    assert ("Greedy" in judged) == (temp == 0.0)
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


def test_a_rejection_shows_both_caches_rolled_back_from_the_trace():
    at = page("chapters/round_by_round.py", gamma=4, max_new=24, temp=1.0, seed=5)
    for _ in range(10):  # run rounds until one ends with a corrective token
        at.button(key="rr_round").click().run()
        if any("Corrective token" in m.value for m in at.markdown):
            break
    assert not at.exception
    cache = next(d.value for d in at.dataframe if "cache" in d.value.columns)
    target = cache.iloc[0]
    fed = target["after the verify pass"] - target["before the round"]  # the last token and the drafts
    assert 2 <= fed and target["before the round"] < target["after the rollback"] < target["after the verify pass"]
    assert list(cache["cache"]) == ["target", "drafter"]
    assert any("1 − TV(p, q)" in c.value for c in at.caption)


def test_the_first_screen_names_p_and_q_and_shows_one_acceptance_figure():
    """The idea says whose p and q are; β, TV, α, measured α, tokens per pass and accepted ÷ drafted wait in a
    fold, so min(1, p/q) is the one acceptance figure before anything is opened, at every step of a round."""
    at = page("chapters/round_by_round.py", gamma=3, max_new=12, temp=1.0, seed=5)
    idea = next(m.value for m in at.markdown if m.value.startswith("**The idea:**"))
    assert "p the target's" in idea and "q the drafter's" in idea
    for _ in range(4):  # draft, verify, the first verdicts
        shown = unfolded_text(at)
        assert "min(1, p" in shown
        for folded in ("β", "TV(p, q)", "α", "accepted ÷ drafted", "tokens per target pass"):
            assert folded not in shown, folded
        at.button(key="rr_next").click().run()
    assert any("accepted ÷ drafted" in c.value and "not α" in c.value for c in at.caption)  # in the fold
