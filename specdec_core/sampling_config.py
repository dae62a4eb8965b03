"""The transform: sampling settings, and the one function that turns logits into the distribution we
sample from (no loop here: the decoding loops are speculative.py, their shared skeleton bookkeeping.py).

The same transformation is applied to the target's logits (giving p) and the drafter's (giving q).
Speculative sampling is exact with respect to the *transformed* p: that is the target distribution.
"""
import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class SamplingConfig:
    temperature: float = 1.0  # 0 means greedy: the distribution is one-hot on the argmax
    top_k: int | None = None  # keep only the k most likely tokens (None: all)
    top_p: float | None = None  # nucleus: drop the least likely tokens whose total is <= 1 - top_p (None: all)

    def __post_init__(self):
        t = self.temperature
        if not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
            raise ValueError(f"temperature must be a finite number >= 0 (0 = greedy), got {t!r}")
        if self.top_k is not None and (not isinstance(self.top_k, int) or self.top_k < 1):
            raise ValueError(f"top_k must be an integer >= 1 or None, got {self.top_k!r}")
        p = self.top_p
        if p is not None and (not isinstance(p, (int, float)) or not math.isfinite(p) or not 0 < p <= 1):
            raise ValueError(f"top_p must be in (0, 1] or None, got {p!r}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    @classmethod
    def from_controls(cls, temperature: float, top_k: int = 0, top_p: float = 1.0) -> "SamplingConfig":
        """The config for the app's controls, where top_k = 0 and top_p = 1 mean "off"."""
        return cls(float(temperature), top_k or None, float(top_p) if top_p < 1 else None)


GREEDY = SamplingConfig(temperature=0.0)


def to_probs(logits: torch.Tensor, sampling: SamplingConfig) -> torch.Tensor:
    """Probabilities (float32, rows sum to 1) after temperature, top-k and top-p, for logits of shape (..., V).
    The same tokens survive as with transformers' TemperatureLogitsWarper, TopKLogitsWarper and
    TopPLogitsWarper applied in that order (the order generate() uses)."""
    logits = logits.float()
    if sampling.greedy:  # one-hot on the argmax, written straight into float32 (one_hot makes int64)
        return torch.zeros_like(logits).scatter_(-1, logits.argmax(-1, keepdim=True), 1.0)
    logits = logits / sampling.temperature
    if sampling.top_k is not None and sampling.top_k < logits.shape[-1]:
        kth = torch.topk(logits, sampling.top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if sampling.top_p is not None and sampling.top_p < 1:
        # transformers' rule, to the float: from the least likely token up, drop tokens while their
        # running total stays <= 1 - top_p; the most likely token always stays. (Counting from the top
        # instead keeps a different set at exact boundaries, where float sums land on either side.)
        ascending, order = torch.sort(logits, dim=-1)
        drop_sorted = ascending.softmax(-1).cumsum(-1) <= 1 - sampling.top_p
        drop_sorted[..., -1] = False
        logits = logits.masked_fill(drop_sorted.scatter(-1, order, drop_sorted), float("-inf"))
    return torch.softmax(logits, dim=-1)


def sample(probs: torch.Tensor, generator: torch.Generator) -> int:
    """One token id drawn from a 1-D probability vector with the caller's generator."""
    return int(torch.multinomial(probs, 1, generator=generator))
