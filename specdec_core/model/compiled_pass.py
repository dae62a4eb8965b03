"""The GPT-2 pass compiled: every pass one call of the batch-invariant kernel (kernel.py, gpt2_pass.cpp)."""
import torch
from transformers import GPT2LMHeadModel

from . import kernel
from .config import hidden_layers


class CompiledGPT2Pass:
    """GPT-2 passes over a KV cache through the compiled kernel (kernel.py), for any number of
    rows: every pass, whatever it feeds (one token, a verify pass, a prefill, a tree, a batch's rows),
    is one kernel call over its rows, and each row comes out bit for bit as a one-token pass at its
    position would give it. The cache is (layers, streams, capacity, 2E), one stream per row; it grows
    by doubling, and a rollback only moves the caller's length."""

    def __init__(self, model: GPT2LMHeadModel, rows: int = 1):
        self.weights = kernel.packed(model)
        self.layers, self.embed_dim = model.config.n_layer, model.config.n_embd
        self.max_positions, self.vocab = model.config.n_positions, model.config.vocab_size  # read once: config reads are slow
        self.cache = torch.zeros(self.layers, rows, 0, 2 * self.embed_dim)
        self.slot = list(range(rows))  # row -> its stream (None once retired)

    def _run(self, tokens, positions, streams, slots, visible, logit_rows, hidden):
        if not all(0 <= t < self.vocab for t in tokens):
            raise IndexError(f"a token is outside the vocabulary of {self.vocab}: {tokens}")
        self.cache = kernel.with_slots(self.cache, max(slots) + 1, self.max_positions)
        return kernel.pass_rows(self.weights, tokens, positions, streams, slots, visible, self.cache, logit_rows,
                                hidden_layers(hidden, self.layers))

    def run(self, feeds: dict[int, list[int]], lengths: list[int], keep: dict[int, int], hidden: bool = False):
        """Feed every row of `feeds` its tokens after its `lengths[row]` cached ones, in one pass: the
        logits of each row's last keep[row] positions, and with `hidden` each row's hidden states of every
        fed token: (k, E) final ones (after ln_f) for True, (k, len(hidden) E) for layers named
        (config.hidden_layers)."""
        tokens, positions, streams, logit_rows, spans = [], [], [], [], []
        for r, feed in feeds.items():
            stream = self.slot[r]
            if stream is None:
                raise ValueError("a retired row cannot be fed")
            first, k, past = len(tokens), len(feed), lengths[r]
            tokens += feed
            positions += range(past, past + k)
            streams += [stream] * k
            logit_rows += range(first + k - keep[r], first + k)
            spans.append((r, first, k, keep[r]))
        if max(positions) >= self.max_positions:
            raise ValueError(f"{max(positions) + 1} positions exceed the model's {self.max_positions}")
        logits, states = self._run(tokens, positions, streams, positions, None, logit_rows, hidden)
        out, at = {}, 0
        for r, _, _, kept in spans:
            out[r], at = logits[at:at + kept], at + kept
        return out, ({r: states[first:first + k] for r, first, k, _ in spans} if hidden else None)

    def tree(self, tokens: list[int], positions: list[int], past: int, mask: torch.Tensor, hidden: bool = False):
        """Logits (k, V) of tree nodes fed to the one row after `past` cached slots at their own
        `positions`; mask (k, past + k) says which slots each node sees."""
        k = len(tokens)
        if max(positions) >= self.max_positions:
            raise ValueError(f"a tree node at position {max(positions)} exceeds the model's {self.max_positions}")
        logits, states = self._run(tokens, positions, [self.slot[0]] * k, list(range(past, past + k)),
                                   mask.cpu().contiguous(), list(range(k)), hidden)
        return (logits, states) if hidden else logits

    def keep(self, row: int, start: int, slots: list[int]) -> None:
        """Move the row's cached slots `slots` (in order) to start, start + 1, ... (a tree's accepted path)."""
        stream = self.slot[row]
        self.cache[:, stream, start:start + len(slots)] = self.cache[:, stream, slots]

    def rollback(self, row: int, n: int) -> None:
        pass  # the row's later slots are simply overwritten

    @torch.inference_mode()
    def retire(self, rows: list[int]) -> None:
        """Drop finished rows' streams (one copy for all the rows that finish in a round)."""
        gone = {self.slot[r] for r in rows}
        keep = [s for s in range(self.cache.shape[1]) if s not in gone]
        self.cache = self.cache[:, keep].contiguous()
        new = {s: i for i, s in enumerate(keep)}
        self.slot = [None if s is None else new.get(s) for s in self.slot]
