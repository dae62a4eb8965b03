"""Races between plain and speculative decoding, live on a pair (the race simulated from the paper's
model is `theory.simulated_speculative`).

Both decoders run on the same target, prompt, sampling and seed, with the time each token
appeared, by the core's one measurement method (`analysis.stats`): the two lanes interleaved over
several repetitions (plain first in one, speculative first in the next), the speedup of each
repetition = plain elapsed / speculative elapsed (prompt processing included in both), reported as
the median with its spread. A lane's elapsed time is plain wall-clock time: nothing is drawn and no
caller's callback runs while a lane is timed (progress is reported between lanes), so a page draws
the lanes afterwards, replaying them side by side at their measured pace. The γ sweep and the drafter
shoot-out use the same interleaving, and take c and v(γ) from the passes their own runs made.
"""
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import torch

from ..drafters import as_drafter
from ..policies import Policy
from ..request import GenerationRequest
from ..sampling_config import GREEDY
from ..speculative import autoregressive_generate, speculative_generate
from ..trace import GenerationResult
from .pass_costs import PassTimes
from .round_stats import mean_acceptance_length, measured_alpha
from .stats import Contest, Measured, Pacing, contest, decode_s_per_token, measured, sync

# --- live -----------------------------------------------------------------------------------------



@dataclass
class LiveLane:
    name: str
    tokens: list[int] = field(default_factory=list)
    times: list[float] = field(default_factory=list)  # seconds from the lane's start to each token
    passes: list[int] = field(default_factory=list)  # target passes made when each token appeared
    kinds: list[str] = field(default_factory=list)  # "target" | "accepted" | "corrective" | "bonus"
    elapsed: float = 0.0  # wall-clock seconds of the whole lane, prompt processing included
    result: GenerationResult | None = None

    @property
    def target_passes(self) -> int:
        return self.result.target_passes if self.result else (self.passes[-1] if self.passes else 0)

    @property
    def tokens_per_s(self) -> float:
        return len(self.tokens) / self.elapsed if self.elapsed > 0 else math.nan


def _device(model) -> torch.device:
    return next(model.parameters()).device


def run_plain_lane(target, request: GenerationRequest) -> LiveLane:
    """Plain decoding, timed on the wall clock, with the moment each token appeared. Nothing but a
    clock read runs between the sampler's passes."""
    lane = LiveLane("standard")
    stamps = lane.times
    device = _device(target)
    sync(device)
    start = time.perf_counter()
    lane.result = autoregressive_generate(target, request.fixed_length(),
                                          on_token=lambda _t, _s: stamps.append(time.perf_counter()))
    sync(device)
    lane.elapsed = time.perf_counter() - start
    lane.times[:] = [t - start for t in stamps]
    lane.tokens = list(lane.result.tokens)
    lane.passes = list(range(1, len(lane.tokens) + 1))
    lane.kinds = ["target"] * len(lane.tokens)
    return lane


def run_speculative_lane(target, drafter, request: GenerationRequest, gamma: int | Policy) -> LiveLane:
    """Speculative decoding, timed on the wall clock, with the moment each round ended (its tokens
    appear together). Nothing but a clock read runs between the sampler's rounds."""
    lane = LiveLane("speculative")
    stamps: list[float] = []
    device = _device(target)
    sync(device)
    start = time.perf_counter()
    lane.result = speculative_generate(target, drafter, request.fixed_length(), gamma=gamma, trace=False,
                                       on_round=lambda _r: stamps.append(time.perf_counter()))
    sync(device)
    lane.elapsed = time.perf_counter() - start
    for r, t in zip(lane.result.rounds, stamps):
        lane.tokens += r.emitted
        lane.times += [t - start] * len(r.emitted)
        lane.passes += [r.index + 1] * len(r.emitted)
        lane.kinds += (["accepted"] * r.n_accepted + [r.next_kind])[:len(r.emitted)]
    return lane


def warm_up(target, drafter, request: GenerationRequest, gamma: int | Policy) -> None:
    """A few untimed greedy tokens of each decoder on the request's prompt, so one-off costs
    (allocations, lazy init) hit no lane."""
    few = GenerationRequest(request.prompt_ids, 3, GREEDY, 0, None)
    autoregressive_generate(target, few)
    speculative_generate(target, drafter, few, gamma=gamma, trace=False)


@dataclass
class LiveRace:
    standard: LiveLane  # the lanes of the repetition whose speedup is the median: the ones to replay
    speculative: LiveLane
    speedups: Measured  # plain elapsed / speculative elapsed, repetition by repetition
    standard_s: Measured  # each lane's elapsed seconds over the repetitions
    speculative_s: Measured
    repetitions: list[tuple[LiveLane, LiveLane]] = field(default_factory=list)

    @property
    def speedup(self) -> float:
        """The median speedup over the repetitions."""
        return self.speedups.median

    @property
    def identical(self) -> bool:
        return self.standard.tokens == self.speculative.tokens


RACE_REPEATS, RACE_MAX_REPEATS = 5, 15  # races per measurement; up to this many while their speedups disagree


def _speedups(lanes: Contest[LiveLane]) -> Measured:
    return lanes.ratios("standard", "speculative", lambda lane: lane.elapsed)


def live_race(target, drafter, request: GenerationRequest, gamma: int | Policy, *, repeats: int = RACE_REPEATS,
              max_repeats: int = RACE_MAX_REPEATS, pacing: Pacing = Pacing()) -> LiveRace:
    """Plain and speculative decoding of the same request, after an untimed warm-up of both (`warm_up`),
    interleaved over `repeats` repetitions, two more at a time while their speedups disagree
    (`Measured.busy`), up to `max_repeats` (end-of-text stops neither lane, so both produce
    max_new_tokens; in greedy mode the two token lists are identical). The pacing's slot is entered
    around the warm-up and each lane (a server's admission slot), and its progress is told between
    them, never while a lane is timed."""
    drafter = as_drafter(drafter)
    pacing.report(0.0, "Warming up both decoders (untimed)…")
    with pacing.slot():
        warm_up(target, drafter, request, gamma)
    lanes = contest({"standard": partial(run_plain_lane, target, request),
                     "speculative": partial(run_speculative_lane, target, drafter, request, gamma)},
                    repeats, pacing=pacing, busy=lambda so_far: _speedups(so_far).busy, max_repeats=max_repeats)
    pairs = list(zip(lanes.results["standard"], lanes.results["speculative"]))
    speedups = _speedups(lanes)
    shown = min(range(len(pairs)), key=lambda i: abs(speedups.runs[i] - speedups.median))
    return LiveRace(*pairs[shown], speedups, measured(a.elapsed for a, _ in pairs),
                    measured(b.elapsed for _, b in pairs), pairs)


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

PLAIN = "plain decoding"


def _contest(target, drafters: dict, request: GenerationRequest, repeats: int,
             pacing: Pacing) -> tuple[Contest[GenerationResult], PassTimes]:
    """Plain decoding (`PLAIN`) and every (label -> (drafter, gamma, label of its passes)) contestant as
    one `stats.contest`, with every run's passes collected."""
    times, request = PassTimes(), request.fixed_length()

    def plain() -> GenerationResult:
        res = autoregressive_generate(target, request)
        times.add(res)
        return res

    def spec(drafter, gamma, pass_label) -> Callable[[], GenerationResult]:
        def run() -> GenerationResult:
            res = speculative_generate(target, drafter, request, gamma=gamma, trace=False)
            times.add(res, pass_label)
            return res
        return run

    runs = {PLAIN: plain, **{label: spec(*how) for label, how in drafters.items()}}
    return contest(runs, repeats, pacing=pacing), times


def _row(runs: Contest[GenerationResult], label: str) -> dict:
    """One contestant's row: its speedup over plain decoding (decode phase, repetition by repetition:
    median, and the Measured), and the counts of its first run (same seed: every repetition makes the
    same tokens and rounds)."""
    speedup = runs.ratios(PLAIN, label, decode_s_per_token)
    first = runs.results[label][0]
    return {"speedup": speedup.median, "measured": speedup, "alpha": measured_alpha(first.rounds),
            "s_per_token": runs.measured(label, decode_s_per_token).median,
            "tokens_per_pass": first.tokens_per_pass, "target_passes": first.target_passes,
            "mean_acceptance_length": mean_acceptance_length(first.rounds),
            "draft_passes_per_token": first.draft_passes / max(1, len(first.tokens)),
            "drafted": first.drafted, "accepted": first.accepted, "rounds": first.rounds}


def gamma_sweep(target, drafter, request: GenerationRequest, gammas, *, repeats: int = 3,
                pacing: Pacing = Pacing()) -> dict:
    """Measured speedup over plain decoding for each gamma (interleaved repetitions: median and
    spread), alpha measured over all the runs (the mean of min(1, p/q) over every judged draft),
    and the cost profile (c, v(γ)) of the passes these runs made."""
    drafter = as_drafter(drafter)
    gammas = list(gammas)
    with pacing.slot():
        warm_up(target, drafter, request, gammas[0])
    contestants = {f"γ = {g}": (drafter, g, "drafter") for g in gammas}
    runs, times = _contest(target, contestants, request, repeats, pacing)
    rows, all_rounds = [], []
    for g, label in zip(gammas, contestants):
        row = _row(runs, label)
        all_rounds += row.pop("rounds")
        rows.append({"gamma": g, **row})
    return {"rows": rows, "alpha": measured_alpha(all_rounds), "costs": times.profile("drafter"), "repeats": repeats,
            "plain_s_per_token": runs.measured(PLAIN, decode_s_per_token).median}


def drafter_shootout(target, drafters: dict, request: GenerationRequest, gamma: int | Policy | dict, *,
                     repeats: int = 3, pacing: Pacing = Pacing()) -> dict:
    """The same request with each drafter (label -> causal LM or Drafter) at the same draft length
    (an int gamma or a draft-length policy, or label -> one of those for each drafter its own),
    interleaved with plain decoding over `repeats` repetitions: measured alpha, tokens per target
    pass, draft passes per token, c from the drafter's own passes in these runs (0 without draft
    passes) and the wall-clock speedup over plain decoding (median and spread)."""
    drafters = {label: as_drafter(d) for label, d in drafters.items()}
    lengths = gamma if isinstance(gamma, dict) else dict.fromkeys(drafters, gamma)
    if set(lengths) != set(drafters):
        raise ValueError(f"one draft length per drafter: got {sorted(lengths)} for {sorted(drafters)}")
    for label, d in drafters.items():
        with pacing.slot():
            warm_up(target, d, request, lengths[label])
    runs, times = _contest(target, {label: (d, lengths[label], label) for label, d in drafters.items()}, request,
                           repeats, pacing)
    rows = []
    for label in drafters:
        row = _row(runs, label)
        row.pop("rounds")
        rows.append({"drafter": label, **row, "c": times.profile(label).c})
    return {"rows": rows, "repeats": repeats, "plain_s_per_token": runs.measured(PLAIN, decode_s_per_token).median}
