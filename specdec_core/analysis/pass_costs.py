"""Pass costs, the other half of measuring (statistics and contests: `stats`): c and v(k) of the cost
model, from the passes the generations themselves make or from isolated passes.

Pass costs come from the passes the generations themselves make (`PassTimes`): the target's pass
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

Isolated passes (`pass_cost`, `pass_sweep`, `cost_profile`) time one pass over k positions after a
cached context: the Serial Tax chart and the benchmark's comparison profile.
"""
import statistics
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field

import torch

from ..costs import Costs
from ..model import CachedLM
from ..request import GenerationRequest
from ..sampling_config import GREEDY
from ..speculative import autoregressive_generate, speculative_generate
from ..trace import GenerationResult
from .stats import Measured, Pacing, contest

PASS_QUANTILE = 0.25  # a pass kind's cost: this quantile of its timings (see above)


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


CALIBRATION = GenerationRequest(max_new_tokens=20, sampling=GREEDY, seed=0)  # `calibrate`'s runs, short enough for a first paint


@torch.inference_mode()
def calibrate(target, drafters: Mapping[str, object], request: GenerationRequest, gammas=(1, 3, 7, 15), *,
              repeats: int = 3, pacing: Pacing = Pacing()) -> PassTimes:
    """Pass costs of this machine from short generations of `request` at its fixed length (pages and
    tools ask for `CALIBRATION` on their prompt: 20 greedy tokens), interleaved over `repeats`
    repetitions: plain decoding; every drafter at the middle γ (the drafters' c all come from runs
    alike); the first drafter also at the other γs (target passes over more positions, for v).
    Small enough for a page's first paint (bundled pair: about a second a repetition on the shared
    2-core machine at load average 6)."""
    gammas = sorted(gammas)
    common = gammas[len(gammas) // 2]
    times, request = PassTimes(), request.fixed_length()
    plain = lambda: times.add(autoregressive_generate(target, request))
    runs: dict[Hashable, Callable[[], PassTimes]] = {"plain decoding": plain}

    def spec(drafter, gamma: int, label: str | None) -> Callable[[], PassTimes]:
        return lambda: times.add(speculative_generate(target, drafter, request, gamma=gamma, trace=False), label)

    for i, (label, drafter) in enumerate(drafters.items()):
        runs[f"{label}, γ = {common}"] = spec(drafter, common, label)
        if i == 0:
            runs.update({f"{label}, γ = {g}": spec(drafter, g, None) for g in gammas if g != common})
    contest(runs, repeats, pacing=pacing)
    return times


# --- isolated passes (the Serial Tax chart, the benchmark's comparison profile) ------------------------

@torch.inference_mode()
def pass_cost(model, k: int, context: int = 64, repeats: int = 30, warmup: int = 3) -> float:
    """Median seconds of ONE forward pass over k new positions after `context` cached tokens (a model
    wrapped in `model.TransformersForward`: through its own transformers forward)."""
    vocab = model.get_output_embeddings().weight.shape[0]
    g = torch.Generator().manual_seed(0)
    lm = CachedLM(model)
    lm.prefill(torch.randint(0, vocab, (context,), generator=g).tolist())
    new = torch.randint(0, vocab, (k,), generator=g).tolist()
    times = []
    for i in range(warmup + repeats):
        lm.extend(new)
        if i >= warmup:
            times.append(lm.last_pass_s)
        lm.rollback(k)
    return statistics.median(times)


def pass_sweep(model, ks, context: int = 64, repeats: int = 5, passes: int = 3, *,
               pacing: Pacing = Pacing()) -> dict[int, Measured]:
    """One pass over k positions for each k, interleaved over `repeats` repetitions (each sample the
    median of `passes` passes after one warm-up)."""
    runs = {k: (lambda k=k: pass_cost(model, k, context, repeats=passes, warmup=1)) for k in ks}
    done = contest(runs, repeats, pacing=pacing)
    return {k: done.measured(k, float) for k in runs}


def cost_profile(target, draft, ks=range(1, 10), context: int = 64, repeats: int = 30) -> Costs:
    """c and v(k) from isolated passes, with the same interleaving and medians as every other figure
    (`repeats` passes per pass kind in all, in repetitions of three)."""
    rounds = max(1, repeats // 3)
    runs = {("draft", 1): lambda: pass_cost(draft, 1, context, repeats=3, warmup=1)}
    runs.update({("target", k): (lambda k=k: pass_cost(target, k, context, repeats=3, warmup=1))
                 for k in ks})
    if ("target", 1) not in runs:
        runs["target", 1] = lambda: pass_cost(target, 1, context, repeats=3, warmup=1)
    med = {name: statistics.median(ts) for name, ts in contest(runs, rounds).results.items()}
    return Costs.measured(med["target", 1], med["draft", 1], {k: t for (kind, k), t in med.items() if kind == "target"})
