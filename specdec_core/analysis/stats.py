"""How every live figure is measured, the statistics half: contestants interleaved, a figure as a median
with its spread, and a run's time (pass costs: `pass_costs`; teacher-forced α: `acceptance`).

1. Contestants are interleaved. Every comparison (plain against speculative, drafter against drafter,
   γ against γ, chain against tree, a variant against the target) is a `contest`: it runs its
   contestants once per repetition, A B C in one repetition and C B A in the next
   (`interleave`), so a slow moment of a shared machine hits all of them alike. A run's time
   is its decoding phase (`decode_seconds`: the prompt's prefill left out), per new token
   (`decode_s_per_token`); the live race's lanes, which a page replays, keep the whole wall clock.
2. A figure is the median of the repetitions, with its spread: `Measured`, printed like
   "1.62× (1.55–1.70, 5 runs)". A wide spread (`Measured.busy`) is a finding about the machine.
3. Only the work is timed: no drawing and no caller's callback runs inside a timed span (progress is
   reported between runs, by one `Pacing`, which also holds the admission slot entered around each
   run), and on CUDA the clock is read after `torch.cuda.synchronize`.
"""
import statistics
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import torch

from ..trace import GenerationResult

BUSY_SPREAD = 0.25  # (high - low) / median above this: the machine was busy while it measured
T = TypeVar("T")
Progress = Callable[[float, str], None]


# --- pacing: how a long measurement shares the machine --------------------------------------------------

@dataclass(frozen=True)
class Pacing:
    """How a long measurement shares the machine, one object instead of two callbacks threaded through
    every layer: `slot()` is entered around every run (a server's admission slot, so other work goes in
    between runs), `progress(fraction, text)` is told between runs, never inside a timed span."""
    slot: Callable[[], AbstractContextManager] = nullcontext
    progress: Progress | None = None

    def report(self, fraction: float, text: str) -> None:
        if self.progress is not None:
            self.progress(fraction, text)

    def run(self, work: Callable[[], T]) -> T:
        """`work()` inside the slot."""
        with self.slot():
            return work()

    def part(self, lo: float, hi: float, label: str = "") -> "Pacing":
        """The same slot, its progress mapped into [lo, hi] of this one's (text after `label`): for one
        step of a measurement made of several."""
        if self.progress is None:
            return self
        outer = self.progress
        return Pacing(self.slot, lambda f, text: outer(lo + (hi - lo) * f, f"{label}{text}"))


# --- the figure: median and spread ---------------------------------------------------------------------

@dataclass(frozen=True)
class Measured:
    median: float
    low: float  # the fastest / smallest repetition
    high: float
    n: int  # repetitions
    runs: tuple[float, ...]  # every repetition's value, in the order measured

    @property
    def spread(self) -> float:
        """(high - low) / median: 0 when every repetition agreed."""
        return (self.high - self.low) / self.median if self.median else float("inf")

    @property
    def busy(self) -> bool:
        """True when the repetitions disagree too much for the median to be a finding about the method."""
        return self.n > 1 and self.spread > BUSY_SPREAD

    def text(self, unit: str = "×", digits: int = 2, scale: float = 1.0) -> str:
        """'1.62× (1.55–1.70, 5 runs)' (`scale` multiplies, e.g. 1e3 with unit ' ms')."""
        f = lambda x: f"{x * scale:.{digits}f}"
        if self.n == 1:
            return f"{f(self.median)}{unit} (1 run)"
        return f"{f(self.median)}{unit} ({f(self.low)}–{f(self.high)}, {self.n} runs)"


def measured(values: Iterable[float]) -> Measured:
    """The median and range of repeated measurements of one figure (at least one value)."""
    runs = tuple(float(v) for v in values)
    if not runs:
        raise ValueError("measured needs at least one value")
    return Measured(statistics.median(runs), min(runs), max(runs), len(runs), runs)


def ratios(numerators: list[float], denominators: list[float]) -> Measured:
    """Repetition-by-repetition ratios (e.g. plain time / speculative time of the same repetition)."""
    if len(numerators) != len(denominators):
        raise ValueError(f"ratios needs paired values, got {len(numerators)} and {len(denominators)}")
    return measured(a / b for a, b in zip(numerators, denominators))


# --- interleaving --------------------------------------------------------------------------------------

def _order(names: list, repetition: int) -> list:
    """As given in even repetitions, reversed in odd ones (A B C, C B A, A B C, ...), so no
    contestant always runs first or last."""
    return list(names) if repetition % 2 == 0 else list(reversed(names))


def interleave(contestants: Mapping[Hashable, Callable[[], T]], repeats: int,
               busy: Callable[[dict], bool] | None = None, max_repeats: int | None = None, *,
               pacing: Pacing = Pacing()) -> dict[Hashable, list[T]]:
    """Each contestant's results over `repeats` interleaved repetitions: A B C, then C B A (a `contest`
    without warm-up, its results alone; `busy` sees the results so far)."""
    grow = None if busy is None else (lambda so_far: busy(so_far.results))
    return contest(contestants, repeats, busy=grow, max_repeats=max_repeats, pacing=pacing).results


@dataclass
class Contest(Generic[T]):
    """What a `contest` ran: each contestant's results, one per repetition, in the order of the
    repetitions (a busy machine may have grown them past the repetitions asked for)."""
    results: dict[Hashable, list[T]]
    warm_up: dict[Hashable, T] = field(default_factory=dict)  # each contestant's untimed first run, if any

    @property
    def repeats(self) -> int:
        return min((len(rs) for rs in self.results.values()), default=0)

    def measured(self, name: Hashable, value: Callable[[T], float]) -> Measured:
        """`value` of each of the contestant's repetitions: median and spread."""
        return measured(value(r) for r in self.results[name])

    def ratios(self, base: Hashable, name: Hashable, value: Callable[[T], float]) -> Measured:
        """value(base) / value(name), repetition by repetition (e.g. plain seconds per token over a
        contestant's: its speedup), median and spread."""
        return ratios([value(r) for r in self.results[base]], [value(r) for r in self.results[name]])


def contest(contestants: Mapping[Hashable, Callable[[], T]], repeats: int, *, warm_up: bool = False,
            busy: Callable[["Contest[T]"], bool] | None = None, max_repeats: int | None = None,
            pacing: Pacing = Pacing()) -> Contest[T]:
    """The project's one way to compare: every contestant runs once per repetition, interleaved (A B C,
    then C B A, so no contestant always runs first or last), after one untimed run each when `warm_up`
    (first calls allocate, later ones only compute).

    Each run happens inside its own `pacing.slot()` (a server passes its admission slot, so a long
    measurement holds it one run at a time and other work can go in between), warm-ups included; the
    pacing's progress is told after each run, between timed spans, never inside one. With `busy` (the
    contest so far -> True while its figures disagree too much) and `max_repeats`, two more
    repetitions (one in each order) run while `busy` says so, up to `max_repeats` in all: a busy
    machine gets more repetitions instead of a noisier median."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    done = Contest({name: [] for name in contestants})
    if warm_up:
        for name, run in contestants.items():
            with pacing.slot():
                done.warm_up[name] = run()
    names, limit = list(contestants), max(repeats, max_repeats or repeats)
    planned, finished, r = repeats, 0, 0
    while r < planned:
        for name in _order(names, r):
            with pacing.slot():
                done.results[name].append(contestants[name]())
            finished += 1
            more = f" of up to {limit} (the machine is busy)" if planned > repeats else f" of {planned}"
            pacing.report(finished / (planned * len(names)), f"Repetition {r + 1}{more}: {name}")
        r += 1
        if r == planned and planned < limit and busy is not None and busy(done):
            planned = min(limit, planned + 2)
    return done


def decode_seconds(result: GenerationResult) -> float:
    """A generation's decoding phase: its time less the target's prefill of the prompt, which is the
    same for every decoder (the drafter's own pass over the prompt stays in, charged to speculation)."""
    return result.total_s - result.prefill_s


def decode_s_per_token(results: "GenerationResult | Iterable[GenerationResult]") -> float:
    """Seconds per new token of a generation (or of several together) in the decoding phase
    (`decode_seconds`), which is what speculation changes."""
    batch = [results] if isinstance(results, GenerationResult) else list(results)
    return sum(decode_seconds(r) for r in batch) / max(1, sum(len(r.tokens) for r in batch))


def sync(device) -> None:
    """Wait for queued accelerator work, so a clock read afterwards includes it (no-op on CPU)."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn: Callable[[], T], device="cpu") -> tuple[T, float]:
    """(fn(), wall-clock seconds of the call), synchronised on CUDA at both ends."""
    sync(device)
    start = time.perf_counter()
    result = fn()
    sync(device)
    return result, time.perf_counter() - start
