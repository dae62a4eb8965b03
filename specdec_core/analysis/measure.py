"""How every live figure is measured: one method for pages, benchmark and command line.

1. Contestants are interleaved. Every comparison (plain against speculative, drafter against drafter,
   γ against γ, chain against tree, a variant against the target) is a `contest`: it runs its
   contestants once per repetition, A B C in one repetition and C B A in the next
   (`interleave`), so a slow moment of a shared machine hits all of them alike. A run's time
   is its decoding phase (`decode_seconds`: the prompt's prefill left out), per new token
   (`decode_s_per_token`); the live race's lanes, which a page replays, keep the whole wall clock.
2. A figure is the median of the repetitions, with its spread: `Measured`, printed like
   "1.62× (1.55–1.70, 5 runs)". A wide spread (`Measured.busy`) is a finding about the machine.
3. Pass costs come from the passes the generations themselves make (`PassTimes`): the target's pass
   over k positions (k = 1 in plain decoding, drafts + 1 in a speculative round) and the drafter's
   passes in its rounds. c = draft pass / target pass over one position; v(k) = pass over k / pass
   over 1. A pass kind's cost is the lower quartile of its many timings (`pass_seconds`): other work
   on the machine only ever adds time to a pass, so the quartile is its cost with the least
   interference without being a lucky outlier.
   A draft pass costs more early in a round: the target's pass has pushed the drafter out of the
   processor's caches (bundled pair, γ = 7: about 400, 250, 170, 140, 125, 118, 115 µs for the
   passes of a round), the more so after a first pass that fed two tokens (the round before accepted
   every draft). How often that happens depends on how well a drafter guesses, so pooled timings
   gave two drafters of one architecture c 10-15% apart. The draft pass cost is therefore the pass
   once a round has warmed the drafter up: the lower quartile at each position of a round, then the
   cheapest position (`PassTimes.draft_seconds`). The warm-up of a round's first passes is left out
   of c; a measured speedup includes it, and so does the benchmark's prediction of a round's cost
   (`PassTimes.round_draft_seconds`: the positions' costs averaged).
4. Only the work is timed: no drawing and no caller's callback runs inside a timed span (progress is
   reported between runs), and on CUDA the clock is read after `torch.cuda.synchronize`.

alpha (acceptance) is measured by teacher forcing in `acceptance`: E[sum_x min(p(x), q(x))] over
held-out positions; greedy alpha is the probability that the two argmaxes agree.
"""
import statistics
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import torch

from ..costs import Costs
from ..lm import CachedLM
from ..sampler import autoregressive_generate, speculative_generate
from ..sampling import GREEDY, SamplingConfig, to_probs
from ..theory import alpha_of
from ..trace import GenerationResult

PASS_QUANTILE = 0.25  # a pass kind's cost: this quantile of its timings (see 3. above)
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


def pacing_of(hold=nullcontext, progress: Progress | None = None, pacing: Pacing | None = None) -> Pacing:
    """`pacing`, or one made of the separate `hold` and `progress` a caller may still pass."""
    if pacing is not None:
        if hold is not nullcontext or progress is not None:
            raise ValueError("pass pacing, or hold and progress, not both")
        return pacing
    return Pacing(hold, progress)


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


def interleave(contestants: Mapping[Hashable, Callable[[], T]], repeats: int, hold=nullcontext,
               progress: Progress | None = None, busy: Callable[[dict], bool] | None = None,
               max_repeats: int | None = None, *, pacing: Pacing | None = None) -> dict[Hashable, list[T]]:
    """Each contestant's results over `repeats` interleaved repetitions: A B C, then C B A.

    Each run happens inside its own `pacing.slot()` (a server passes its admission slot, so a long
    measurement holds it one run at a time and other work can go in between); `pacing.progress(fraction,
    text)` is called after each run, between timed spans, never inside one (`hold` and `progress`:
    the same two, given apart).

    With `busy` (the results so far -> True while they disagree too much) and `max_repeats`, two more
    repetitions (one in each order) run while `busy` says so, up to `max_repeats` in all: a busy
    machine gets more repetitions instead of a noisier median."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    pace = pacing_of(hold, progress, pacing)
    names = list(contestants)
    limit = max(repeats, max_repeats or repeats)
    out = {name: [] for name in names}
    planned, done, r = repeats, 0, 0
    while r < planned:
        for name in _order(names, r):
            out[name].append(pace.run(contestants[name]))
            done += 1
            more = f" of up to {limit} (the machine is busy)" if planned > repeats else f" of {planned}"
            pace.report(done / (planned * len(names)), f"Repetition {r + 1}{more}: {name}")
        r += 1
        if r == planned and planned < limit and busy is not None and busy(out):
            planned = min(limit, planned + 2)
    return out


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


def contest(contestants: Mapping[Hashable, Callable[[], T]], repeats: int, *, hold=nullcontext,
            progress: Progress | None = None, warm_up: bool = False,
            busy: Callable[["Contest[T]"], bool] | None = None, max_repeats: int | None = None,
            pacing: Pacing | None = None) -> Contest[T]:
    """The project's one way to compare: every contestant runs once per repetition, interleaved
    (`interleave`: A B C, then C B A), after one untimed run each when `warm_up` (first calls allocate,
    later ones only compute). `pacing.slot()` (or `hold`) is entered around every run, warm-ups
    included; its progress (or `progress`) is called between runs, never inside one. With `busy` (the
    contest so far -> True while its figures disagree too much) and `max_repeats`, two more
    repetitions run while `busy` says so."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    pace = pacing_of(hold, progress, pacing)
    first: dict[Hashable, T] = {}
    if warm_up:
        for name, run in contestants.items():
            first[name] = pace.run(run)
    grow = None if busy is None else (lambda so_far: busy(Contest(so_far, first)))
    return Contest(interleave(contestants, repeats, busy=grow, max_repeats=max_repeats, pacing=pace), first)


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


# --- pass costs from the runs' own passes --------------------------------------------------------------

def pass_seconds(timings: list[float]) -> float:
    """The cost of one kind of pass from its timings: their lower quartile (PASS_QUANTILE)."""
    if not timings:
        raise ValueError("pass_seconds needs at least one timing")
    xs = sorted(timings)
    i = PASS_QUANTILE * (len(xs) - 1)  # linear interpolation between order statistics
    lo = int(i)
    return xs[lo] + (xs[min(lo + 1, len(xs) - 1)] - xs[lo]) * (i - lo)


@dataclass
class PassTimes:
    """Seconds of every pass the collected generations made, by kind of pass."""
    target: dict[int, list[float]] = field(default_factory=dict)  # k positions -> target passes over k
    # drafter label -> position of the pass in its round (0 = the round's first) -> timings
    draft: dict[str, dict[int, list[float]]] = field(default_factory=dict)

    def add(self, result: GenerationResult, drafter: str | None = None) -> "PassTimes":
        """Collect a generation's passes: the target's (plain: one position each; speculative: drafts + 1
        per round) and, under the label `drafter`, the drafter's passes by their position in the round
        (not the run's first pass, which reads the prompt)."""
        if not result.rounds:
            self.target.setdefault(1, []).extend(result.target_pass_s)
            return self
        for r in result.rounds:
            self.target.setdefault(len(r.draft_tokens) + 1, []).append(r.target_pass_s)
        if drafter is not None:
            by_position = self.draft.setdefault(drafter, {})
            for i, r in enumerate(result.rounds):
                for position, s in enumerate(r.draft_pass_s):
                    if i or position:
                        by_position.setdefault(position, []).append(s)
        return self

    def draft_seconds(self, drafter: str) -> float:
        """A draft pass once a round has warmed the drafter up: `pass_seconds` at each position of a
        round, the cheapest of them (0 when the drafter made no pass, such as prompt lookup)."""
        return min(self._by_position(drafter), default=0.0)

    def round_draft_seconds(self, drafter: str) -> float:
        """A draft pass as a round pays for it on average, its warm-up included: `pass_seconds` at each
        position of a round, averaged over the positions (for predicting a round's cost; 0 without passes)."""
        costs = self._by_position(drafter)
        return statistics.fmean(costs) if costs else 0.0

    def _by_position(self, drafter: str) -> list[float]:
        return [pass_seconds(ts) for ts in self.draft.get(drafter, {}).values() if ts]

    def profile(self, drafter: str | None = None) -> Costs:
        """c and v(k) from the collected passes (`pass_seconds` of each target pass kind, `draft_seconds`
        of the drafter, by default the first collected). Needs single-position target passes (a plain
        generation)."""
        if not self.target.get(1):
            raise ValueError("no single-position target pass collected: add a plain generation")
        verify = {k: pass_seconds(ts) for k, ts in sorted(self.target.items()) if ts}
        label = drafter if drafter is not None else next(iter(self.draft), None)
        return Costs.measured(verify[1], self.draft_seconds(label) if label is not None else 0.0, verify)

    def c(self) -> dict[str, float]:
        """c of every drafter collected."""
        return {label: self.profile(label).c for label in self.draft}

    def describe(self) -> str:
        """Where the costs come from, in a sentence: how many passes of each kind were collected."""
        target = sum(len(ts) for ts in self.target.values())
        draft = sum(len(ts) for positions in self.draft.values() for ts in positions.values())
        return (f"from the passes short generations made here: {target} target passes over 1 to "
                f"{max(self.target, default=1)} positions and {draft} draft passes, each kind's cost the "
                "lower quartile of its timings (a draft pass's at the cheapest position of a round)")


@torch.inference_mode()
def calibrate(target, drafters: Mapping[str, object], prompt_ids: list[int], gammas=(1, 3, 7, 15),
              max_new_tokens: int = 20, repeats: int = 3, hold=nullcontext,
              progress: Progress | None = None, *, pacing: Pacing | None = None) -> PassTimes:
    """Pass costs of this machine from short greedy generations, interleaved over `repeats`
    repetitions: plain decoding; every drafter at the middle γ (the drafters' c all come from runs
    alike); the first drafter also at the other γs (target passes over more positions, for v).
    Small enough for a page's first paint (bundled pair: about a second a repetition on the shared
    2-core machine at load average 6)."""
    gammas = sorted(gammas)
    common = gammas[len(gammas) // 2]
    times = PassTimes()
    plain = lambda: times.add(autoregressive_generate(target, prompt_ids, max_new_tokens, GREEDY, seed=0,
                                                      eos_token_id=None))
    runs: dict[Hashable, Callable[[], PassTimes]] = {"plain decoding": plain}

    def spec(drafter, gamma: int, label: str | None) -> Callable[[], PassTimes]:
        return lambda: times.add(speculative_generate(target, drafter, prompt_ids, gamma=gamma,
                                                      max_new_tokens=max_new_tokens, sampling=GREEDY, seed=0,
                                                      eos_token_id=None, trace=False), label)

    for i, (label, drafter) in enumerate(drafters.items()):
        runs[f"{label}, γ = {common}"] = spec(drafter, common, label)
        if i == 0:
            runs.update({f"{label}, γ = {g}": spec(drafter, g, None) for g in gammas if g != common})
    contest(runs, repeats, pacing=pacing_of(hold, progress, pacing))
    return times


# --- isolated passes (the Serial Tax chart, the benchmark's comparison profile) ------------------------

@torch.inference_mode()
def pass_cost(model, k: int, context: int = 64, repeats: int = 30, warmup: int = 3, forward: str = "core") -> float:
    """Median seconds of ONE forward pass over k new positions after `context` cached tokens."""
    vocab = model.get_output_embeddings().weight.shape[0]
    g = torch.Generator().manual_seed(0)
    lm = CachedLM(model, forward)
    lm.prefill(torch.randint(0, vocab, (context,), generator=g).tolist())
    new = torch.randint(0, vocab, (k,), generator=g).tolist()
    times = []
    for i in range(warmup + repeats):
        lm.extend(new)
        if i >= warmup:
            times.append(lm.last_pass_s)
        lm.rollback(k)
    return statistics.median(times)


def pass_sweep(model, ks, context: int = 64, repeats: int = 5, passes: int = 3, hold=nullcontext,
               progress: Progress | None = None, *, pacing: Pacing | None = None) -> dict[int, Measured]:
    """One pass over k positions for each k, interleaved over `repeats` repetitions (each sample the
    median of `passes` passes after one warm-up)."""
    runs = {k: (lambda k=k: pass_cost(model, k, context, repeats=passes, warmup=1)) for k in ks}
    done = contest(runs, repeats, pacing=pacing_of(hold, progress, pacing))
    return {k: done.measured(k, float) for k in runs}


def cost_profile(target, draft, ks=range(1, 10), context: int = 64, repeats: int = 30,
                 forward: str = "core") -> Costs:
    """c and v(k) from isolated passes, with the same interleaving and medians as every other figure
    (`repeats` passes per pass kind in all, in repetitions of three)."""
    rounds = max(1, repeats // 3)
    runs = {("draft", 1): lambda: pass_cost(draft, 1, context, repeats=3, warmup=1, forward=forward)}
    runs.update({("target", k): (lambda k=k: pass_cost(target, k, context, repeats=3, warmup=1, forward=forward))
                 for k in ks})
    if ("target", 1) not in runs:
        runs["target", 1] = lambda: pass_cost(target, 1, context, repeats=3, warmup=1, forward=forward)
    med = {name: statistics.median(ts) for name, ts in contest(runs, rounds).results.items()}
    return Costs.measured(med["target", 1], med["draft", 1], {k: t for (kind, k), t in med.items() if kind == "target"})


@torch.inference_mode()
def acceptance(target, draft, sequences: list[list[int]], sampling: SamplingConfig = SamplingConfig()) -> dict:
    """alpha over every position of `sequences` (teacher forcing): mean sum(min(p, q)) under the
    sampling transform, and the greedy agreement rate of the argmaxes."""
    soft, agree, n = 0.0, 0, 0
    for ids in sequences:
        x = torch.tensor([ids], device=next(target.parameters()).device)
        p_logits = target(x).logits[0].float().cpu()
        q_logits = draft(x).logits[0].float().cpu()
        soft += float(alpha_of(to_probs(p_logits, sampling), to_probs(q_logits, sampling)).sum())
        agree += int((p_logits.argmax(-1) == q_logits.argmax(-1)).sum())
        n += len(ids)
    return {"alpha": soft / n, "alpha_greedy": agree / n, "positions": n}
