"""Statistics over the rounds of speculative generations: measured α, and acceptance by draft position.

The paper's model (Leviathan et al. 2022, section 3.1) treats every draft as accepted independently
with the same probability α. Traces let us check that: position i of a round is *reached* when the
i-1 drafts before it were all accepted; the i.i.d. model says the acceptance rate is α at every i.
"""
import math

import pandas as pd

from ..trace import RoundTrace


def checked(r: RoundTrace) -> int:
    """How many drafts of a round the target actually judged: the accepted ones plus the first rejected."""
    return r.n_accepted + (1 if r.rejected_at is not None else 0)


def measured_alpha(rounds: list[RoundTrace]) -> float:
    """Mean of min(1, p(x)/q(x)) over every judged draft (NaN if none). For x drawn from q its
    expectation is sum_x min(p, q), the paper's alpha at that position (Corollary 3.6); it is a
    lower-variance estimate than the 0/1 accept count. In greedy mode it is the agreement rate."""
    values = [a for r in rounds for a in r.accept_prob[:checked(r)]]
    return sum(values) / len(values) if values else math.nan


def acceptance_by_position(rounds: list[RoundTrace], gamma: int) -> pd.DataFrame:
    """One row per draft position i = 1..gamma: rounds that reached it, rounds that accepted it, the
    rate accepted/reached, and the mean min(1, p/q) there."""
    rows = []
    for i in range(1, gamma + 1):
        reached = [r for r in rounds if len(r.draft_tokens) >= i and r.n_accepted >= i - 1]
        accepted = sum(1 for r in reached if r.n_accepted >= i)
        probs = [r.accept_prob[i - 1] for r in reached]
        rows.append({"position": i, "reached": len(reached), "accepted": accepted,
                     "rate": accepted / len(reached) if reached else math.nan,
                     "mean_accept_prob": sum(probs) / len(probs) if probs else math.nan})
    return pd.DataFrame(rows, columns=["position", "reached", "accepted", "rate", "mean_accept_prob"])


def tokens_per_round(rounds: list[RoundTrace]) -> float:
    """Mean tokens a round added to the output (= tokens per target pass)."""
    return sum(len(r.emitted) for r in rounds) / len(rounds) if rounds else math.nan
