"""α (acceptance) by teacher forcing: E[sum_x min(p(x), q(x))] over held-out positions, with both
models reading the same text; greedy α is the probability that the two argmaxes agree. (α measured
over a generation's own rounds is `round_stats.measured_alpha`.)"""
import torch

from ..sampling_config import SamplingConfig, to_probs
from ..theory import alpha_of


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
