"""α measured on the live pair, drafter by drafter: enough speculative rounds strung together from
generations (a generation may end early at EOS: the next one starts with the next seed) for each
drafter, their measured α, tokens per pass and acceptance by draft position; then the wall clock of
each drafter against plain decoding by the project's one method (`race.drafter_shootout`), with c
from those runs' own draft passes."""
from contextlib import nullcontext

from ..sampler import speculative_generate
from ..sampling import SamplingConfig
from ..trace import RoundTrace
from .race import drafter_shootout
from .round_stats import acceptance_by_position, measured_alpha, tokens_per_round
from .stats import Pacing, Progress, pacing_of

MAX_GENERATIONS = 50  # generations per drafter at most, however early they end


def rounds_until(target, drafter, prompt_ids: list[int], gamma: int, n_rounds: int, max_new_tokens: int,
                 sampling: SamplingConfig, seed: int, hold=nullcontext, on_round=None, *,
                 pacing: Pacing | None = None) -> list[RoundTrace]:
    """Up to `n_rounds` traced rounds of `drafter`, from generations of `max_new_tokens`
    seeded seed, seed + 1, …; each generation inside its own pacing slot (or `with hold():`)."""
    pace = pacing_of(hold, None, pacing)
    rounds: list[RoundTrace] = []
    for _ in range(MAX_GENERATIONS):
        if len(rounds) >= n_rounds:
            break
        with pace.slot():
            res = speculative_generate(target, drafter, prompt_ids, gamma=gamma, max_new_tokens=max_new_tokens,
                                       sampling=sampling, seed=seed, trace=False,
                                       max_rounds=n_rounds - len(rounds), on_round=on_round)
        rounds += res.rounds
        seed = (seed + 1) % 2**31
    return rounds


def measure_drafters(target, drafters: dict, prompt_ids: list[int], gamma: int, n_rounds: int, max_new_tokens: int,
                     sampling: SamplingConfig, seed: int, timed_tokens: int, timing_repeats: int,
                     hold=nullcontext, progress: Progress | None = None, *,
                     pacing: Pacing | None = None) -> dict[str, dict]:
    """Per drafter label: measured α, tokens per pass, rounds and acceptance by position over `n_rounds`
    rounds (`rounds_until`), then its wall-clock speedup over plain decoding ("speedup" median and
    "measured": the Measured) and c, from `timing_repeats` interleaved repetitions of `timed_tokens`."""
    pace = pacing_of(hold, progress, pacing)
    total, done = n_rounds * len(drafters), 0
    results = {}
    for label, drafter in drafters.items():
        def on_round(_round, label=label) -> None:
            nonlocal done
            done += 1
            pace.report(done / total, f"Running rounds: {label}, {done} of {total}")

        rounds = rounds_until(target, drafter, prompt_ids, gamma, n_rounds, max_new_tokens, sampling, seed,
                              on_round=on_round, pacing=Pacing(pace.slot))
        results[label] = {"alpha": measured_alpha(rounds), "tokens_per_pass": tokens_per_round(rounds),
                          "rounds": len(rounds), "by_position": acceptance_by_position(rounds, gamma)}
    timing = drafter_shootout(target, drafters, prompt_ids, gamma, timed_tokens, sampling, seed,
                              repeats=timing_repeats, pacing=pace.part(0.0, 1.0, "Timing against plain decoding: "))
    for row in timing["rows"]:
        results[row["drafter"]].update(speedup=row["speedup"], measured=row["measured"], c=row["c"])
    return results
