"""Measurements of a pair on this hardware: pass costs (c and v), and acceptance rates (alpha).

c = median draft single-token pass / median target single-token pass (KV cache, warm).
v(k) = median target pass over k new positions / median single-position pass.
alpha = E[sum_x min(p(x), q(x))] over held-out positions (teacher forcing); greedy alpha is the
probability that the two argmaxes agree.
"""
import statistics
import time
from dataclasses import dataclass

import torch

from ..lm import CachedLM
from ..sampling import SamplingConfig, to_probs
from ..theory import alpha_of


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


@dataclass
class CostProfile:
    target_s: float  # one target pass, one position
    draft_s: float  # one draft pass, one position
    verify_s: dict[int, float]  # k -> one target pass over k positions

    @property
    def c(self) -> float:
        return self.draft_s / self.target_s

    def v(self, gamma: int) -> float:
        """Cost of verifying gamma drafts (a pass over gamma + 1 positions) in single passes."""
        k = gamma + 1
        if k in self.verify_s:
            return self.verify_s[k] / self.target_s
        ks = sorted(self.verify_s)  # linear interpolation between measured points
        lo = max((x for x in ks if x <= k), default=ks[0])
        hi = min((x for x in ks if x >= k), default=ks[-1])
        if lo == hi:
            return self.verify_s[lo] / self.target_s
        t = self.verify_s[lo] + (self.verify_s[hi] - self.verify_s[lo]) * (k - lo) / (hi - lo)
        return t / self.target_s


def cost_profile(target, draft, ks=range(1, 10), context: int = 64, repeats: int = 30,
                 forward: str = "core") -> CostProfile:
    """Measure c and v(k) for a pair; passes interleave so both models see the same machine load."""
    target_s, draft_s = [], []
    for _ in range(3):
        target_s.append(pass_cost(target, 1, context, repeats // 3 or 1, forward=forward))
        draft_s.append(pass_cost(draft, 1, context, repeats // 3 or 1, forward=forward))
    verify = {k: pass_cost(target, k, context, repeats // 3 or 1, forward=forward) for k in ks}
    t1 = statistics.median(target_s)
    verify[1] = t1
    return CostProfile(t1, statistics.median(draft_s), verify)


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
