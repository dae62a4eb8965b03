"""The GPT-2 pass compiled: every pass one call of the batch-invariant kernel (kernel.py, gpt2_pass.cpp)."""
import torch
from transformers import GPT2LMHeadModel

from . import kernel


class CompiledGPT2Pass:
    """GPT-2 passes over a KV cache through the compiled kernel (kernel.py), for one row or
    many: every pass, whatever it feeds (one token, a verify pass, a prefill, a tree, a batch's rows),
    is one kernel call over its rows, and each row comes out bit for bit as a one-token pass at its
    position would give it. The cache is (layers, streams, capacity, 2E): one stream for one row, one
    per row of a batch; it grows by doubling, and a rollback only moves the caller's length."""

    def __init__(self, model: GPT2LMHeadModel, rows: int | None = None):
        self.weights = kernel.packed(model)
        self.layers, self.embed_dim = model.config.n_layer, model.config.n_embd
        self.max_positions, self.vocab = model.config.n_positions, model.config.vocab_size  # read once: config reads are slow
        self.cache = torch.zeros(self.layers, rows or 1, 0, 2 * self.embed_dim)
        self.slot = list(range(rows or 1))  # row -> its stream (None once retired)

    def _reserve(self, n: int) -> None:
        capacity = self.cache.shape[2]
        if n > capacity:
            more = max(n, min(self.max_positions, max(2 * capacity, 64))) - capacity
            self.cache = torch.cat([self.cache, self.cache.new_zeros(*self.cache.shape[:2], more, self.cache.shape[3])], 2)

    def _run(self, tokens, positions, streams, slots, visible, logit_rows, hidden):
        if not all(0 <= t < self.vocab for t in tokens):
            raise IndexError(f"a token is outside the vocabulary of {self.vocab}: {tokens}")
        self._reserve(max(slots) + 1)
        logits, states = kernel.pass_rows(self.weights, tokens, positions, streams, slots, visible, self.cache,
                                           logit_rows, hidden)
        return (logits, states) if hidden else logits

    # --- one row ---------------------------------------------------------------------------------------

    def __call__(self, tokens: list[int], past: int, keep: int, hidden: bool = False):
        """Logits (keep, V) of the last `keep` of `tokens`, fed after `past` cached positions; with
        `hidden`, also the final hidden states (k, E) of every fed token (after ln_f)."""
        k = len(tokens)
        if past + k > self.max_positions:
            raise ValueError(f"{past + k} positions exceed the model's {self.max_positions}")
        slots = list(range(past, past + k))
        return self._run(tokens, slots, [0] * k, slots, None, list(range(k - keep, k)), hidden)

    def tree(self, tokens: list[int], positions: list[int], past: int, mask: torch.Tensor, hidden: bool = False):
        """Logits (k, V) of tree nodes fed after `past` cached slots at their own `positions`; mask
        (k, past + k) says which slots each node sees."""
        k = len(tokens)
        if max(positions) >= self.max_positions:
            raise ValueError(f"a tree node at position {max(positions)} exceeds the model's {self.max_positions}")
        return self._run(tokens, positions, [0] * k, list(range(past, past + k)), mask.cpu().contiguous(),
                         list(range(k)), hidden)

    def keep(self, start: int, slots: list[int]) -> None:
        """Move the cached slots `slots` (in order) to start, start + 1, ... (a tree's accepted path)."""
        self.cache[:, 0, start:start + len(slots)] = self.cache[:, 0, slots]

    def rollback(self, n: int) -> None:
        pass  # later slots are simply overwritten

    # --- many rows -------------------------------------------------------------------------------------

    def rows(self, feeds: dict[int, list[int]], lengths: list[int], keep) -> dict[int, torch.Tensor]:
        """Feed every row of `feeds` its tokens after its `lengths[row]` cached ones, in one pass."""
        rows = [r for r in feeds if feeds[r]]
        if any(self.slot[r] is None for r in rows):
            raise ValueError("a retired row cannot be fed")
        tokens, positions, streams, firsts = [], [], [], []
        for r in rows:
            firsts.append(len(tokens))
            tokens += feeds[r]
            positions += range(lengths[r], lengths[r] + len(feeds[r]))
            streams += [self.slot[r]] * len(feeds[r])
        if max(positions) >= self.max_positions:
            raise ValueError(f"{max(positions) + 1} positions exceed the model's {self.max_positions}")
        if keep is None:
            self._run(tokens, positions, streams, positions, None, [], False)
            return {}
        if keep == "last":
            logits = self._run(tokens, positions, streams, positions, None,
                               [first + len(feeds[r]) - 1 for first, r in zip(firsts, rows)], False)
            return {r: logits[i:i + 1] for i, r in enumerate(rows)}
        logits = self._run(tokens, positions, streams, positions, None, list(range(len(tokens))), False)
        return {r: logits[first:first + len(feeds[r])] for first, r in zip(firsts, rows)}

    def rollback_row(self, row: int, n: int) -> None:
        pass  # the row's later slots are simply overwritten

    def retire(self, rows: list[int]) -> None:
        """Drop finished rows' streams (one copy for all the rows that finish in a round)."""
        gone = {self.slot[r] for r in rows}
        keep = [s for s in range(self.cache.shape[1]) if s not in gone]
        self.cache = self.cache[:, keep].contiguous()
        new = {s: i for i, s in enumerate(keep)}
        self.slot = [None if s is None else new.get(s) for s in self.slot]
