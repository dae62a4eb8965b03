"""α measured on the live pair, drafter by drafter: enough speculative rounds strung together from
generations (a generation may end early at EOS: the next one starts with the next seed) for each
drafter, their measured α, tokens per pass and acceptance by draft position; then the wall clock of
each drafter against plain decoding by the project's one method (`race.drafter_shootout`), with c
from those runs' own draft passes."""
from dataclasses import replace

from ..request import GenerationRequest
from ..speculative import speculative_generate
from ..trace import RoundTrace
from .race import drafter_shootout
from .round_stats import acceptance_by_position, measured_alpha, tokens_per_round
from .stats import Pacing

MAX_GENERATIONS = 50  # generations per drafter at most, however early they end


def rounds_until(target, drafter, request: GenerationRequest, gamma: int, n_rounds: int, on_round=None, *,
                 pacing: Pacing = Pacing()) -> list[RoundTrace]:
    """Up to `n_rounds` traced rounds of `drafter`, from generations of the request seeded with its seed,
    seed + 1, …; each generation inside its own pacing slot."""
    rounds: list[RoundTrace] = []
    seed = request.seed or 0
    for _ in range(MAX_GENERATIONS):
        if len(rounds) >= n_rounds:
            break
        with pacing.slot():
            res = speculative_generate(target, drafter, replace(request, seed=seed), gamma=gamma, trace=False,
                                       max_rounds=n_rounds - len(rounds), on_round=on_round)
        rounds += res.rounds
        seed = (seed + 1) % 2**31
    return rounds


def measure_drafters(target, drafters: dict, request: GenerationRequest, gamma: int, n_rounds: int,
                     timed_tokens: int, timing_repeats: int, *, pacing: Pacing = Pacing()) -> dict[str, dict]:
    """Per drafter label: measured α, tokens per pass, rounds and acceptance by position over `n_rounds`
    rounds (`rounds_until`, generations of the request), then its wall-clock speedup over plain decoding
    ("speedup" median and "measured": the Measured) and c, from `timing_repeats` interleaved repetitions
    of the request cut to `timed_tokens`."""
    pace = pacing
    total, done = n_rounds * len(drafters), 0
    results = {}
    for label, drafter in drafters.items():
        def on_round(_round, label=label) -> None:
            nonlocal done
            done += 1
            pace.report(done / total, f"Running rounds: {label}, {done} of {total}")

        rounds = rounds_until(target, drafter, request, gamma, n_rounds, on_round=on_round, pacing=Pacing(pace.slot))
        results[label] = {"alpha": measured_alpha(rounds), "tokens_per_pass": tokens_per_round(rounds),
                          "rounds": len(rounds), "by_position": acceptance_by_position(rounds, gamma)}
    timing = drafter_shootout(target, drafters, replace(request, max_new_tokens=timed_tokens), gamma,
                              repeats=timing_repeats, pacing=pace.part(0.0, 1.0, "Timing against plain decoding: "))
    for row in timing["rows"]:
        results[row["drafter"]].update(speedup=row["speedup"], measured=row["measured"], c=row["c"])
    return results
