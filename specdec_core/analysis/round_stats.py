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
    expectation is beta = sum_x min(p, q) at that position (Corollary 3.6), and beta's expectation over
    the text is the paper's alpha; it is a lower-variance estimate than the 0/1 accept count. In greedy
    mode it is the agreement rate."""
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


# --- the serving stacks' acceptance metrics (vLLM's names) ------------------------------------------

def mean_acceptance_length(rounds: list[RoundTrace]) -> float:
    """Mean tokens a target pass yields: accepted drafts + the corrective or bonus token, per round
    (vLLM's "mean acceptance length"; before any EOS truncation, unlike `tokens_per_round`)."""
    return sum(r.n_accepted + 1 for r in rounds) / len(rounds) if rounds else math.nan


def per_position_acceptance_rate(rounds: list[RoundTrace], max_position: int | None = None) -> list[float]:
    """For draft position i = 1..max_position: rounds that accepted position i / rounds that drafted
    it (vLLM's "per-position acceptance rate", unconditional: a draft after a rejection counts as not
    accepted; the conditional rate accepted / reached is `acceptance_by_position`'s "rate")."""
    if max_position is None:
        max_position = max((len(r.draft_tokens) for r in rounds), default=0)
    rates = []
    for i in range(1, max_position + 1):
        drafted = [r for r in rounds if len(r.draft_tokens) >= i]
        rates.append(sum(r.n_accepted >= i for r in drafted) / len(drafted) if drafted else math.nan)
    return rates


def acceptance_length_histogram(rounds: list[RoundTrace]) -> dict[int, int]:
    """How many rounds had each acceptance length (accepted drafts + 1), from 1 to the longest seen."""
    longest = max((r.n_accepted + 1 for r in rounds), default=0)
    counts = {n: 0 for n in range(1, longest + 1)}
    for r in rounds:
        counts[r.n_accepted + 1] += 1
    return counts


def gamma_stats(rounds: list[RoundTrace]) -> dict:
    """The draft lengths a policy chose: mean gamma and mean drafts per round, and why rounds stopped."""
    stops: dict[str, int] = {}
    for r in rounds:
        stops[r.draft_stop] = stops.get(r.draft_stop, 0) + 1
    gammas = [r.gamma for r in rounds if r.gamma is not None]
    return {"mean_gamma": sum(gammas) / len(gammas) if gammas else math.nan,
            "mean_drafted": sum(len(r.draft_tokens) for r in rounds) / len(rounds) if rounds else math.nan,
            "draft_stops": stops}


def acceptance_metrics(rounds: list[RoundTrace]) -> dict:
    """The metrics above in one JSON-ready dict (the CLI's --json, the benchmark, the pages)."""
    return {"mean_acceptance_length": mean_acceptance_length(rounds),
            "per_position_acceptance_rate": per_position_acceptance_rate(rounds),
            "acceptance_length_histogram": {str(k): v for k, v in acceptance_length_histogram(rounds).items()},
            **gamma_stats(rounds)}


# --- what hindsight would have chosen ---------------------------------------------------------------

def modelled_speedup(rounds: list[RoundTrace], costs, gammas: list[int] | None = None) -> float:
    """Tokens per unit of cost over a run's rounds, in single target passes: sum(n_accepted + 1) /
    sum(draft passes * c + v(drafts)). A round's draft passes are the ones it made (a policy that
    declined a draft after seeing its distribution paid that pass too), unless `gammas` replaces
    each round's drafts (and passes) by a gamma of its own. `costs` is a policies.Costs."""
    if gammas is None:
        cost = sum(r.draft_passes * costs.c + costs.v(len(r.draft_tokens)) for r in rounds)
    else:
        cost = sum(costs.round_cost(g) for g in gammas)
    return sum(r.n_accepted + 1 for r in rounds) / cost if cost else math.nan


def hindsight_gammas(rounds: list[RoundTrace], costs) -> list[int]:
    """The best gamma for each round in hindsight: the cheapest (by `costs`) of the lengths from the
    accepted drafts up to the drafts made. Every one of them makes the same tokens (drafting just the
    accepted ones earns the bonus token instead of the corrective one); with a cost rising in gamma
    it is exactly the accepted count, and drafts past a rejection are wasted work."""
    return [min(range(r.n_accepted, len(r.draft_tokens) + 1), key=costs.round_cost) for r in rounds]


def oracle_speedup(rounds: list[RoundTrace], costs) -> float:
    """The oracle bound: `modelled_speedup` of the same rounds had each drafted its hindsight gamma.
    Run it on a generation with a long gamma, so that long accepted runs are visible to hindsight."""
    return modelled_speedup(rounds, costs, hindsight_gammas(rounds, costs))


def calibration(rounds: list[RoundTrace], signal: str = "margin", bins: int = 10,
                spacing: str = "quantile") -> pd.DataFrame:
    """The target's acceptance against the drafter's raw confidence, binned: one row per bin of the
    signal ("top" probability or top-1 minus top-2 "margin") with the judged drafts that fell in it
    and their mean min(1, p/q) (greedy: the share the target agreed with). Bins hold equal numbers of
    drafts (`spacing="quantile"`: a drafter whose confidence is mostly low still gets a readable
    chart) or are equal slices of [0, 1] ("equal"). A confidence stop works when acceptance rises
    steeply with the signal. Needs traced rounds of a model drafter (RoundTrace.draft_top / draft_margin)."""
    if signal not in ("top", "margin"):
        raise ValueError(f"signal must be 'top' or 'margin', got {signal!r}")
    if isinstance(bins, bool) or not isinstance(bins, int) or not 1 <= bins <= 100:
        raise ValueError(f"bins must be an integer in [1, 100], got {bins!r}")
    if spacing not in ("quantile", "equal"):
        raise ValueError(f"spacing must be 'quantile' or 'equal', got {spacing!r}")
    pairs = sorted((conf, accept) for r in rounds if (r.draft_top if signal == "top" else r.draft_margin) is not None
                   for conf, accept in zip((r.draft_top if signal == "top" else r.draft_margin)[:checked(r)],
                                           r.accept_prob[:checked(r)]))
    if spacing == "equal":
        groups = [[(c, a) for c, a in pairs if min(int(c * bins), bins - 1) == b] for b in range(bins)]
        edges = [(b / bins, (b + 1) / bins) for b in range(bins)]
    else:  # consecutive runs of the sorted drafts, as equal in size as the count allows
        cuts = [round(i * len(pairs) / bins) for i in range(bins + 1)]
        groups = [pairs[lo:hi] for lo, hi in zip(cuts, cuts[1:]) if hi > lo]
        edges = [(g[0][0], g[-1][0]) for g in groups]
    return pd.DataFrame([{"bin_low": lo, "bin_high": hi, "drafts": len(g),
                          "acceptance": sum(a for _, a in g) / len(g) if g else math.nan}
                         for (lo, hi), g in zip(edges, groups)],
                        columns=["bin_low", "bin_high", "drafts", "acceptance"])
