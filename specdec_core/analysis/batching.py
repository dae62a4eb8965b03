"""Where speculation stops paying: batches, and the first token, measured with the one method.

Plain decoding of B prompts makes one target pass over B positions per step; speculative decoding
one target pass over B·(γ + 1) positions per round plus γ drafter passes over B positions. On a
machine where a pass over one position leaves the arithmetic units idle (memory-bound), B rows
ride almost free and so do γ drafts; once a pass is compute-bound, every extra position costs,
and the drafts compete with the batch for the same arithmetic. The cost model says it with the
measured pass costs t(B, k) (a target pass over B rows of k positions) and d(B) (a drafter pass
over B rows), as multiples of the single pass t(1, 1): v(B·(γ + 1)) = t(B, γ + 1) / t(1, 1), and

    speedup(B, γ) = E[tokens per round](α, γ) · t(B, 1) / (γ · d(B) + t(B, γ + 1))

`measure_regime` picks γ per batch size from that model (as serving stacks set the draft length per
batch size), then measures plain and speculative tokens per second at each batch size with
interleaved repetitions (stats.contest: median and spread), and puts the prediction beside the
measurement. Throughput is the decoding phase's: new tokens / (batch seconds - the target's reading
of the prompts); the drafter's reading of the prompts is speculation's own cost and stays in. The
time to first token is measured from the same runs: the target's prefill and one step (plain), the
target's prefill, the drafter's and a whole round (speculative): speculation does not shorten it.
"""
import json
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from ..batch import MAX_BATCH, batch_generate
from ..checks import MAX_GAMMA
from ..costs import Costs
from ..model import CachedLM
from ..request import GenerationRequest
from ..sampling_config import SamplingConfig
from ..theory import expected_tokens
from .acceptance import acceptance
from .pass_costs import pass_seconds
from .stats import Measured, Pacing, Progress, contest, decode_seconds, measured

BATCH_SIZES = (1, 2, 4, 8, 16, 32)
GAMMAS = tuple(range(1, 8))  # the draft lengths the cost model chooses from
FIXED_GAMMA = 4  # the app's default draft length, measured at every batch size as a stack that never adapts it
COST_KS = (1, 2, 4, 8)  # positions per row of the timed target passes (γ + 1 between: interpolated over B·k)
PROMPTS_FILE = Path(__file__).resolve().parents[2] / "assets" / "bench_prompts.json"
PROMPT_TOKENS = 40  # each prompt's last tokens (the batch's rows are ragged below this)


def bench_prompts(tokenizer, batch: int, max_tokens: int = PROMPT_TOKENS) -> list[list[int]]:
    """`batch` prompts cut from the held-out plays (assets/bench_prompts.json), cycling through them,
    each its last `max_tokens` tokens or fewer: ragged rows, as a server sees them."""
    texts = [p["text"] for p in json.loads(PROMPTS_FILE.read_text(encoding="utf-8"))["prompts"]]
    ids = [tokenizer.encode(t)[-max_tokens:] for t in texts]
    return [ids[i % len(ids)] for i in range(batch)]


# --- the cost model --------------------------------------------------------------------------------------

def monotone(points: dict[int, float]) -> list[tuple[int, float]]:
    """The non-decreasing fit (pool adjacent violators) of pass seconds by positions: more positions never
    cost less, so a pass that a busy moment slowed is averaged with its neighbours instead of bending
    the curve."""
    blocks: list[list[float]] = []  # [sum of t, count, last n]
    for n, t in sorted(points.items()):
        blocks.append([t, 1, n])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            t2, c2, n2 = blocks.pop()
            blocks[-1] = [blocks[-1][0] + t2, blocks[-1][1] + c2, n2]
    fitted, i = [], 0
    ns = sorted(points)
    for total, count, _ in blocks:
        fitted += [(ns[i + j], total / count) for j in range(count)]
        i += count
    return fitted


def _interpolate(curve: list[tuple[int, float]], n: float) -> float:
    """Piecewise linear through the fitted points; beyond the last, along the last segment."""
    if n <= curve[0][0]:
        return curve[0][1]
    for (n0, t0), (n1, t1) in zip(curve, curve[1:]):
        if n <= n1:
            return t0 + (t1 - t0) * (n - n0) / (n1 - n0)
    (n0, t0), (n1, t1) = curve[-2:] if len(curve) > 1 else (curve[0], curve[0])
    return t1 if n1 == n0 else t1 + (t1 - t0) * (n - n1) / (n1 - n0)


@dataclass
class BatchCosts:
    """Measured pass seconds of batched passes, a view over the one cost type: `at(B)` is the
    costs.Costs of a batch of B rows. target[(B, k)] over B rows of k positions, draft[B] over B rows
    of one. A pass costs what its B·k positions cost (the linear layers see B·k rows, and each row's
    attention its own context), so the model reads the target as one curve t(n) over n = B·k
    positions, fitted non-decreasing (`monotone`), and the drafter as d(B) alike."""
    target: dict[tuple[int, int], float]
    draft: dict[int, float]

    def __post_init__(self):
        by_n: dict[int, list[float]] = {}
        for (b, k), t in self.target.items():
            by_n.setdefault(b * k, []).append(t)
        self._t = monotone({n: statistics.median(ts) for n, ts in by_n.items()})
        self._d = monotone(self.draft)

    def t(self, positions: int) -> float:
        """Seconds of a target pass over this many positions (all rows together)."""
        return _interpolate(self._t, positions)

    def d(self, batch: int) -> float:
        """Seconds of a drafter pass over `batch` rows of one position."""
        return _interpolate(self._d, batch)

    def at(self, batch: int, ks=range(1, MAX_GAMMA + 2)) -> Costs:
        """The costs of one batch of `batch` rows (measured): its draft pass over its target pass over one
        position per row (c), and its target pass over k positions per row (v(k - 1))."""
        return Costs.measured(self.t(batch), self.d(batch), {k: self.t(batch * k) for k in ks})

    @property
    def single(self) -> float:
        return self.t(1)

    def v(self, batch: int, k: int) -> float:
        """v(B·k): a target pass over B rows of k positions, in single passes."""
        return self.t(batch * k) / self.single

    def speedup(self, alpha: float, batch: int, gamma: int) -> float:
        """The cost model's speculative / plain tokens per second at this batch size."""
        return expected_tokens(alpha, gamma) * self.t(batch) / (gamma * self.d(batch) + self.t(batch * (gamma + 1)))

    def best_gamma(self, alpha: float, batch: int, gammas=GAMMAS) -> int:
        return max(gammas, key=lambda g: self.speedup(alpha, batch, g))

    def tokens_per_s(self, alpha: float, batch: int, gamma: int | None) -> float:
        """Predicted decoding tokens per second (passes only: no per-token bookkeeping)."""
        if gamma is None:
            return batch / self.t(batch)
        return batch * expected_tokens(alpha, gamma) / (gamma * self.d(batch) + self.t(batch * (gamma + 1)))


def _pass_time(model, batch: int, k: int, prompts: list[list[int]], passes: int) -> float:
    """Lower-quartile seconds of a pass over `batch` rows of k positions, after each row's prompt."""
    lm = CachedLM(model, rows=batch)
    lm.feed({i: p for i, p in enumerate(prompts[:batch])}, keep=None)
    times = []
    for _ in range(passes + 1):  # the first pass warms up
        lm.feed({i: [prompts[i][-1]] * k for i in range(batch)}, keep="all")
        times.append(lm.last_pass_s)
        for i in range(batch):
            lm.rollback(k, i)
    return pass_seconds(times[1:])


@torch.inference_mode()
def batch_costs(target, draft, prompts: list[list[int]], batch_sizes=BATCH_SIZES,
                repeats: int = 3, passes: int = 3, *, pacing: Pacing = Pacing()) -> BatchCosts:
    """t(B, k) for every batch size and k in COST_KS, and d(B): interleaved repetitions, each the lower
    quartile of `passes` passes; a cost is the median of its repetitions (BatchCosts reads them as one
    curve over B·k positions, so the k between are interpolated)."""
    runs = {("target", b, k): (lambda b=b, k=k: _pass_time(target, b, k, prompts, passes))
            for b in batch_sizes for k in COST_KS}
    runs.update({("draft", b, 1): (lambda b=b: _pass_time(draft, b, 1, prompts, passes)) for b in batch_sizes})
    done = contest(runs, repeats, pacing=pacing)
    med = {name: statistics.median(ts) for name, ts in done.results.items()}
    return BatchCosts({(b, k): t for (kind, b, k), t in med.items() if kind == "target"},
                      {b: t for (kind, b, _), t in med.items() if kind == "draft"})


# --- the regime, measured --------------------------------------------------------------------------------

@dataclass
class BatchRow:
    batch: int
    gamma: int  # chosen from the cost model for this batch size
    plain: Measured  # decoding tokens per second
    speculative: Measured
    speedup: Measured  # speculative / plain tokens per second, repetition by repetition
    predicted_speedup: float
    predicted_plain: float  # tokens per second from pass costs alone
    predicted_speculative: float
    v: float  # v(B·(γ + 1)): the verification pass in single passes
    ttft_plain: Measured  # seconds to every row's first token
    ttft_speculative: Measured
    prefill: Measured  # the target's reading of the prompts
    draft_prefill: Measured  # the drafter's (inside the speculative first token)
    acceptance: float  # accepted / drafted in the speculative runs
    fixed_speedup: Measured | None = None  # speculative at the fixed γ / plain (a stack that does not adapt γ)
    fixed_predicted: float | None = None


@dataclass
class Regime:
    rows: list[BatchRow]
    alpha: float  # teacher-forced α of the pair on the plain runs' outputs
    costs: BatchCosts
    max_new_tokens: int
    repeats: int
    sampling: SamplingConfig
    fixed_gamma: int | None = None  # also measured at this one γ for every batch size (None: not)

    @property
    def fixed_crossover(self) -> int | None:
        """The smallest batch size where speculation at the fixed γ stopped paying (median < 1)."""
        if self.fixed_gamma is None:
            return None
        return next((r.batch for r in self.rows if r.fixed_speedup is not None and r.fixed_speedup.median < 1), None)

    @property
    def crossover(self) -> int | None:
        """The smallest measured batch size where speculation stopped paying (median speedup < 1)."""
        return next((r.batch for r in self.rows if r.speedup.median < 1), None)

    @property
    def predicted_crossover(self) -> int | None:
        return next((r.batch for r in self.rows if r.predicted_speedup < 1), None)

    @property
    def busy(self) -> bool:
        return any(r.speedup.busy or r.plain.busy for r in self.rows)

    def frame(self):
        import pandas as pd
        return pd.DataFrame([{
            "batch": r.batch, "gamma": r.gamma, "plain tok/s": r.plain.median, "spec tok/s": r.speculative.median,
            "speedup": r.speedup.median, "speedup low": r.speedup.low, "speedup high": r.speedup.high,
            "predicted speedup": r.predicted_speedup, "v(B(γ+1))": r.v,
            "predicted plain tok/s": r.predicted_plain, "predicted spec tok/s": r.predicted_speculative,
            "TTFT plain ms": 1e3 * r.ttft_plain.median, "TTFT spec ms": 1e3 * r.ttft_speculative.median,
            "target prefill ms": 1e3 * r.prefill.median, "draft prefill ms": 1e3 * r.draft_prefill.median,
            "acceptance": r.acceptance, "runs": r.speedup.n,
            **({f"speedup at γ={self.fixed_gamma}": r.fixed_speedup.median,
                f"predicted at γ={self.fixed_gamma}": r.fixed_predicted} if r.fixed_speedup is not None else {}),
        } for r in self.rows])


def _decode_tps(result) -> float:
    """All rows' new tokens per second of the batch's decoding phase (stats.decode_seconds)."""
    return result.tokens / max(decode_seconds(result), 1e-9)


@torch.inference_mode()
def measure_regime(target, draft, tokenizer, request: GenerationRequest, batch_sizes=BATCH_SIZES, *,
                   repeats: int = 3, gammas=GAMMAS, cost_repeats: int = 3, fixed_gamma: int | None = FIXED_GAMMA,
                   pacing: Pacing = Pacing()) -> Regime:
    """Plain and speculative decoding at each batch size (γ from the measured cost model, and at
    `fixed_gamma` too unless None), every row asked for `request` on its held-out prompt (row i seeded
    seed + i, as `batch.batch_generate` does; the template's own prompt is not used), with the
    prediction beside them and the time to first token; the pacing's fraction and text between runs,
    each run in its slot."""
    batch_sizes = sorted(set(batch_sizes))
    if not batch_sizes or batch_sizes[0] < 1 or batch_sizes[-1] > MAX_BATCH:
        raise ValueError(f"batch sizes must lie in [1, {MAX_BATCH}], got {batch_sizes}")
    prompts = bench_prompts(tokenizer, batch_sizes[-1])
    costs = batch_costs(target, draft, prompts, batch_sizes, cost_repeats, pacing=pacing.part(0.0, 0.2))
    sampling = request.sampling
    asked = dict(max_new_tokens=request.max_new_tokens, sampling=sampling, seed=request.seed or 0,
                 eos_token_id=request.eos_token_id)
    with pacing.slot():
        sample = batch_generate(target, None, prompts[:min(8, len(prompts))], **asked)
        alpha = acceptance(target, draft, [p + r.tokens for p, r in zip(prompts, sample.results)], sampling)["alpha"]
    rows = []
    for n, b in enumerate(batch_sizes):
        gamma = costs.best_gamma(alpha, b, gammas)
        batch = prompts[:b]
        contestants = {
            "plain": lambda batch=batch: batch_generate(target, None, batch, **asked),
            "speculative": lambda batch=batch, gamma=gamma: batch_generate(target, draft, batch, gamma=gamma, **asked),
        }
        if fixed_gamma is not None:
            contestants["fixed"] = lambda batch=batch: batch_generate(target, draft, batch, gamma=fixed_gamma, **asked)
        share = 0.8 / len(batch_sizes)
        runs = contest(contestants, repeats, pacing=pacing.part(0.2 + share * n, 0.2 + share * (n + 1)))
        plain, spec = runs.results["plain"], runs.results["speculative"]
        drafted = sum(res.drafted for r in spec for res in r.results)
        accepted = sum(res.accepted for r in spec for res in r.results)
        rows.append(BatchRow(
            b, gamma, runs.measured("plain", _decode_tps), runs.measured("speculative", _decode_tps),
            runs.ratios("speculative", "plain", _decode_tps),
            costs.speedup(alpha, b, gamma), costs.tokens_per_s(alpha, b, None), costs.tokens_per_s(alpha, b, gamma),
            costs.v(b, gamma + 1), measured(r.first_token_s for r in plain), measured(r.first_token_s for r in spec),
            measured(r.prefill_s for r in plain + spec), measured(r.draft_prefill_s for r in spec),
            accepted / drafted if drafted else float("nan"),
            runs.ratios("fixed", "plain", _decode_tps) if fixed_gamma is not None else None,
            costs.speedup(alpha, b, fixed_gamma) if fixed_gamma is not None else None))
    return Regime(rows, alpha, costs, request.max_new_tokens, repeats, sampling, fixed_gamma)


def summary(regime: Regime) -> list[str]:
    """The findings in sentences, every number from the measurement."""
    first, last = regime.rows[0], regime.rows[-1]
    out = [f"Plain decoding: {last.plain.median:.0f} tokens/s at batch {last.batch} against {first.plain.median:.0f} "
           f"at batch {first.batch} ({last.plain.median / first.plain.median:.1f}×).",
           f"Speculative / plain: {first.speedup.text()} at batch {first.batch} (γ = {first.gamma}), "
           f"{last.speedup.text()} at batch {last.batch} (γ = {last.gamma}).",
           ("Speculation stopped paying at batch " + str(regime.crossover) if regime.crossover is not None else
            f"Speculation still paid at batch {last.batch}, the largest measured")
           + (f"; the cost model predicted batch {regime.predicted_crossover}." if regime.predicted_crossover
              else "; the cost model predicted no crossover in this range."),
           *([f"At a fixed γ = {regime.fixed_gamma} for every batch size: {first.fixed_speedup.text()} at batch "
              f"{first.batch}, {last.fixed_speedup.text()} at batch {last.batch}; "
              + (f"it stopped paying at batch {regime.fixed_crossover}." if regime.fixed_crossover
                 else "it still paid at the largest batch.")] if regime.fixed_gamma is not None else []),
           f"Time to first token at batch {first.batch}: plain {1e3 * first.ttft_plain.median:.0f} ms, speculative "
           f"{1e3 * first.ttft_speculative.median:.0f} ms (the drafter reads the prompt too, and a round must end "
           "before its first token counts)."]
    if regime.busy:
        out.append("The repetitions disagreed by more than a quarter at some batch size: the machine was busy.")
    return out


def progress_printer(log: Callable[[str], None]) -> Progress:
    last = [-1]

    def show(fraction: float, text: str) -> None:
        step = int(fraction * 10)
        if step != last[0]:
            last[0] = step
            log(f"  {fraction:4.0%} {text}")
    return show
