"""Races between plain and speculative decoding: simulated from the paper's model, and live on a pair.

Simulated (Leviathan et al. 2022, section 3): time is counted in target passes. Plain decoding makes one
token per pass. A speculative round costs gamma * c (drafts) + v (one target pass over gamma + 1
positions; v = 1 on the paper's ideal hardware) and emits its accepted prefix plus one token, each draft
accepted independently with probability alpha (`theory.simulate_tokens_per_round`).

Live: both decoders run on the same target, prompt, sampling and seed, one after the other, with the
time each token appeared. Time spent in the caller's callbacks (drawing the lanes) is measured and
subtracted, so drawing never slows a lane down. Speedup = plain elapsed / speculative elapsed, prompt
processing included in both.
"""
import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .. import theory
from ..drafters import as_drafter
from .round_stats import measured_alpha
from ..sampler import autoregressive_generate, speculative_generate
from ..sampling import SamplingConfig
from ..trace import GenerationResult, RoundTrace

LANES = ("standard", "speculative")


# --- simulated ------------------------------------------------------------------------------------

@dataclass
class SimulatedLane:
    name: str
    times: list[float]  # when each token appeared, in target-pass units
    passes: int  # target passes
    round_cost: float  # cost of one pass (plain) or one round (speculative), in target passes

    @property
    def finish(self) -> float:
        return self.times[-1] if self.times else 0.0


def simulated_plain(n_tokens: int) -> SimulatedLane:
    return SimulatedLane("standard", [float(i + 1) for i in range(n_tokens)], n_tokens, 1.0)


def simulated_speculative(alpha: float, gamma: int, c: float, n_tokens: int = 40, v: float = 1.0,
                          seed: int = 0, name: str = "speculative") -> SimulatedLane:
    """One random race under the paper's model: rounds of cost gamma * c + v, each emitting
    1 + (accepted prefix) tokens. The tokens of a round appear when its target pass ends."""
    if n_tokens < 1:
        raise ValueError(f"n_tokens must be >= 1, got {n_tokens}")
    if c < 0 or v <= 0:
        raise ValueError(f"c must be >= 0 and v > 0, got c = {c}, v = {v}")
    per_round = theory.simulate_tokens_per_round(alpha, gamma, n_tokens, seed)  # never more rounds than tokens
    cost = gamma * c + v
    times, t, passes = [], 0.0, 0
    for emitted in per_round:
        t += cost
        passes += 1
        times += [t] * int(min(emitted, n_tokens - len(times)))
        if len(times) >= n_tokens:
            break
    return SimulatedLane(name, times, passes, cost)


def expected_finish(alpha: float, gamma: int, c: float, n_tokens: int, v: float = 1.0) -> float:
    """Expected finishing time in target passes: n_tokens / speedup (the theory module's formula)."""
    return n_tokens / theory.speedup(alpha, gamma, c, v)


# --- live -----------------------------------------------------------------------------------------

@dataclass
class LiveLane:
    name: str
    tokens: list[int] = field(default_factory=list)
    times: list[float] = field(default_factory=list)  # seconds from the lane's start to each token
    passes: list[int] = field(default_factory=list)  # target passes made when each token appeared
    kinds: list[str] = field(default_factory=list)  # "target" | "accepted" | "corrective" | "bonus"
    elapsed: float = 0.0  # seconds, callbacks excluded
    result: GenerationResult | None = None

    @property
    def target_passes(self) -> int:
        return self.result.target_passes if self.result else (self.passes[-1] if self.passes else 0)

    @property
    def tokens_per_s(self) -> float:
        return len(self.tokens) / self.elapsed if self.elapsed > 0 else math.nan


OnEvent = Callable[[LiveLane], None]  # called with the lane after each pass that produced tokens


class _Clock:
    """Seconds since start, minus the time spent in callbacks."""

    def __init__(self):
        self.start = time.perf_counter()
        self.excluded = 0.0

    def now(self) -> float:
        return time.perf_counter() - self.start - self.excluded

    def call(self, fn, *args) -> None:
        t = time.perf_counter()
        try:
            fn(*args)
        finally:
            self.excluded += time.perf_counter() - t


def run_plain_lane(target, prompt_ids, max_new_tokens: int, sampling: SamplingConfig, seed: int,
                   on_event: OnEvent | None = None) -> LiveLane:
    """Plain decoding with a timestamp per token; `on_event(lane)` after each token."""
    lane = LiveLane("standard")
    clock = _Clock()

    def on_token(token: int, _seconds: float) -> None:
        lane.tokens.append(token)
        lane.times.append(clock.now())
        lane.passes.append(len(lane.tokens))
        lane.kinds.append("target")
        if on_event is not None:
            clock.call(on_event, lane)

    lane.result = autoregressive_generate(target, prompt_ids, max_new_tokens, sampling, seed=seed,
                                          eos_token_id=None, on_token=on_token)
    lane.elapsed = clock.now()
    return lane


def run_speculative_lane(target, drafter, prompt_ids, gamma: int, max_new_tokens: int, sampling: SamplingConfig,
                         seed: int, on_event: OnEvent | None = None) -> LiveLane:
    """Speculative decoding with a timestamp per round (its tokens appear together)."""
    lane = LiveLane("speculative")
    clock = _Clock()

    def on_round(r: RoundTrace) -> None:
        t = clock.now()
        lane.tokens += r.emitted
        lane.times += [t] * len(r.emitted)
        lane.passes += [r.index + 1] * len(r.emitted)
        lane.kinds += (["accepted"] * r.n_accepted + [r.next_kind])[:len(r.emitted)]
        if on_event is not None:
            clock.call(on_event, lane)

    lane.result = speculative_generate(target, drafter, prompt_ids, gamma=gamma, max_new_tokens=max_new_tokens,
                                       sampling=sampling, seed=seed, eos_token_id=None, trace=False,
                                       on_round=on_round)
    lane.elapsed = clock.now()
    return lane


def warm_up(target, drafter, prompt_ids, gamma: int) -> None:
    """A few untimed tokens of each decoder, so one-off costs (allocations, lazy init) hit no lane."""
    n = 3
    autoregressive_generate(target, prompt_ids, n, SamplingConfig(0.0), seed=0, eos_token_id=None)
    speculative_generate(target, drafter, prompt_ids, gamma=gamma, max_new_tokens=n, sampling=SamplingConfig(0.0),
                         seed=0, eos_token_id=None, trace=False)


@dataclass
class LiveRace:
    standard: LiveLane
    speculative: LiveLane

    @property
    def speedup(self) -> float:
        return self.standard.elapsed / self.speculative.elapsed if self.speculative.elapsed > 0 else math.nan

    @property
    def identical(self) -> bool:
        return self.standard.tokens == self.speculative.tokens


def live_race(target, drafter, prompt_ids, gamma: int, max_new_tokens: int, sampling: SamplingConfig, seed: int,
              on_event: OnEvent | None = None, warm: bool = True) -> LiveRace:
    """Plain, then speculative decoding of the same request (EOS does not stop either lane, so both
    produce max_new_tokens). In greedy mode the two token lists are identical."""
    drafter = as_drafter(drafter)
    if warm:
        warm_up(target, drafter, prompt_ids, gamma)
    standard = run_plain_lane(target, prompt_ids, max_new_tokens, sampling, seed, on_event)
    speculative = run_speculative_lane(target, drafter, prompt_ids, gamma, max_new_tokens, sampling, seed, on_event)
    return LiveRace(standard, speculative)


def replay_frames(race: LiveRace, n_frames: int) -> list[tuple[float, int, int]]:
    """(time, tokens shown in the standard lane, in the speculative lane) at n_frames evenly spaced
    moments of the race, for replaying both lanes side by side at their measured pace."""
    end = max(race.standard.elapsed, race.speculative.elapsed)
    frames = []
    for i in range(1, n_frames + 1):
        t = end * i / n_frames
        frames.append((t, int(np.searchsorted(race.standard.times, t, side="right")),
                       int(np.searchsorted(race.speculative.times, t, side="right"))))
    return frames


# --- timed comparisons: gamma sweep and drafter shoot-out -----------------------------------------

def _decode_s_per_token(result: GenerationResult) -> float:
    return (result.total_s - result.prefill_s) / max(1, len(result.tokens))


def plain_s_per_token(target, prompt_ids, max_new_tokens: int, sampling: SamplingConfig, seed: int,
                      repeats: int = 2) -> float:
    """Seconds per token of plain decoding (prefill excluded), the fastest of `repeats` runs."""
    return min(_decode_s_per_token(autoregressive_generate(target, prompt_ids, max_new_tokens, sampling, seed=seed,
                                                           eos_token_id=None)) for _ in range(repeats))


def timed_speculative(target, drafter, prompt_ids, gamma: int, max_new_tokens: int, sampling: SamplingConfig,
                      seed: int, repeats: int = 2) -> dict:
    """Fastest of `repeats` speculative runs: seconds per token (prefill excluded), measured alpha,
    tokens per target pass, draft passes per token."""
    best, rounds = None, []
    for _ in range(repeats):
        res = speculative_generate(target, drafter, prompt_ids, gamma=gamma, max_new_tokens=max_new_tokens,
                                   sampling=sampling, seed=seed, eos_token_id=None, trace=False)
        rounds = res.rounds  # same seed: every repeat makes the same rounds
        if best is None or _decode_s_per_token(res) < _decode_s_per_token(best):
            best = res
    return {"s_per_token": _decode_s_per_token(best), "alpha": measured_alpha(rounds),
            "tokens_per_pass": best.tokens_per_pass, "target_passes": best.target_passes,
            "draft_passes_per_token": best.draft_passes / max(1, len(best.tokens)),
            "drafted": best.drafted, "accepted": best.accepted, "rounds": rounds}


def gamma_sweep(target, drafter, prompt_ids, gammas, max_new_tokens: int, sampling: SamplingConfig, seed: int,
                repeats: int = 2, progress: Callable[[float, str], None] | None = None) -> dict:
    """Measured speedup over plain decoding for each gamma, and alpha measured over all the runs
    (the mean of min(1, p/q) over every judged draft)."""
    report = progress or (lambda fraction, text: None)
    drafter = as_drafter(drafter)
    gammas = list(gammas)
    warm_up(target, drafter, prompt_ids, gammas[0])
    report(0.0, "Timing plain decoding…")
    base = plain_s_per_token(target, prompt_ids, max_new_tokens, sampling, seed, repeats)
    rows, all_rounds = [], []
    for i, g in enumerate(gammas):
        report(i / len(gammas), f"Timing speculative decoding, γ = {g}…")
        m = timed_speculative(target, drafter, prompt_ids, g, max_new_tokens, sampling, seed, repeats)
        all_rounds += m.pop("rounds")
        rows.append({"gamma": g, **m, "speedup": base / m["s_per_token"]})
    report(1.0, "Done")
    return {"rows": rows, "plain_s_per_token": base, "alpha": measured_alpha(all_rounds)}


def drafter_shootout(target, drafters: dict, prompt_ids, gamma: int, max_new_tokens: int, sampling: SamplingConfig,
                     seed: int, repeats: int = 2, progress: Callable[[float, str], None] | None = None) -> dict:
    """The same request with each drafter (label -> causal LM or Drafter): measured alpha, tokens per
    target pass, draft passes per token and wall-clock speedup over plain decoding."""
    report = progress or (lambda fraction, text: None)
    drafters = {label: as_drafter(d) for label, d in drafters.items()}
    for d in drafters.values():
        warm_up(target, d, prompt_ids, gamma)
    report(0.0, "Timing plain decoding…")
    base = plain_s_per_token(target, prompt_ids, max_new_tokens, sampling, seed, repeats)
    rows = []
    for i, (label, d) in enumerate(drafters.items()):
        report(i / len(drafters), f"Timing the drafter: {label}…")
        m = timed_speculative(target, d, prompt_ids, gamma, max_new_tokens, sampling, seed, repeats)
        m.pop("rounds")
        rows.append({"drafter": label, **m, "speedup": base / m["s_per_token"]})
    report(1.0, "Done")
    return {"rows": rows, "plain_s_per_token": base}
