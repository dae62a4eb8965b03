"""Drafters side by side on held-out prompts, by the one measurement method (`analysis.stats`):
the distilled draft model, the Medusa heads and the EAGLE drafter, at one draft length.

Per drafter: tokens per target pass, mean acceptance length, acceptance by draft position (vLLM's
unconditional rate and the conditional accepted / reached), c (its warm pass / a target pass, from
the passes its own runs made), the wall-clock speedup over plain decoding (interleaved repetitions,
median and spread), and how well its confidence predicts the target's verdict: the calibration table
and the AUC of its raw top probability against acceptance (greedy: accepted or not).

Counts come from one traced run per prompt (the same seed gives every repetition the same tokens);
the clock from untraced runs, interleaved prompt by prompt with plain decoding.
"""
import itertools

import torch

from ..policies import make_policy
from ..request import GenerationRequest
from ..speculative import autoregressive_generate, speculative_generate
from ..tree import tree_generate
from ..tree_draft import tree_size
from .pass_costs import PassTimes
from .round_stats import (
    acceptance_by_position,
    calibration,
    checked,
    mean_acceptance_length,
    per_position_acceptance_rate,
)
from .stats import Pacing, interleave, ratios

PLAIN = "plain decoding"


@torch.inference_mode()
def vocabulary_coverage(target, d2t: torch.Tensor, texts: list[list[int]]) -> dict:
    """How much of the target a reduced draft vocabulary (d2t) can match, over every position of `texts`:
    the mean of the target's probability mass inside it (at T = 1 a draft is accepted with probability
    at most that: sum over x of min(p(x), q(x)) <= p(draft vocabulary)) and the share of positions whose
    top token it holds (greedy)."""
    mass, top, n = 0.0, 0, 0
    for ids in texts:
        p = torch.softmax(target(input_ids=torch.tensor([ids])).logits[0].float(), -1)  # (T, V)
        mass += p[:, d2t].sum().item()
        top += torch.isin(p.argmax(-1), d2t).sum().item()
        n += len(ids)
    return {"tokens": len(d2t), "mass": mass / n, "top": top / n, "positions": n}


def auc(scores: list[float], labels: list[bool]) -> float:
    """Area under the ROC curve: the chance that a random accepted draft had a higher score than a
    random rejected one (ties count half; Mann-Whitney U / (n_pos * n_neg)). NaN without both kinds."""
    pos = sorted(s for s, y in zip(scores, labels) if y)
    neg = sorted(s for s, y in zip(scores, labels) if not y)
    if not pos or not neg:
        return float("nan")
    ranked = sorted([(s, 1) for s in pos] + [(s, 0) for s in neg])
    rank_sum, i = 0.0, 0
    while i < len(ranked):  # average ranks over ties
        j = i
        while j < len(ranked) and ranked[j][0] == ranked[i][0]:
            j += 1
        mean_rank = (i + j + 1) / 2  # ranks i + 1 .. j
        rank_sum += mean_rank * sum(flag for _, flag in ranked[i:j])
        i = j
    return (rank_sum - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))


def confidence_auc(rounds, signal: str = "top") -> float:
    """AUC of the drafter's raw confidence ("top" probability or "margin") for the judged drafts
    against the target's verdict (accepted: min(1, p/q) >= 0.5, which in greedy mode is agreement)."""
    scores, labels = [], []
    for r in rounds:
        conf = r.draft_top if signal == "top" else r.draft_margin
        if conf is None:
            continue
        n = checked(r)
        scores += conf[:n]
        labels += [a >= 0.5 for a in r.accept_prob[:n]]
    return auc(scores, labels)


def compare_drafters(target, drafters: dict, prompts: list[list[int]], request: GenerationRequest, *, gamma: int = 5,
                     repeats: int = 3, pacing: Pacing = Pacing()) -> dict:
    """Every drafter (label -> drafter) at draft length `gamma` on every prompt, each asked for `request`
    at its fixed length (prompt i seeded seed + i): the figures of the module's docstring, one row per
    drafter, and plain decoding's seconds for reference."""
    request = request.fixed_length()
    asked = [request.for_prompt(prompt, i) for i, prompt in enumerate(prompts)]
    rows, traced = [], {label: [] for label in drafters}
    for one in asked:  # the counts: one traced run per prompt
        for label, drafter in drafters.items():
            traced[label].append(speculative_generate(target, drafter, one, gamma=gamma))
    times = PassTimes()
    seconds = {name: [] for name in [PLAIN, *drafters]}  # per (prompt, repetition)
    for i, one in enumerate(asked):  # the clock: untraced runs, interleaved with plain decoding
        def plain(one=one):
            res = autoregressive_generate(target, one)
            times.add(res)
            return res.total_s - res.prefill_s

        def spec(label, one=one):
            res = speculative_generate(target, drafters[label], one, gamma=gamma, trace=False)
            times.add(res, label)
            return res.total_s - res.prefill_s

        runs = {PLAIN: plain, **{label: (lambda label=label: spec(label)) for label in drafters}}
        for name, values in interleave(runs, repeats, pacing=Pacing(pacing.slot)).items():
            seconds[name].append(values)
        pacing.report((i + 1) / len(prompts), f"prompt {i + 1} of {len(prompts)}")
    per_rep = {name: [sum(v[r] for v in values) for r in range(repeats)] for name, values in seconds.items()}
    for label in drafters:
        results = traced[label]
        rounds = [r for res in results for r in res.rounds]
        tokens = sum(len(res.tokens) for res in results)
        speedup = ratios(per_rep[PLAIN], per_rep[label])
        rows.append({
            "drafter": label, "tokens_per_pass": tokens / sum(res.target_passes for res in results),
            "mean_acceptance_length": mean_acceptance_length(rounds),
            "per_position": per_position_acceptance_rate(rounds, gamma),
            "conditional": acceptance_by_position(rounds, gamma)["rate"].tolist(),
            "c": times.profile(label).c, "speedup": speedup.median, "measured": speedup,
            "auc_top": confidence_auc(rounds, "top"), "auc_margin": confidence_auc(rounds, "margin"),
            "calibration": calibration(rounds, "top", bins=8), "rounds": rounds})
    return {"rows": rows, "gamma": gamma, "repeats": repeats, "prompts": len(prompts), "sampling": request.sampling,
            "max_new_tokens": request.max_new_tokens}


def shapes_of_size(nodes: int, max_depth: int = 6, max_branching: int = 4) -> list[tuple[int, ...]]:
    """Every static tree shape with exactly `nodes` nodes (branching factors 1..max_branching per depth)."""
    return [shape for depth in range(1, max_depth + 1)
            for shape in itertools.product(range(1, max_branching + 1), repeat=depth) if tree_size(shape) == nodes]


def tree_comparison(target, drafter, prompts: list[list[int]], request: GenerationRequest, nodes: int,
                    depth: int) -> dict:
    """Tokens per target pass of the best-first tree of `nodes` nodes (at most `depth` deep, EAGLE-2's
    growth by the drafter's confidence) against every static shape of exactly `nodes` nodes, each asked
    for `request` on every prompt at its fixed length (prompt i seeded seed + i)."""
    request = request.fixed_length()

    def per_pass(shape, budget):
        results = [tree_generate(target, drafter, request.for_prompt(p, i), shape=shape, node_budget=budget, trace=False)
                   for i, p in enumerate(prompts)]
        return sum(len(r.tokens) for r in results) / sum(r.target_passes for r in results)

    static = {shape: per_pass(shape, None) for shape in shapes_of_size(nodes, max_depth=depth)}
    best = max(static, key=static.get)
    best_first = per_pass((1,) * depth, nodes)
    return {"nodes": nodes, "depth": depth, "best_first": best_first, "static": static, "best_static": best,
            "ratio": best_first / static[best]}


def policy_comparison(target, drafter, prompts: list[list[int]], request: GenerationRequest, gammas=range(1, 9),
                      thresholds=(0.5,), *, repeats: int = 3, pacing: Pacing = Pacing()) -> dict:
    """The confidence stop (draft while the top probability stays >= threshold, up to max(gammas)) at
    each threshold against every fixed gamma, measured against plain decoding
    (`policy_compare.compare_policies`, which takes `prompts` and `request` as they are here): the
    best of each kind and their ratio."""
    from .policy_compare import PLAIN as PLAIN_LABEL
    from .policy_compare import compare_policies
    policies = {f"γ = {g}": g for g in gammas}
    policies.update({f"confidence ≥ {t:g}": make_policy("confidence", 1, max(gammas), t, "top") for t in thresholds})
    out = compare_policies(target, drafter, prompts, policies, request, repeats=repeats, pacing=pacing)
    plain = out.pop(PLAIN_LABEL)
    speed = {label: c.speedup(plain) for label, c in out.items()}
    best_of = lambda kind: max((k for k in speed if k.startswith(kind)), key=lambda k: speed[k].median)
    best_fixed, best_stop = best_of("γ"), best_of("confidence")
    return {"speedups": speed, "best_fixed": best_fixed, "best_stop": best_stop,
            "ratio": speed[best_stop].median / speed[best_fixed].median, "thresholds": list(thresholds)}
