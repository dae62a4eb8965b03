"""The GPT-2 block in Python: the reference pass, and the fallback where the compiled pass is not built.

`GPT2Pass` runs a plain GPT-2 (the bundled pair, the hub's GPT-2 family) with transformers' own
GPT2LMHeadModel ops in its order (Conv1D as addmm, sdpa attention with the same mask and scale,
gelu_new), without its per-call machinery, so its logits are transformers' bit for bit
(tests/core/test_lm_fast.py). forward="exact" keeps a model on it. Its C++ twin is compiled_pass.py's
pass (gpt2_pass.cpp), which the core runs by default where it is built.

Not batch-invariant: a pass over k rows runs MKL's products over k rows, which round differently from
its one-row products, so row i of a verify pass can differ from the one-token pass at that position
in the last bits (up to 2e-5 on the bundled target; tests/core/test_batch_invariance.py shows it).

Many rows: a round feeds a different number of tokens to each row (a speculative row feeds its last
committed token plus its drafts; a finished row none). The pass pads the rows to the longest feed; an
attention mask keeps every row to its own committed tokens and to the causal prefix of its own feed,
each row's tokens at its own positions. Padding queries compute garbage that nobody reads; padding
keys land past the row's length, where the row's next feed overwrites them.
"""
import math

import torch
import torch.nn.functional as F
from transformers import GPT2LMHeadModel

from .config import hidden_layers

GELU_C = math.sqrt(2.0 / math.pi)


def gelu_new_(h: torch.Tensor) -> torch.Tensor:
    """gelu_new, 0.5 h (1 + tanh(c (h + 0.044715 h^3))), in transformers' order, in place on h."""
    t = torch.pow(h, 3.0).mul_(0.044715).add_(h).mul_(GELU_C).tanh_().add_(1.0)
    return h.mul_(0.5).mul_(t)


class GPT2Pass:
    """GPT-2 passes over a KV cache, reading the model's tensors (shared, never copied or written).

    One row (a batch of one, the usual case, with transformers' bits): what is left besides the
    arithmetic is kept small (docs/benchmarks.md, the pass's profile): the fused q/k/v product is
    written straight into the layer's cache row (no split, no copy into separate key and value
    buffers), gelu_new runs in place, the residual adds are in place, and the causal masks are views of
    one mask made once. A layer's cache is (capacity, 3E): q | k | v
    per position (the q third is never read again; keeping it lets one addmm write the whole row).
    Many rows: per layer (rows, capacity, H, D) keys and values, written per row at its positions;
    rows that finish are retired, dropped from the buffers, so a nearly finished batch does not pay for
    its finished rows. Buffers grow by doubling; a rollback only moves the caller's length."""

    def __init__(self, model: GPT2LMHeadModel, rows: int = 1):
        gpt = model.transformer
        self.embed_dim, self.eps = gpt.embed_dim, gpt.ln_f.eps
        self.n_head = model.config.n_head
        self.head_dim = self.embed_dim // self.n_head
        self.max_positions = gpt.wpe.weight.shape[0]
        self.wte, self.wpe, self.lm_head = gpt.wte.weight, gpt.wpe.weight, model.lm_head.weight
        self.ln_f = (gpt.ln_f.weight, gpt.ln_f.bias)
        self.blocks = [(b.ln_1.weight, b.ln_1.bias, b.attn.c_attn.weight, b.attn.c_attn.bias, b.attn.scaling,
                        b.attn.c_proj.weight, b.attn.c_proj.bias, b.ln_2.weight, b.ln_2.bias,
                        b.mlp.c_fc.weight, b.mlp.c_fc.bias, b.mlp.c_proj.weight, b.mlp.c_proj.bias) for b in gpt.h]
        self.batched = rows > 1
        # one row: per layer (capacity, 3E), q | k | v of every fed position, and the same memory as
        # (3, 1, H, capacity, D); many rows: per layer (rows, capacity, H, D) keys and values
        self.cache: list[torch.Tensor] = []
        self.heads: list[torch.Tensor] = []
        self._causal: torch.Tensor | None = None  # (max_positions, max_positions) bool, lower triangle
        if self.batched:
            self.slot = list(range(rows))  # row -> its index in the buffers (None once retired)
            self.keys = [self._empty(rows, 0) for _ in self.blocks]
            self.values = [self._empty(rows, 0) for _ in self.blocks]

    # --- the blocks, shared by one row and many ------------------------------------------------------

    def _layers(self, x: torch.Tensor, attend, taps: dict | None = None) -> torch.Tensor:
        """The transformer blocks over new positions x (..., E), their keys and values cached by
        `attend(layer, ln_1(x) as (n, E), qkv_w, qkv_b, scale) -> attention output (n, E)`. With a
        `taps` dict, taps[i] is the residual stream after block i (taps[0] the input)."""
        E = self.embed_dim
        shape, eps, n = (E,), self.eps, x.numel() // E
        if taps is not None:
            taps[0] = x
        for layer, (ln1_w, ln1_b, qkv_w, qkv_b, scale, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, out_w, out_b) \
                in enumerate(self.blocks):
            att = attend(layer, torch.layer_norm(x, shape, ln1_w, ln1_b, eps).view(n, E), qkv_w, qkv_b, scale)
            x = torch.addmm(proj_b, att, proj_w).view(x.shape).add_(x)  # a new tensor: a tap is never written
            h = torch.addmm(fc_b, torch.layer_norm(x, shape, ln2_w, ln2_b, eps).view(n, E), fc_w)  # (n, 4E)
            x = torch.addmm(out_b, gelu_new_(h), out_w).view(x.shape).add_(x)
            if taps is not None:
                taps[layer + 1] = x
        return x

    def _logits(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(torch.layer_norm(x, (self.embed_dim,), *self.ln_f, self.eps), self.lm_head)

    # --- one row ---------------------------------------------------------------------------------------

    def _reserve(self, n: int) -> None:
        """Make room for n cached slots: buffers grow by doubling, keeping what they hold. Slots are not
        positions: a tree's nodes share positions, so a tree near the window's end needs more slots
        than the window has positions (doubling stops at the window; a tree takes only what it needs)."""
        capacity = self.cache[0].shape[0] if self.cache else 0
        if n <= capacity:
            return
        extra = max(n, min(self.max_positions, max(2 * capacity, 64))) - capacity
        more = lambda: self.wte.new_empty(extra, 3 * self.embed_dim)
        if self.cache:
            self.cache = [torch.cat([c, more()]) for c in self.cache]
        else:
            self.cache = [more() for _ in self.blocks]
        H, D = self.n_head, self.head_dim
        self.heads = [c.view(-1, 3, H, D).permute(1, 2, 0, 3)[:, None] for c in self.cache]

    def _one_row(self, x: torch.Tensor, past: int, mask: torch.Tensor | None, causal: bool, keep: int,
                 hidden: bool | tuple[int, ...]):
        """The blocks over k new positions x (k, E) of the one row after `past` cached slots; the logits
        of the last `keep`, and with `hidden` the hidden states of all k (config.hidden_layers)."""
        k, E = x.shape[0], self.embed_dim
        end = past + k

        def attend(layer, h, qkv_w, qkv_b, scale):
            cache, heads = self.cache[layer], self.heads[layer]
            torch.addmm(qkv_b, h, qkv_w, out=cache[past:end])
            att = F.scaled_dot_product_attention(heads[0, :, :, past:end], heads[1, :, :, :end], heads[2, :, :, :end],
                                                 attn_mask=mask, dropout_p=0.0, scale=scale, is_causal=causal)
            # (1, H, k, D); transformers' transpose + reshape, a copy only where the layout needs one
            return att[0].transpose(0, 1).reshape(k, E)

        layers, top = hidden_layers(hidden, len(self.blocks)), len(self.blocks)
        taps = {} if layers else None
        x = self._layers(x, attend, taps)
        if layers:
            taps[top] = torch.layer_norm(x, (E,), *self.ln_f, self.eps)  # (k, E)
            return F.linear(taps[top][k - keep:], self.lm_head), torch.cat([taps[i] for i in layers], dim=-1)
        return self._logits(x[k - keep:])

    def _extend_one(self, tokens: list[int], past: int, keep: int, hidden: bool):
        """Logits (keep, V) of the last `keep` of `tokens`, fed after `past` cached positions; with
        `hidden`, also the hidden states of every fed token (config.hidden_layers)."""
        k = len(tokens)
        if past + k > self.max_positions:
            raise ValueError(f"{past + k} positions exceed the model's {self.max_positions}")
        self._reserve(past + k)
        # transformers' masks: none for one query or an empty cache (is_causal), else a boolean one.
        if self._causal is None:  # made once, at the first pass over more than one token
            n = self.max_positions
            self._causal = torch.ones(n, n, dtype=torch.bool, device=self.wte.device).tril()
        ids = torch.tensor(tokens, dtype=torch.long, device=self.wte.device)
        x = torch.embedding(self.wte, ids) + self.wpe[past:past + k]  # (k, E)
        mask = self._causal[past:past + k, :past + k] if k > 1 and past else None  # (k, past + k)
        return self._one_row(x, past, mask, k > 1 and not past, keep, hidden)

    @torch.inference_mode()
    def tree(self, tokens: list[int], positions: list[int], past: int, mask: torch.Tensor, hidden: bool = False):
        """Logits (k, V) of tree nodes fed after `past` cached slots, at their own `positions`; mask
        (k, past + k) says which cached or fed slots each node may attend to. Only positions are bounded
        by the window: siblings share a position, so the slots may run past it."""
        k = len(tokens)
        if max(positions) >= self.max_positions:
            raise ValueError(f"a tree node at position {max(positions)} exceeds the model's {self.max_positions}")
        self._reserve(past + k)
        ids = torch.tensor(tokens, dtype=torch.long, device=self.wte.device)
        x = torch.embedding(self.wte, ids) + self.wpe[torch.tensor(positions, device=ids.device)]  # (k, E)
        return self._one_row(x, past, mask.to(self.wte.device), False, k, hidden)

    @torch.inference_mode()
    def keep(self, row: int, start: int, slots: list[int]) -> None:
        """Move the one row's cached positions `slots` (in order) to start, start + 1, ... (a tree's
        accepted path)."""
        index = torch.tensor(slots, dtype=torch.long, device=self.wte.device)
        for cache in self.cache:
            cache[start:start + len(slots)] = cache[index]

    # --- many rows -------------------------------------------------------------------------------------

    def _empty(self, rows: int, capacity: int) -> torch.Tensor:
        return self.wte.new_zeros(rows, capacity, self.n_head, self.head_dim)

    def _reserve_rows(self, n: int) -> None:
        capacity = self.keys[0].shape[1]
        if n <= capacity:
            return
        extra = max(n, 2 * capacity, 64) - capacity
        more = lambda t: self._empty(t.shape[0], extra)
        self.keys = [torch.cat([k, more(k)], dim=1) for k in self.keys]
        self.values = [torch.cat([v, more(v)], dim=1) for v in self.values]

    @torch.inference_mode()
    def retire(self, rows: list[int]) -> None:
        """Drop finished rows' buffers (one copy for all the rows that finish in a round; none when no
        row is left; a one-row pass keeps its buffers)."""
        if not self.batched:
            return
        gone = {self.slot[r] for r in rows}
        keep = [s for s in range(self.keys[0].shape[0]) if s not in gone]
        if keep:
            index = torch.tensor(keep, dtype=torch.long, device=self.wte.device)
            self.keys = [k.index_select(0, index) for k in self.keys]
            self.values = [v.index_select(0, index) for v in self.values]
        new = {s: i for i, s in enumerate(keep)}
        self.slot = [None if s is None else new.get(s) for s in self.slot]

    def _extend_many(self, feeds: dict[int, list[int]], lengths: list[int], keep: dict[int, int]):
        """Feed every row of `feeds` its tokens after its `lengths[row]` cached ones, in one pass."""
        rows = list(feeds)
        if any(self.slot[r] is None for r in rows):
            raise ValueError("a retired row cannot be fed")
        # The pass runs over every live row, in slot order (retiring keeps the order), a row fed nothing
        # padding its whole feed: the buffers stay in place, no gather and scatter of the cache per pass.
        live = [r for r, s in enumerate(self.slot) if s is not None]
        B, K, dev = len(live), max(len(feeds[r]) for r in rows), self.wte.device
        fed = torch.tensor([len(feeds.get(r, ())) for r in live], device=dev)  # (B,)
        past = torch.tensor([lengths[r] for r in live], device=dev)  # (B,)
        ids = torch.zeros(B, K, dtype=torch.long, device=dev)
        for b, r in enumerate(live):
            if feeds.get(r):
                ids[b, :len(feeds[r])] = torch.tensor(feeds[r], dtype=torch.long)
        pos = past[:, None] + torch.arange(K, device=dev)  # (B, K) each row at its own positions
        self._reserve_rows(int(pos.max()) + 1)
        L = int(pos.max()) + 1
        x = F.embedding(ids, self.wte) + self.wpe[pos.clamp(max=self.max_positions - 1)]  # (B, K, E)
        # Query j of a row sees the row's cache and its own feed up to j (padding queries alike: no
        # row of the mask is empty, so no NaN; nobody reads their output).
        mask = (torch.arange(L, device=dev)[None, None, :] <= pos[:, :, None])[:, None]  # (B, 1, K, L)
        E, H, D = self.embed_dim, self.n_head, self.head_dim
        bidx = torch.arange(B, device=dev)[:, None].expand(B, K)

        def attend(layer, h, qkv_w, qkv_b, scale):
            keys, values = self.keys[layer], self.values[layer]
            q, key, value = torch.addmm(qkv_b, h, qkv_w).view(B, K, 3, H, D).unbind(2)  # (B, K, H, D)
            keys[bidx, pos] = key
            values[bidx, pos] = value
            att = F.scaled_dot_product_attention(q.transpose(1, 2), keys[:, :L].transpose(1, 2),
                                                 values[:, :L].transpose(1, 2), attn_mask=mask, dropout_p=0.0,
                                                 scale=scale)  # (B, H, K, D)
            return att.transpose(1, 2).reshape(B * K, E)

        x = self._layers(x, attend)
        at = {r: b for b, r in enumerate(live)}
        if not any(keep.values()):
            return {}
        if max(keep.values()) == 1:
            logits = self._logits(x[torch.arange(B, device=dev), (fed - 1).clamp(min=0)])  # (B, V)
            return {r: logits[at[r]][None] if keep[r] else logits[:0] for r in rows}
        logits = self._logits(x)  # (B, K, V)
        return {r: logits[at[r], len(feeds[r]) - keep[r]:len(feeds[r])] for r in rows}

    # --- the calls every pass answers -----------------------------------------------------------------

    @torch.inference_mode()
    def run(self, feeds: dict[int, list[int]], lengths: list[int], keep: dict[int, int], hidden: bool = False):
        """Feed every row of `feeds` its tokens after its `lengths[row]` cached ones, in one pass: the
        logits of each row's last keep[row] positions, and with `hidden` the hidden states of every fed
        token (config.hidden_layers: True the final ones (k, E), after ln_f; one row only)."""
        if not self.batched:
            (row, tokens), = feeds.items()
            out = self._extend_one(tokens, lengths[row], keep[row], hidden)
            return ({row: out[0]}, {row: out[1]}) if hidden else ({row: out}, None)
        if hidden:
            raise ValueError("hidden states of many rows need the compiled pass")
        return self._extend_many(feeds, lengths, keep), None

    def rollback(self, row: int, n: int) -> None:
        pass  # the row's later positions are simply overwritten
