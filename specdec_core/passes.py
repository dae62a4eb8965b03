"""The target's and the drafter's forward passes over a KV cache, for one row or many rows at once.

`GPT2Pass` is the lean pass of a plain GPT-2 (the bundled pair, the hub's GPT-2 family): transformers'
own GPT2LMHeadModel ops in its order (Conv1D as addmm, sdpa attention with the same mask and scale,
gelu_new), without its per-call machinery. Why: for models this small, transformers' forward spends
more time in Python (config lookups, mask builders, output dataclasses, a fresh concatenation of the
whole cache per layer) than in arithmetic. On one CPU thread, a 1-layer d=128 GPT-2 (the bundled
draft's shape) took 0.69 ms a pass through transformers and takes 0.27 ms here; an 8-layer d=384 one
(the target's) 5.4 ms and 3.6 ms (docs/benchmarks.md). tests/core/test_lm_fast.py holds its logits
against transformers' bit for bit.

`TransformersPass` is the one fallback: any other causal LM (or a GPT-2 with forward="transformers",
which the benchmark compares) through the model's own forward and a transformers DynamicCache.

Both answer the same calls, which lm.CachedLM (one row) and batch_lm.BatchLM (many rows) make:
  one row:   __call__(tokens, past, keep, hidden), tree(tokens, positions, past, mask, hidden),
             keep(start, slots), rollback(n)
  many rows: rows(feeds, lengths, keep), rollback_row(row, n), retire(rows)
A pass object serves one of the two: one row (rows=None) or a batch of `rows` rows.

Many rows: a round feeds a different number of tokens to each row (a speculative row feeds its last
committed token plus its drafts; a finished row none). The pass pads the rows to the longest feed; an
attention mask keeps every row to its own committed tokens and to the causal prefix of its own feed,
each row's tokens at its own positions. Padding queries compute garbage that nobody reads; padding
keys land past the row's length, where the row's next feed overwrites them.
"""
import math

import torch
import torch.nn.functional as F
from transformers import DynamicCache, GPT2LMHeadModel, PreTrainedModel
from transformers.cache_utils import DynamicLayer

from . import kernels
from .forwards import TransformersForward

GELU_C = math.sqrt(2.0 / math.pi)


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


def lean_gpt2(model) -> bool:
    """Whether `model` is a plain GPT-2 that GPT2Pass reproduces op for op."""
    cfg = model.config
    return (type(model) is GPT2LMHeadModel and not model.training
            and getattr(cfg, "_attn_implementation", None) == "sdpa" and cfg.activation_function == "gelu_new"
            and not cfg.add_cross_attention and not cfg.scale_attn_by_inverse_layer_idx
            and not cfg.reorder_and_upcast_attn and model.lm_head.bias is None)


def gelu_new_(h: torch.Tensor) -> torch.Tensor:
    """gelu_new, 0.5 h (1 + tanh(c (h + 0.044715 h^3))), in transformers' order, in place on h."""
    t = torch.pow(h, 3.0).mul_(0.044715).add_(h).mul_(GELU_C).tanh_().add_(1.0)
    return h.mul_(0.5).mul_(t)


def model_pass(model: PreTrainedModel, rows: int | None = None, forward: str = "core"):
    """The pass for `model`: the lean GPT-2 pass where forward is "core" or "exact" and the model allows
    it ("exact": never the small compiled kernel, so every logit keeps transformers' bits), else the
    model's own forward (always for a model wrapped in forwards.TransformersForward); for one row
    (rows=None) or a batch of `rows` rows."""
    if isinstance(model, TransformersForward):
        model, forward = model.model, "transformers"
    if forward in ("core", "exact") and lean_gpt2(model):
        if forward == "core" and kernels.runs_compiled(model):
            return CompiledGPT2Pass(model, rows)
        return GPT2Pass(model, rows)
    return TransformersPass(model, rows)


class CompiledGPT2Pass:
    """GPT-2 passes over a KV cache through the compiled kernel (specdec_core/kernels), for one row or
    many: every pass, whatever it feeds (one token, a verify pass, a prefill, a tree, a batch's rows),
    is one kernel call over its rows, and each row comes out bit for bit as a one-token pass at its
    position would give it. The cache is (layers, streams, capacity, 2E): one stream for one row, one
    per row of a batch; it grows by doubling, and a rollback only moves the caller's length."""

    def __init__(self, model: GPT2LMHeadModel, rows: int | None = None):
        self.model = model
        self.layers, self.embed_dim = model.config.n_layer, model.config.n_embd
        self.max_positions = model.config.n_positions
        self.cache = torch.zeros(self.layers, rows or 1, 0, 2 * self.embed_dim)
        self.slot = list(range(rows or 1))  # row -> its stream (None once retired)

    def _reserve(self, n: int) -> None:
        capacity = self.cache.shape[2]
        if n > capacity:
            more = max(n, min(self.max_positions, max(2 * capacity, 64))) - capacity
            self.cache = torch.cat([self.cache, self.cache.new_zeros(*self.cache.shape[:2], more, self.cache.shape[3])], 2)

    def _run(self, tokens, positions, streams, slots, visible, logit_rows, hidden):
        vocab = self.model.config.vocab_size
        if not all(0 <= t < vocab for t in tokens):
            raise IndexError(f"a token is outside the vocabulary of {vocab}: {tokens}")
        self._reserve(max(slots) + 1)
        logits, states = kernels.pass_rows(self.model, tokens, positions, streams, slots, visible, self.cache,
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


class GPT2Pass:
    """GPT-2 passes over a KV cache, reading the model's tensors (shared, never copied or written).

    One row: what is left besides the arithmetic is kept small (docs/benchmarks.md, the pass's
    profile): the fused q/k/v product is written straight into the layer's cache row (no split, no
    copy into separate key and value buffers), gelu_new runs in place, the residual adds are in place,
    and the causal masks are views of one mask made once. A layer's cache is (capacity, 3E): q | k | v
    per position (the q third is never read again; keeping it lets one addmm write the whole row).
    Many rows: per layer (rows, capacity, H, D) keys and values, written per row at its positions;
    rows that finish are retired, dropped from the buffers, so a nearly finished batch does not pay for
    its finished rows. Buffers grow by doubling; a rollback only moves the caller's length."""

    def __init__(self, model: GPT2LMHeadModel, rows: int | None = None):
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
        self.batched = rows is not None
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

    def _layers(self, x: torch.Tensor, attend) -> torch.Tensor:
        """The transformer blocks over new positions x (..., E), their keys and values cached by
        `attend(layer, ln_1(x) as (n, E), qkv_w, qkv_b, scale) -> attention output (n, E)`."""
        E = self.embed_dim
        shape, eps, n = (E,), self.eps, x.numel() // E
        for layer, (ln1_w, ln1_b, qkv_w, qkv_b, scale, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, out_w, out_b) \
                in enumerate(self.blocks):
            att = attend(layer, torch.layer_norm(x, shape, ln1_w, ln1_b, eps).view(n, E), qkv_w, qkv_b, scale)
            x = torch.addmm(proj_b, att, proj_w).view(x.shape).add_(x)
            h = torch.addmm(fc_b, torch.layer_norm(x, shape, ln2_w, ln2_b, eps).view(n, E), fc_w)  # (n, 4E)
            x = torch.addmm(out_b, gelu_new_(h), out_w).view(x.shape).add_(x)
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
                 hidden: bool):
        """The blocks over k new positions x (k, E) of the one row after `past` cached slots; the logits
        of the last `keep`, and with `hidden` the final hidden states of all k."""
        k, E = x.shape[0], self.embed_dim
        end = past + k

        def attend(layer, h, qkv_w, qkv_b, scale):
            cache, heads = self.cache[layer], self.heads[layer]
            torch.addmm(qkv_b, h, qkv_w, out=cache[past:end])
            att = F.scaled_dot_product_attention(heads[0, :, :, past:end], heads[1, :, :, :end], heads[2, :, :, :end],
                                                 attn_mask=mask, dropout_p=0.0, scale=scale, is_causal=causal)
            # (1, H, k, D); transformers' transpose + reshape, a copy only where the layout needs one
            return att[0].transpose(0, 1).reshape(k, E)

        x = self._layers(x, attend)
        if hidden:
            h = torch.layer_norm(x, (E,), *self.ln_f, self.eps)  # (k, E)
            return F.linear(h[k - keep:], self.lm_head), h
        return self._logits(x[k - keep:])

    def __call__(self, tokens: list[int], past: int, keep: int, hidden: bool = False):
        """Logits (keep, V) of the last `keep` of `tokens`, fed after `past` cached positions; with
        `hidden`, also the final hidden states (k, E) of every fed token (after ln_f)."""
        if not torch.is_inference_mode_enabled():  # the generation functions run under it already
            with torch.inference_mode():
                return self(tokens, past, keep, hidden)
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
    def keep(self, start: int, slots: list[int]) -> None:
        """Move the cached positions `slots` (in order) to start, start + 1, ... (a tree's accepted path)."""
        index = torch.tensor(slots, dtype=torch.long, device=self.wte.device)
        for cache in self.cache:
            cache[start:start + len(slots)] = cache[index]

    def rollback(self, n: int) -> None:
        pass  # later positions are simply overwritten

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

    def retire(self, rows: list[int]) -> None:
        """Drop finished rows' buffers (one copy for all the rows that finish in a round; none when no
        row is left)."""
        gone = {self.slot[r] for r in rows}
        keep = [s for s in range(self.keys[0].shape[0]) if s not in gone]
        if keep:
            index = torch.tensor(keep, dtype=torch.long, device=self.wte.device)
            self.keys = [k.index_select(0, index) for k in self.keys]
            self.values = [v.index_select(0, index) for v in self.values]
        new = {s: i for i, s in enumerate(keep)}
        self.slot = [None if s is None else new.get(s) for s in self.slot]

    def rollback_row(self, row: int, n: int) -> None:
        pass  # the row's later positions are simply overwritten

    @torch.inference_mode()
    def rows(self, feeds: dict[int, list[int]], lengths: list[int], keep) -> dict[int, torch.Tensor]:
        """Feed every row of `feeds` its tokens after its `lengths[row]` cached ones, in one pass."""
        rows = [r for r in feeds if feeds[r]]
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
        if keep is None:
            return {}
        at = {r: b for b, r in enumerate(live)}
        if keep == "last":
            logits = self._logits(x[torch.arange(B, device=dev), (fed - 1).clamp(min=0)])  # (B, V)
            return {r: logits[at[r]][None] for r in rows}
        logits = self._logits(x)  # (B, K, V)
        return {r: logits[at[r], :len(feeds[r])] for r in rows}


class TransformersPass:
    """Any causal LM through its own forward and one transformers DynamicCache.

    One row: the model's plain call (its logits are transformers' own, the reference the lean pass is
    held to); a rollback crops the cache; a tree goes in with a custom 4D mask. Many rows: the cache's
    slots only grow, and `seen` (rows, slots) says which slots hold a row's committed tokens, so a
    rollback is a mask edit."""

    def __init__(self, model: PreTrainedModel, rows: int | None = None):
        self.model, self.device = model, next(model.parameters()).device
        self.cache = DynamicCache(config=model.config)
        self.batched = rows is not None
        if self.batched:
            self._check_masks("batched decoding")
            self.seen = torch.zeros(rows, 0, dtype=torch.bool)  # (rows, slots)

    def _check_masks(self, what: str) -> None:
        impl = getattr(self.model.config, "_attn_implementation", None)
        if impl not in ("sdpa", "eager"):
            raise ValueError(f"{what} through {type(self.model).__name__}'s forward needs a custom 4D attention "
                             f"mask, which {impl!r} attention does not take: load it with attn_implementation='sdpa'")

    def _additive(self, visible: torch.Tensor) -> torch.Tensor:
        """A boolean mask as the additive float mask the model's attention takes."""
        dtype = next(self.model.parameters()).dtype
        return torch.zeros(visible.shape, dtype=dtype).masked_fill(~visible, torch.finfo(dtype).min)

    # --- one row ---------------------------------------------------------------------------------------

    def __call__(self, tokens: list[int], past: int, keep: int, hidden: bool = False):
        ids = torch.tensor([tokens], dtype=torch.long, device=self.device)
        more = {"output_hidden_states": True} if hidden else {}
        out = self.model(input_ids=ids, past_key_values=self.cache, use_cache=True, logits_to_keep=keep, **more)
        self.cache = out.past_key_values
        return (out.logits[0], out.hidden_states[-1][0]) if hidden else out.logits[0]

    def tree(self, tokens: list[int], positions: list[int], past: int, mask: torch.Tensor, hidden: bool = False):
        """A tree pass with a custom 4D attention mask (k, cache + k)."""
        self._check_masks("tree verification")
        out = self.model(input_ids=torch.tensor([tokens], dtype=torch.long, device=self.device),
                         attention_mask=self._additive(mask)[None, None].to(self.device),  # (1, 1, k, cache + k)
                         position_ids=torch.tensor([positions], dtype=torch.long, device=self.device),
                         past_key_values=self.cache, use_cache=True, output_hidden_states=hidden)
        self.cache = out.past_key_values
        return (out.logits[0], out.hidden_states[-1][0]) if hidden else out.logits[0]

    def keep(self, start: int, slots: list[int]) -> None:
        """Keep the first `start` cached positions, then `slots` in order (a tree's accepted path)."""
        index = torch.tensor(list(range(start)) + slots, dtype=torch.long, device=self.device)
        for layer in self.cache.layers:
            if type(layer) is not DynamicLayer:
                raise ValueError(f"cannot keep a tree path in a {type(layer).__name__} cache")
            if not layer.is_initialized:
                continue  # a layer this model never wrote to
            layer.keys, layer.values = layer.keys.index_select(-2, index), layer.values.index_select(-2, index)

    def rollback(self, n: int) -> None:
        """Forget the last n cached tokens (transformers 5.x: crop(-n) removes n tokens)."""
        if n:
            self.cache.crop(-n)

    # --- many rows -------------------------------------------------------------------------------------

    def retire(self, rows: list[int]) -> None:
        pass  # the slots stay; a retired row is never fed again

    def rollback_row(self, row: int, n: int) -> None:
        """Unsee the row's last n committed slots."""
        if n:
            slots = self.seen[row].nonzero().view(-1)[-n:]
            self.seen[row, slots] = False

    @torch.inference_mode()
    def rows(self, feeds: dict[int, list[int]], lengths: list[int], keep) -> dict[int, torch.Tensor]:
        rows = [r for r in feeds if feeds[r]]
        B, K = self.seen.shape[0], max(len(feeds[r]) for r in rows)
        ids = torch.zeros(B, K, dtype=torch.long)
        fed = torch.zeros(B, K, dtype=torch.bool)
        for r in rows:
            ids[r, :len(feeds[r])] = torch.tensor(feeds[r], dtype=torch.long)
            fed[r, :len(feeds[r])] = True
        positions = torch.tensor(lengths)[:, None] + torch.arange(K)  # (B, K)
        # New slot j of row b is visible to query i of row b when j <= i and slot j is really fed;
        # a padding query sees itself, so no row of the mask is empty.
        causal = torch.ones(K, K, dtype=torch.bool).tril()
        new = (causal[None] & fed[:, None, :]) | torch.eye(K, dtype=torch.bool)[None]  # (B, K, K)
        visible = torch.cat([self.seen[:, None, :].expand(B, K, -1), new], dim=2)  # (B, K, slots + K)
        out = self.model(input_ids=ids.to(self.device), attention_mask=self._additive(visible)[:, None].to(self.device),
                         position_ids=positions.clamp(max=context_length(self.model) - 1).to(self.device),
                         past_key_values=self.cache, use_cache=True)
        self.cache = out.past_key_values
        self.seen = torch.cat([self.seen, fed], dim=1)
        if keep is None:
            return {}
        if keep == "last":
            return {r: out.logits[r, len(feeds[r]) - 1][None] for r in rows}
        return {r: out.logits[r, :len(feeds[r])] for r in rows}

