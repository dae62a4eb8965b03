"""A causal LM reading many sequences at once: one forward pass for B ragged rows, each with its own
KV cache length, and a per-row rollback.

A round of batched decoding feeds a different number of tokens to each row (a speculative row
feeds its last committed token plus as many drafts as it drew; a finished row feeds none). The pass
pads the rows to the longest feed; an attention mask keeps every row to its own committed tokens
and to the causal prefix of its own feed, and each row's tokens sit at its own positions. Padding
queries compute garbage that nobody reads; padding keys land past the row's length, where the
row's next feed overwrites them. A rollback moves one row's length back, nothing else.

`BatchLM(model, rows, forward)` picks the lean GPT-2 pass (`_BatchGPT2`, the ops of lm._GPT2Pass
batched: Conv1D as addmm, sdpa with the same scale, gelu_new) for a plain GPT-2, and transformers'
own forward (`_BatchForward`: one DynamicCache that only grows, per-row slot masks) otherwise.
Rows that finish are retired: the lean pass drops them from its buffers, so a nearly finished
batch does not pay for its finished rows.
"""
import math
import time

import torch
import torch.nn.functional as F
from transformers import DynamicCache, GPT2LMHeadModel, PreTrainedModel

from .lm import FORWARDS, GPT2Weights, context_length, lean_gpt2

KEEP = ("all", "last", None)  # which logits a pass returns per row: every fed position, the last, none


class _BatchGPT2(GPT2Weights):
    """GPT-2 passes over B rows of a KV cache: per layer (rows, capacity, H, D) keys and values."""

    def __init__(self, model: GPT2LMHeadModel, rows: int):
        super().__init__(model)
        self.slot = list(range(rows))  # row -> its index in the buffers (None once retired)
        self.keys: list[torch.Tensor] = [self._empty(rows, 0) for _ in self.blocks]
        self.values: list[torch.Tensor] = [self._empty(rows, 0) for _ in self.blocks]

    def _empty(self, rows: int, capacity: int) -> torch.Tensor:
        return self.wte.new_zeros(rows, capacity, self.n_head, self.head_dim)

    def _reserve(self, n: int) -> None:
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

    @torch.inference_mode()
    def __call__(self, feeds: dict[int, list[int]], lengths: list[int], keep) -> dict[int, torch.Tensor]:
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
        self._reserve(int(pos.max()) + 1)
        L = int(pos.max()) + 1
        x = F.embedding(ids, self.wte) + self.wpe[pos.clamp(max=self.max_positions - 1)]  # (B, K, E)
        # Query j of a row sees the row's cache and its own feed up to j (padding queries alike: no
        # row of the mask is empty, so no NaN; nobody reads their output).
        mask = (torch.arange(L, device=dev)[None, None, :] <= pos[:, :, None])[:, None]  # (B, 1, K, L)
        E, H, D = self.embed_dim, self.n_head, self.head_dim
        bidx = torch.arange(B, device=dev)[:, None].expand(B, K)
        for (ln1_w, ln1_b, qkv_w, qkv_b, scale, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, out_w, out_b), \
                keys, values in zip(self.blocks, self.keys, self.values):
            h = F.layer_norm(x, (E,), ln1_w, ln1_b, self.eps)
            q, key, value = torch.addmm(qkv_b, h.view(B * K, E), qkv_w).view(B, K, 3, H, D).unbind(2)  # (B, K, H, D)
            keys[bidx, pos] = key
            values[bidx, pos] = value
            att = F.scaled_dot_product_attention(q.transpose(1, 2), keys[:, :L].transpose(1, 2),
                                                 values[:, :L].transpose(1, 2), attn_mask=mask, dropout_p=0.0,
                                                 scale=scale)  # (B, H, K, D)
            x = x + torch.addmm(proj_b, att.transpose(1, 2).reshape(B * K, E), proj_w).view(B, K, E)
            h = torch.addmm(fc_b, F.layer_norm(x, (E,), ln2_w, ln2_b, self.eps).view(B * K, E), fc_w)
            h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))  # gelu_new
            x = x + torch.addmm(out_b, h, out_w).view(B, K, E)
        if keep is None:
            return {}
        at = {r: b for b, r in enumerate(live)}
        if keep == "last":
            last = x[torch.arange(B, device=dev), (fed - 1).clamp(min=0)]  # (B, E)
            logits = F.linear(F.layer_norm(last, (E,), *self.ln_f, self.eps), self.lm_head)  # (B, V)
            return {r: logits[at[r]][None] for r in rows}
        logits = F.linear(F.layer_norm(x, (E,), *self.ln_f, self.eps), self.lm_head)  # (B, K, V)
        return {r: logits[at[r], :len(feeds[r])] for r in rows}


class _BatchForward:
    """Any causal LM through its own forward: one DynamicCache for the batch whose slots only grow;
    `seen` (rows, slots) says which slots hold a row's committed tokens, so a rollback is a mask edit."""

    def __init__(self, model: PreTrainedModel, rows: int):
        impl = getattr(model.config, "_attn_implementation", None)
        if impl not in ("sdpa", "eager"):
            raise ValueError(f"batched decoding through {type(model).__name__}'s forward needs a custom 4D "
                             f"attention mask, which {impl!r} attention does not take: load it with "
                             "attn_implementation='sdpa'")
        self.model, self.device = model, next(model.parameters()).device
        self.cache = DynamicCache(config=model.config)
        self.seen = torch.zeros(rows, 0, dtype=torch.bool)  # (rows, slots)
        self.retired: set[int] = set()

    def retire(self, rows: list[int]) -> None:
        self.retired.update(rows)

    @torch.inference_mode()
    def __call__(self, feeds: dict[int, list[int]], lengths: list[int], keep) -> dict[int, torch.Tensor]:
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
        dtype = next(self.model.parameters()).dtype
        additive = torch.zeros(visible.shape, dtype=dtype).masked_fill(~visible, torch.finfo(dtype).min)
        out = self.model(input_ids=ids.to(self.device), attention_mask=additive[:, None].to(self.device),
                         position_ids=positions.clamp(max=context_length(self.model) - 1).to(self.device),
                         past_key_values=self.cache, use_cache=True)
        self.cache = out.past_key_values
        self.seen = torch.cat([self.seen, fed], dim=1)
        if keep is None:
            return {}
        if keep == "last":
            return {r: out.logits[r, len(feeds[r]) - 1][None] for r in rows}
        return {r: out.logits[r, :len(feeds[r])] for r in rows}

    def rollback(self, row: int, n: int) -> None:
        """Unsee the row's last n committed slots."""
        if n:
            slots = self.seen[row].nonzero().view(-1)[-n:]
            self.seen[row, slots] = False


class BatchLM:
    """B rows fed together: `extend({row: tokens})` is ONE forward pass over every row it names."""

    def __init__(self, model: PreTrainedModel, rows: int, forward: str = "core"):
        if forward not in FORWARDS:
            raise ValueError(f"forward must be one of {FORWARDS}, got {forward!r}")
        self.model = model
        self.device = next(model.parameters()).device
        lean = forward == "core" and lean_gpt2(model)
        self._pass = _BatchGPT2(model, rows) if lean else _BatchForward(model, rows)
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
        logits = self._pass(feeds, self.lengths, keep)
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
        if isinstance(self._pass, _BatchForward):
            self._pass.rollback(row, n)
        self.lengths[row] -= n

    @torch.inference_mode()
    def retire(self, rows: list[int]) -> None:
        """Finished rows: they are never fed again (the lean pass frees their buffers)."""
        rows = [r for r in rows if self.live[r]]
        if rows:
            for r in rows:
                self.live[r] = False
            self._pass.retire(rows)
