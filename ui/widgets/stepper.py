"""Where a step-through of speculative rounds stands: (round, step), and how the buttons move it.

A round of the core's trace is shown in steps: 0 the drafts, 1 the one target pass, then one step per
draft the target judged (accepted ones and the first rejected one), then the corrective or bonus
token. Pure functions, so the page stays thin and tests can check the walk.
"""
from dataclasses import dataclass

from specdec_core.analysis.round_stats import checked
from specdec_core.trace import RoundTrace


@dataclass(frozen=True)
class Cursor:
    round: int = 0
    step: int = 0


def steps_in(r: RoundTrace) -> int:
    """Steps of one round: draft, verify, one per judged draft, emit."""
    return 2 + checked(r) + 1


def last_step(r: RoundTrace) -> int:
    return steps_in(r) - 1


def phase(r: RoundTrace, step: int) -> tuple[str, int]:
    """("draft" | "verify" | "check" | "emit", index of the draft being judged for "check", else -1)."""
    if step == 0:
        return "draft", -1
    if step == 1:
        return "verify", -1
    if step < last_step(r):
        return "check", step - 2
    return "emit", -1


def revealed(r: RoundTrace, step: int) -> int:
    """How many drafts' verdicts are shown at this step."""
    name, i = phase(r, step)
    return {"draft": 0, "verify": 0, "check": i + 1, "emit": checked(r)}[name]


def next_step(rounds: list[RoundTrace], cur: Cursor) -> Cursor:
    if cur.step < last_step(rounds[cur.round]):
        return Cursor(cur.round, cur.step + 1)
    if cur.round + 1 < len(rounds):
        return Cursor(cur.round + 1, 0)
    return cur


def run_round(rounds: list[RoundTrace], cur: Cursor) -> Cursor:
    """Finish the current round; if it is already finished, run the next one to its end."""
    if cur.step < last_step(rounds[cur.round]):
        return Cursor(cur.round, last_step(rounds[cur.round]))
    if cur.round + 1 < len(rounds):
        return Cursor(cur.round + 1, last_step(rounds[cur.round + 1]))
    return cur


def finished(rounds: list[RoundTrace], cur: Cursor) -> bool:
    return cur.round == len(rounds) - 1 and cur.step == last_step(rounds[-1])


def rounds_completed(rounds: list[RoundTrace], cur: Cursor) -> int:
    return cur.round + (1 if cur.step == last_step(rounds[cur.round]) else 0)
