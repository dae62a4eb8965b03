"""Acceptance rules that serving stacks ship lossy ON PURPOSE: they accept more drafts than the exact
rule, so more tokens come out of each target pass, and in exchange the output is no longer the
target's distribution. The exactness lab shows each one failing the chi-square test the exact rule
passes; `RULES` maps each rule's name to a `Rule` usable as `speculative_generate(..., rule=...)`.

- Typical acceptance (Cai et al., "Medusa", 2024; vLLM's TypicalAcceptanceSampler): keep a draft
  when the target finds it plausible enough, p(x) > min(epsilon, delta * exp(-H(p))), whatever q
  was. High-entropy positions lower the bar. After a rejection, Medusa's own rule: draw from p with
  every token below the same threshold removed (`get_typical_one_token` in FasterDecoding/Medusa,
  medusa/model/utils.py; greedy: p is one-hot, so that is the argmax). The rejected draft had
  p(x) <= threshold, so it cannot come straight back (unless p(x) equals the threshold exactly).
  vLLM's TypicalAcceptanceSampler first took the target's argmax at the first rejected position
  (`_replacement_token_ids`, vllm-project/vllm PR #5131) and now the target's own sampled token there,
  a draw from untruncated p (PR #8562); ours follows Medusa, not vLLM.
- Relaxed acceptance: keep a draft when it is among the target's top_k tokens, or within delta of
  the target's top probability; otherwise judge it by the exact rule. TensorRT-LLM's relaxed
  acceptance for multi-token prediction (relaxed_topk, relaxed_delta) keeps a draft that is among
  the top candidates AND close to the top; this is the looser either-or form of the same idea. In
  greedy mode p is one-hot and cannot rank, so the rule ranks the target's raw logits (softmax at
  temperature 1): unlike the exact rule, it can then emit a token that is not the target's argmax.

Defaults follow the published ones where there are some (Medusa's epsilon 0.09, delta 0.3).
"""
from functools import partial

import torch

from .speculative import Rows, Rule, exact_acceptance, exact_residual

TYPICAL_EPSILON = 0.09  # Medusa's posterior_threshold: the bar for a confident (low-entropy) target
TYPICAL_DELTA = 0.3  # Medusa's posterior_alpha: the bar scales with exp(-entropy) below epsilon
RELAXED_TOP_K = 2  # a draft among the target's 2 most likely tokens is kept
RELAXED_DELTA = 0.2  # ... or one whose probability is within 0.2 of the top one


def entropy(p: torch.Tensor) -> torch.Tensor:
    """Shannon entropy in nats over the last dimension (0 log 0 = 0)."""
    return torch.special.entr(p).sum(-1)


def typical_threshold(p: torch.Tensor, epsilon: float, delta: float) -> torch.Tensor:
    """(...,) min(epsilon, delta * exp(-H(p))) for rows p (..., V): Medusa's posterior threshold."""
    return torch.clamp(delta * torch.exp(-entropy(p)), max=epsilon)


def _typical_acceptance(rows: Rows, epsilon: float, delta: float) -> torch.Tensor:
    threshold = typical_threshold(rows.p, epsilon, delta)  # (n,)
    return (rows.p_x > threshold).to(rows.p.dtype)  # q plays no part: lossy


def _typical_fallback(rows: Rows, i: int, epsilon: float, delta: float) -> torch.Tensor:
    """(V,) Medusa's draw after a rejection: p without the tokens below the threshold, renormalised.
    The top token always stays: exp(-H(p)) <= max p, and delta < 1 for the defaults."""
    p = rows.p[i]
    kept = torch.where(p < typical_threshold(p, epsilon, delta), torch.zeros_like(p), p)
    return kept / kept.sum()


def _ranking_probs(rows: Rows) -> torch.Tensor:
    """(n, V) what the relaxed rule ranks: p, or in greedy mode (one-hot p) the raw target softmax."""
    if not rows.sampling.greedy:
        return rows.p
    if rows.target_logits is None:
        raise ValueError("the relaxed rule needs the target's logits in greedy mode (pass target_logits to verify)")
    return torch.softmax(rows.target_logits.float(), dim=-1)


def _relaxed_acceptance(rows: Rows, top_k: int, delta: float) -> torch.Tensor:
    probs = _ranking_probs(rows)  # (n, V)
    probs_x = probs[torch.arange(len(rows.x)), rows.x]  # (n,)
    rank = (probs > probs_x[:, None]).sum(-1)  # (n,) how many tokens the target prefers to x
    near_top = probs_x >= probs.max(-1).values - delta
    relaxed = ((rank < top_k) | near_top) & (probs_x > 0)  # never a token the sampling settings cut
    return torch.where(relaxed, torch.ones_like(probs_x), exact_acceptance(rows).to(probs_x.dtype))


def typical_acceptance(epsilon: float = TYPICAL_EPSILON, delta: float = TYPICAL_DELTA,
                       name: str = "typical acceptance") -> Rule:
    """Medusa's typical acceptance with threshold min(epsilon, delta * exp(-H(p)))."""
    if not 0 < epsilon <= 1 or not delta > 0:
        raise ValueError(f"epsilon must be in (0, 1] and delta > 0, got epsilon={epsilon!r}, delta={delta!r}")
    return Rule(name, partial(_typical_acceptance, epsilon=epsilon, delta=delta),
                partial(_typical_fallback, epsilon=epsilon, delta=delta))


def relaxed_acceptance(top_k: int = RELAXED_TOP_K, delta: float = RELAXED_DELTA,
                       name: str = "relaxed acceptance") -> Rule:
    """Keep a draft in the target's top_k or within delta of its top probability, else the exact rule."""
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1 or not 0 <= delta <= 1:
        raise ValueError(f"top_k must be an integer >= 1 and delta in [0, 1], got top_k={top_k!r}, delta={delta!r}")
    return Rule(name, partial(_relaxed_acceptance, top_k=top_k, delta=delta), exact_residual)


TYPICAL = typical_acceptance()
RELAXED = relaxed_acceptance()
RULES = {rule.name: rule for rule in (TYPICAL, RELAXED)}
