"""A causal LM with its own KV cache: prefill, extend by k tokens in ONE forward pass, roll back n tokens.

One `CachedLM` belongs to one generation call. The model it wraps is shared and read-only (many
sessions use one cached model), so every call makes its own cache: nothing mutable is shared.
"""
import time

import torch
from transformers import DynamicCache, PreTrainedModel


def context_length(model: PreTrainedModel) -> int:
    """The model's maximum number of positions (prompt + generated tokens)."""
    cfg = model.config
    for name in ("n_positions", "max_position_embeddings", "n_ctx"):
        value = getattr(cfg, name, None)
        if isinstance(value, int) and value > 0:
            return value
    raise ValueError(f"cannot tell the context length of {type(model).__name__}")


def vocab_size(model: PreTrainedModel) -> int:
    """Size of the model's output distribution."""
    return int(model.get_output_embeddings().weight.shape[0])


class CachedLM:
    """The tokens fed so far live in the KV cache; `extend` feeds more and returns their logits."""

    def __init__(self, model: PreTrainedModel):
        self.model = model
        self.device = next(model.parameters()).device
        self.cache = DynamicCache(config=model.config)
        self.length = 0  # tokens in the cache
        self.passes = 0  # forward passes made (prefill included)
        self.last_pass_s = 0.0  # wall time of the latest pass

    def extend(self, tokens: list[int], logits_to_keep: int | None = None) -> torch.Tensor:
        """Feed `tokens` in one forward pass; return float32 logits (k, V) of the last k positions
        (k = logits_to_keep, default all fed tokens). Logit row i predicts the token after position i."""
        if not tokens:
            raise ValueError("extend needs at least one token")
        keep = len(tokens) if logits_to_keep is None else logits_to_keep
        ids = torch.tensor([tokens], dtype=torch.long, device=self.device)
        start = time.perf_counter()
        out = self.model(input_ids=ids, past_key_values=self.cache, use_cache=True, logits_to_keep=keep)
        self.last_pass_s = time.perf_counter() - start
        self.cache = out.past_key_values
        self.length += len(tokens)
        self.passes += 1
        return out.logits[0].float()  # (keep, V)

    def prefill(self, tokens: list[int]) -> None:
        """Feed a prompt (no logits needed: the LM head runs on one position only)."""
        if tokens:
            self.extend(tokens, logits_to_keep=1)

    def rollback(self, n: int) -> None:
        """Forget the last n tokens of the cache (transformers 5.x: crop(-n) removes n tokens)."""
        if not 0 <= n <= self.length:
            raise ValueError(f"cannot roll back {n} of {self.length} cached tokens")
        if n:
            self.cache.crop(-n)
            self.length -= n
