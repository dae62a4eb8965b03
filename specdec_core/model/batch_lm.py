"""A causal LM reading many sequences at once: one forward pass for B ragged rows, each with its own
KV cache length, and a per-row rollback.

A round of batched decoding feeds a different number of tokens to each row; the pass (passes.py:
the lean GPT-2 pass for a plain GPT-2, the model's own forward otherwise) keeps every row to its own
tokens and positions, and drops rows that finish (`retire`).
"""
import time

import torch
from transformers import PreTrainedModel

from .forwards import check_forward
from .passes import model_pass

KEEP = ("all", "last", None)  # which logits a pass returns per row: every fed position, the last, none


class BatchLM:
    """B rows fed together: `extend({row: tokens})` is ONE forward pass over every row it names."""

    def __init__(self, model: PreTrainedModel, rows: int, forward: str = "core"):
        self.model = model
        self.device = next(model.parameters()).device
        self._pass = model_pass(model, rows, check_forward(forward))
        self.lengths = [0] * rows  # tokens in each row's cache
        self.live = [True] * rows
        self.passes = 0
        self.last_pass_s = 0.0

    @torch.inference_mode()
    def extend(self, feeds: dict[int, list[int]], keep="all") -> dict[int, torch.Tensor]:
        """Feed each named row its tokens in one pass; return float32 logits per row: (k, V) for
        every fed position (keep="all"), (1, V) for the last (keep="last"), nothing (keep=None).
        Logit row i predicts the token after fed position i. Rows fed no tokens are left alone."""
        if keep not in KEEP:
            raise ValueError(f"keep must be one of {KEEP}, got {keep!r}")
        feeds = {r: list(t) for r, t in feeds.items() if t}
        if not feeds:
            return {}
        if any(not self.live[r] for r in feeds):
            raise ValueError("a retired row cannot be fed")
        cuda = self.device.type == "cuda"
        if cuda:
            torch.cuda.synchronize(self.device)
        start = time.perf_counter()
        logits = self._pass.rows(feeds, self.lengths, keep)
        if cuda:
            torch.cuda.synchronize(self.device)
        self.last_pass_s = time.perf_counter() - start
        for r, t in feeds.items():
            self.lengths[r] += len(t)
        self.passes += 1
        return {r: v.float() for r, v in logits.items()}

    @torch.inference_mode()
    def rollback(self, row: int, n: int) -> None:
        """Forget the last n tokens of one row's cache."""
        if not 0 <= n <= self.lengths[row]:
            raise ValueError(f"cannot roll back {n} of row {row}'s {self.lengths[row]} cached tokens")
        self._pass.rollback_row(row, n)
        self.lengths[row] -= n

    @torch.inference_mode()
    def retire(self, rows: list[int]) -> None:
        """Finished rows: they are never fed again (the lean pass frees their buffers)."""
        rows = [r for r in rows if self.live[r]]
        if rows:
            for r in rows:
                self.live[r] = False
            self._pass.retire(rows)
