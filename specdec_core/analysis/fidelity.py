"""How far a faster model is from the target: token agreement, distance between next-token
distributions, and speed, for the lossy variants of `specdec_core.variants` and for speculative
decoding in the same table.

Agreement teacher-forced: on every position of held-out text, does the variant's argmax equal the
target's? Free-running: both decode greedily from the same prompt; the share of positions at which
the two continuations hold the same token, and where they first part. Distance: the mean total
variation distance 1/2 sum_y |p(y) - p'(y)| between the target's next-token distribution p and the
variant's p' on the same contexts (temperature 1, no truncation: the models' own distributions).

Speculative decoding's row is not assumed: its per-position output distribution is computed from the
real p and q with the exact rule, min(p, q) + (1 - sum min(p, q)) * residual, and compared with p
(zero up to float rounding), and its greedy output is compared with the target's token by token.

Speed is measured the project's one way (`analysis.stats`): every contestant decodes every prompt
once per repetition, the contestants interleaved (A B C, then C B A), and the figure is the median of
the repetitions' ratios, fp32 target seconds per token / contestant seconds per token (prefill left
out), with their range. A variant that is only simulated here has no speed: it runs once, for its tokens.
"""
import json
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..drafters import as_drafter
from ..request import GenerationRequest
from ..sampling_config import SamplingConfig
from ..speculative import Rows, Rule, autoregressive_generate, residual_distribution, speculative_generate
from ..theory import alpha_of
from ..trace import GenerationResult
from ..variants import Variant
from .pass_costs import PassTimes
from .stats import Measured, Pacing, contest, decode_s_per_token, ratios

TARGET = "fp32 target"
SPECULATIVE = "speculative decoding"
HELD_OUT = Path(__file__).resolve().parents[2] / "assets" / "bench_prompts.json"  # cut from plays never trained on


def held_out_prompts(tokenizer, limit: int | None = None, kind: str | None = "open") -> list[tuple[str, list[int]]]:
    """(name, token ids) of the held-out benchmark prompts of `kind` ("open", "repetitive", None: all)."""
    prompts = [p for p in json.loads(HELD_OUT.read_text())["prompts"] if kind is None or p["kind"] == kind]
    return [(p["name"], tokenizer.encode(p["text"])) for p in prompts[:limit]]


# --- distances -------------------------------------------------------------------------------------

def tv_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Total variation distance 1/2 sum |a - b| over the last dimension."""
    return 0.5 * (a - b).abs().sum(-1)


def speculative_output(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """(..., V) the exact rule's output distribution at a position: the accept branch gives
    min(p, q), a rejection (mass 1 - sum min(p, q)) draws from the residual."""
    accepted = torch.minimum(p, q)
    rejection = 1.0 - accepted.sum(-1, keepdim=True)
    return accepted + rejection * residual_distribution(p, q)


def rule_output_distribution(rule: Rule, p: torch.Tensor, q: torch.Tensor,
                             sampling: SamplingConfig = SamplingConfig(),
                             target_logits: torch.Tensor | None = None) -> torch.Tensor:
    """(V,) the exact distribution of the token a rule emits at one drafted position, x ~ q judged
    against p: sum_x q(x) [a(x) 1{y = x} + (1 - a(x)) r_x(y)], with a the rule's acceptance and r_x
    its residual after rejecting x. Equal to p for an exact rule."""
    vocab = p.shape[-1]
    x = torch.arange(vocab)
    rows = Rows(p.expand(vocab, vocab), q.expand(vocab, vocab), x, sampling,
                None if target_logits is None else target_logits.expand(vocab, vocab))  # row i judges x = i
    a = rule.acceptance_probability(rows).to(p.dtype)  # (V,)
    out = q * a
    reject = q * (1 - a)  # (V,) chance of drafting x and rejecting it
    for i in torch.nonzero(reject > 0).flatten().tolist():
        out = out + reject[i] * rule.residual(rows, i).to(p.dtype)
    return out


# --- agreement and distance on held-out text --------------------------------------------------------

@torch.inference_mode()
def _logits(model, ids: list[int]) -> torch.Tensor:
    x = torch.tensor([ids], device=next(model.parameters()).device)
    return model(x).logits[0].float().cpu()  # (len(ids), V)


@torch.inference_mode()
def teacher_forced(target, model, sequences: list[list[int]]) -> dict:
    """On every position of `sequences`: share of positions where `model`'s argmax is the target's,
    and the mean total variation distance between the two next-token distributions."""
    agree, distance, n = 0, 0.0, 0
    for ids in sequences:
        p_logits, m_logits = _logits(target, ids), _logits(model, ids)
        agree += int((p_logits.argmax(-1) == m_logits.argmax(-1)).sum())
        distance += float(tv_distance(torch.softmax(p_logits, -1), torch.softmax(m_logits, -1)).sum())
        n += len(ids)
    return {"agreement": agree / n, "distance": distance / n, "positions": n}


@torch.inference_mode()
def speculative_teacher_forced(target, draft, sequences: list[list[int]]) -> dict:
    """The same figures for speculative decoding with `draft`: its output distribution at each position
    is computed from the real p and q with the exact rule, not assumed to be p."""
    agree, distance, worst, alpha, n = 0, 0.0, 0.0, 0.0, 0
    for ids in sequences:  # in float64, so that what is left is the rule's error, not p's own rounding
        p = torch.softmax(_logits(target, ids).double(), -1)
        q = torch.softmax(_logits(draft, ids).double(), -1)
        out = speculative_output(p, q)  # (len(ids), V)
        d = tv_distance(out, p)
        agree += int((out.argmax(-1) == p.argmax(-1)).sum())
        distance, worst = distance + float(d.sum()), max(worst, float(d.max()))
        alpha += float(alpha_of(p, q).sum())
        n += len(ids)
    return {"agreement": agree / n, "distance": distance / n, "max_distance": worst, "alpha": alpha / n,
            "positions": n}


def free_running_agreement(reference: list[int], tokens: list[int]) -> dict:
    """Share of positions holding the same token in two continuations, and the first that differs."""
    n = max(len(reference), 1)
    same = sum(a == b for a, b in zip(reference, tokens))
    first = next((i for i, (a, b) in enumerate(zip(reference, tokens)) if a != b), None)
    if first is None and len(reference) != len(tokens):
        first = min(len(reference), len(tokens))
    return {"agreement": same / n, "first_difference": first}


# --- speed, the project's one way (analysis.stats) --------------------------------------------------

@dataclass
class Runs:
    """One contestant's generations: its tokens per prompt (greedy: the same in every repetition), every
    result of every repetition, and seconds per token of each timed repetition (none if untimed)."""
    tokens: dict[int, list[int]] = field(default_factory=dict)
    results: list[GenerationResult] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


def interleaved_runs(contestants: dict[str, Callable[[list[int]], GenerationResult]], prompts: list[list[int]],
                     repeats: int = 3, untimed: tuple[str, ...] = (), *, pacing: Pacing = Pacing()) -> dict[str, Runs]:
    """Every contestant decodes every prompt once per repetition, as one `stats.contest` (interleaved,
    after one untimed warm-up each on the first prompt); contestants in `untimed` run once, for their
    tokens only."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= 20:
        raise ValueError(f"repeats must be an integer in [1, 20], got {repeats!r}")
    timed = [name for name in contestants if name not in untimed]
    batch = lambda name: lambda: [contestants[name](ids) for ids in prompts]
    for name in timed:  # warm-up on the first prompt only: first calls allocate, later ones only compute
        pacing.run(lambda name=name: contestants[name](prompts[0]))
    share = len(timed) * repeats / max(1, len(timed) * repeats + len(untimed))
    results = contest({name: batch(name) for name in timed}, repeats, pacing=pacing.part(0.0, share)).results
    for name in untimed:
        results[name] = [pacing.run(batch(name))]
        pacing.report(share + (1 - share) * (untimed.index(name) + 1) / len(untimed), f"{name} (simulated, untimed)")
    runs = {name: Runs() for name in contestants}
    for name, reps in results.items():
        runs[name].results = [r for rep in reps for r in rep]
        runs[name].tokens = {j: r.tokens for j, r in enumerate(reps[-1])}
        if name in timed:
            runs[name].seconds = [decode_s_per_token(rep) for rep in reps]
    return runs


def speedup(base: Runs, other: Runs) -> Measured | None:
    """base / other seconds per token, repetition by repetition (median and range); None if untimed."""
    return ratios(base.seconds, other.seconds) if other.seconds else None


# --- the table: every variant, speculative decoding, and each variant as a drafter ----------------

def drafter_label(name: str) -> str:
    return f"{name} as drafter"


@dataclass
class FidelityReport:
    rows: list[dict]  # one per variant, then speculative decoding: the "lossless vs everything else" table
    bridge: list[dict]  # one per variant used as the drafter of the fp32 target
    runs: dict[str, Runs]  # every generation, by contestant (TARGET, variant names, SPECULATIVE, drafter labels)
    prompts: list[list[int]]
    n_tokens: int
    gamma: int
    repeats: int


def _row(name, kind, how, fidelity, runs: Runs, base: Runs, real: bool) -> dict:
    free = [free_running_agreement(base.tokens[j], runs.tokens[j]) for j in sorted(base.tokens)]
    firsts = [f["first_difference"] for f in free if f["first_difference"] is not None]
    return {"name": name, "kind": kind, "how": how, "speed": speedup(base, runs) if real else None,
            "teacher_forced_agreement": fidelity["agreement"], "distance": fidelity["distance"],
            "free_running_agreement": statistics.mean(f["agreement"] for f in free),
            "identical_prompts": len(free) - len(firsts), "first_difference": min(firsts) if firsts else None,
            "prompts": len(free)}


def _acceptance(runs: Runs) -> dict:
    results = runs.results
    drafted, accepted = sum(r.drafted for r in results), sum(r.accepted for r in results)
    passes, tokens = sum(r.target_passes for r in results), sum(len(r.tokens) for r in results)
    # accepted / drafted is not alpha (the mean over judged drafts): drafts after a rejection are never judged.
    return {"accepted_per_drafted": accepted / drafted if drafted else None,
            "tokens_per_pass": tokens / passes if passes else None}


def fidelity_report(target, draft, variants: dict[str, Variant], prompts: list[list[int]], request: GenerationRequest,
                    *, gamma: int = 4, repeats: int = 3, pacing: Pacing = Pacing()) -> FidelityReport:
    """Measure every variant against the fp32 target on `prompts` (held-out token ids), each asked for the
    greedy `request` at its fixed length: speed where the variant is real, teacher-forced and
    free-running agreement, distance; speculative decoding with `draft` in the same table; then each
    variant as the drafter (alpha, c, speedup, exactness). c comes from the runs' own passes; the
    pacing's slot is taken around each run (`stats.contest`)."""
    if not prompts:
        raise ValueError("prompts is empty: pass at least one held-out prompt")
    if not request.sampling.greedy:
        raise ValueError("the request must be greedy: the agreements compare continuations token by token")
    request = request.fixed_length()
    plain = lambda model: lambda ids: autoregressive_generate(model, request.for_prompt(ids))
    spec = lambda d: lambda ids: speculative_generate(target, d, request.for_prompt(ids), gamma=gamma, trace=False)
    contestants = {TARGET: plain(target), **{name: plain(v.model) for name, v in variants.items()},
                   SPECULATIVE: spec(as_drafter(draft))}
    as_drafters = {name: v for name, v in variants.items() if v.model is not draft}
    contestants.update({drafter_label(name): spec(as_drafter(v.model)) for name, v in as_drafters.items()})
    untimed = tuple(name for name, v in variants.items() if not v.speed_real) + tuple(
        drafter_label(name) for name, v in as_drafters.items() if not v.speed_real)
    runs = interleaved_runs(contestants, prompts, repeats, untimed, pacing=pacing.part(0.0, 0.9))
    base = runs[TARGET]
    passes = PassTimes()  # c from the runs' own passes: the target's plain ones, each drafter's in its rounds
    for r in base.results:
        passes.add(r)
    for name, v in variants.items():
        label = SPECULATIVE if v.model is draft else drafter_label(name)
        if v.speed_real:
            for r in runs[label].results:
                passes.add(r, label)

    pacing.report(0.9, "Agreement and distance, teacher-forced…")
    with pacing.slot():
        forced = {name: teacher_forced(target, v.model, prompts) for name, v in variants.items()}
        exact = speculative_teacher_forced(target, draft, prompts)
    rows = [_row(name, v.kind, v.how, forced[name], runs[name], base, v.speed_real) for name, v in variants.items()]
    rows.append({**_row(SPECULATIVE, "speculative", f"the fp32 target, drafted by the bundled drafter (γ = {gamma})",
                        exact, runs[SPECULATIVE], base, True), "max_distance": exact["max_distance"]})

    bridge = []
    for name, v in variants.items():
        label = SPECULATIVE if v.model is draft else drafter_label(name)
        own = runs[label]
        identical = sum(own.tokens[j] == base.tokens[j] for j in base.tokens)
        bridge.append({"drafter": name, "bundled": v.model is draft, **_acceptance(own),
                       "c": passes.profile(label).c if v.speed_real else None,
                       "speed": speedup(base, own) if v.speed_real else None,
                       "identical_prompts": identical, "prompts": len(base.tokens)})
    pacing.report(1.0, "Done")
    return FidelityReport(rows, bridge, runs, prompts, request.max_new_tokens, gamma, repeats)
