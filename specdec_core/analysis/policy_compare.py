"""Fixed against adaptive draft length, measured: several policies on the same prompts, timed in
interleaved repetitions against plain decoding, with the serving stacks' acceptance metrics.

One repetition runs every contestant on every prompt; the order of the contestants reverses from
one repetition to the next (A B C, C B A, ...), so a slow moment of the shared machine falls on all
of them. A contestant's speedup in a repetition is plain decoding's time over its own, both summed
over the prompts (decoding phase: each run's time less the target's prefill of the prompt); the
figure is the median over repetitions, with the lowest and highest beside it.
"""
import statistics
from dataclasses import dataclass, field
from typing import Callable

from ..policies import Costs, as_policy
from ..sampler import autoregressive_generate, speculative_generate
from ..sampling import SamplingConfig
from ..trace import RoundTrace
from .round_stats import acceptance_metrics, measured_alpha, modelled_speedup, oracle_speedup

PLAIN = "plain decoding"
MAX_REPEATS = 10
MAX_PROMPTS = 16


@dataclass
class Contestant:
    label: str
    seconds: list[float] = field(default_factory=list)  # per repetition: decoding seconds over all prompts
    tokens: int = 0  # per repetition
    target_passes: int = 0  # per repetition
    rounds: list[RoundTrace] = field(default_factory=list)  # the first repetition's rounds, all prompts

    def speedups(self, plain: "Contestant") -> list[float]:
        return [b / s for b, s in zip(plain.seconds, self.seconds) if s > 0]


def _speculative(target, drafter, prompt, policy, max_new_tokens, sampling, seed, trace):
    return speculative_generate(target, drafter, prompt, gamma=policy, max_new_tokens=max_new_tokens,
                                sampling=sampling, seed=seed, eos_token_id=None, trace=trace)


def compare_policies(target, drafter, prompts: list[list[int]], policies: dict, max_new_tokens: int,
                     sampling: SamplingConfig = SamplingConfig(), seed: int = 0, repeats: int = 3,
                     on_progress: Callable[[int, int], None] | None = None) -> dict[str, Contestant]:
    """Run plain decoding and every policy (label -> policy or int gamma) on every prompt, `repeats`
    times interleaved; prompt i uses seed + i for every contestant. Returns label -> Contestant,
    plain decoding under `PLAIN`. `on_progress(done, total)` is called after each run."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= MAX_REPEATS:
        raise ValueError(f"repeats must be an integer in [1, {MAX_REPEATS}], got {repeats!r}")
    if not prompts or len(prompts) > MAX_PROMPTS:
        raise ValueError(f"prompts must hold 1 to {MAX_PROMPTS} prompts, got {len(prompts)}")
    resolved = {label: as_policy(p) for label, p in policies.items()}
    if PLAIN in resolved:
        raise ValueError(f"a policy may not be labelled {PLAIN!r}")
    out = {label: Contestant(label) for label in [PLAIN, *resolved]}
    order, total, done = list(out), repeats * len(out) * len(prompts), 0
    for rep in range(repeats):
        for label in (order if rep % 2 == 0 else order[::-1]):
            c, seconds, tokens, passes = out[label], 0.0, 0, 0
            for i, prompt in enumerate(prompts):
                if label == PLAIN:
                    res = autoregressive_generate(target, prompt, max_new_tokens, sampling, seed=seed + i,
                                                  eos_token_id=None)
                else:
                    res = _speculative(target, drafter, prompt, resolved[label], max_new_tokens, sampling,
                                       seed + i, trace=False)
                    if rep == 0:
                        c.rounds += res.rounds
                seconds += res.total_s - res.prefill_s
                tokens += len(res.tokens)
                passes += res.target_passes
                done += 1
                if on_progress is not None:
                    on_progress(done, total)
            c.seconds.append(seconds)
            c.tokens, c.target_passes = tokens, passes
    return out


def summary(results: dict[str, Contestant], costs: Costs | None = None) -> list[dict]:
    """One JSON-ready row per contestant: median speedup over plain decoding and its range, tokens per
    target pass, the acceptance metrics, and the cost model's speedup of the same rounds (and of their
    hindsight gammas: the oracle bound) when `costs` is given."""
    plain = results[PLAIN]
    rows = []
    for label, c in results.items():
        ups = c.speedups(plain) if label != PLAIN else [1.0] * len(c.seconds)
        row = {"policy": label, "speedup": statistics.median(ups), "speedup_low": min(ups), "speedup_high": max(ups),
               "ms_per_token": 1e3 * statistics.median(c.seconds) / max(1, c.tokens),
               "tokens_per_target_pass": c.tokens / c.target_passes if c.target_passes else float("nan"),
               "repeats": len(c.seconds)}
        if label != PLAIN:
            row.update(alpha=measured_alpha(c.rounds), **acceptance_metrics(c.rounds))
            if costs is not None:
                row.update(modelled_speedup=modelled_speedup(c.rounds, costs),
                           oracle_speedup=oracle_speedup(c.rounds, costs))
        rows.append(row)
    return rows


def calibration_rounds(target, drafter, prompts: list[list[int]], gamma: int, max_new_tokens: int,
                       sampling: SamplingConfig = SamplingConfig(), seed: int = 0) -> list[RoundTrace]:
    """Traced rounds (with the drafter's raw confidence per draft) at a constant, long gamma, for
    `round_stats.calibration`: not timed."""
    rounds = []
    for i, prompt in enumerate(prompts):
        rounds += _speculative(target, drafter, prompt, gamma, max_new_tokens, sampling, seed + i, trace=True).rounds
    return rounds
