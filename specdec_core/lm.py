"""A causal LM with its own KV cache: prefill, extend by k tokens in ONE forward pass, roll back n tokens.

A tree of candidate tokens can also be fed in one pass (`extend_tree`): every node attends to the
committed tokens and to its own ancestors only, at the position of its depth; `keep_path` then
keeps only the accepted branch, so the cache reads as if that branch had been fed in a line.

One `CachedLM` belongs to one generation call. The model it wraps is shared and read-only (many
sessions use one cached model), so every call makes its own cache: nothing mutable is shared.

A plain GPT-2 (the bundled pair, the hub's GPT-2 family) runs through `_GPT2Pass`, transformers'
own arithmetic without its per-call machinery; any other causal LM runs through its own forward
with a transformers DynamicCache. `forward="transformers"` sends a GPT-2 the second way too (the
benchmark compares both).
"""
import math
import time

import torch
import torch.nn.functional as F
from transformers import DynamicCache, GPT2LMHeadModel, PreTrainedModel
from transformers.cache_utils import DynamicLayer


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
    """Whether `model` is a plain GPT-2 that the lean passes (this module's and batch_lm's) reproduce op for op."""
    cfg = model.config
    return (type(model) is GPT2LMHeadModel and not model.training
            and getattr(cfg, "_attn_implementation", None) == "sdpa" and cfg.activation_function == "gelu_new"
            and not cfg.add_cross_attention and not cfg.scale_attn_by_inverse_layer_idx
            and not cfg.reorder_and_upcast_attn and model.lm_head.bias is None)


class GPT2Weights:
    """The tensors of a plain GPT-2 that a lean pass reads: shared with the model, never copied or written."""

    def __init__(self, model: GPT2LMHeadModel):
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


class _GPT2Pass(GPT2Weights):
    """GPT-2 forward passes over a KV cache, without transformers' per-call machinery.

    Why: for models this small, transformers' forward spends more time in Python (config lookups,
    mask builders, output dataclasses, a fresh concatenation of the whole cache per layer) than in
    arithmetic. On one CPU thread, a 1-layer d=128 GPT-2 (the bundled draft's shape) took 0.69 ms a
    pass through transformers and takes 0.27 ms here; an 8-layer d=384 one (the target's) 5.4 ms and
    3.6 ms (docs/benchmarks.md). The ops are transformers'
    own GPT2LMHeadModel ops in its order (Conv1D as addmm, sdpa attention with the same mask and
    scale, gelu_new), so the logits are the same; tests/core/test_lm_fast.py holds them side by side.

    What is left besides the arithmetic is kept small (docs/benchmarks.md, the pass's profile): the
    fused q/k/v product is written straight into the layer's cache row (no split, no copy into
    separate key and value buffers), gelu_new runs in place, the residual adds are in place, and the
    causal masks are views of one mask made once. A layer's cache is (capacity, 3E): q | k | v per
    position (the q third is never read again; keeping it lets one addmm write the whole row).
    Buffers grow by doubling; a rollback only moves `length`.
    """

    def __init__(self, model: GPT2LMHeadModel):
        super().__init__(model)
        self.cache: list[torch.Tensor] = []  # per layer (capacity, 3E): q | k | v of every fed position
        self.heads: list[torch.Tensor] = []  # per layer the same memory as (3, 1, H, capacity, D)
        self._causal: torch.Tensor | None = None  # (max_positions, max_positions) bool, lower triangle

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

    @torch.inference_mode()
    def __call__(self, tokens: list[int], past: int, keep: int, hidden: bool = False):
        """Logits (keep, V) of the last `keep` of `tokens`, fed after `past` cached positions; with
        `hidden`, also the final hidden states (k, E) of every fed token (after ln_f)."""
        k = len(tokens)
        if past + k > self.max_positions:
            raise ValueError(f"{past + k} positions exceed the model's {self.max_positions}")
        self._reserve(past + k)
        ids = torch.tensor(tokens, dtype=torch.long, device=self.wte.device)
        x = torch.embedding(self.wte, ids) + self.wpe[past:past + k]  # (k, E)
        # transformers' masks: none for one query or an empty cache (is_causal), else a boolean one.
        mask = None
        if k > 1 and past:
            if self._causal is None:
                n = self.max_positions
                self._causal = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
            mask = self._causal[past:past + k, :past + k]  # (k, past + k)
        return self._layers(x, past, mask, k > 1 and not past, keep, hidden)

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
        return self._layers(x, past, mask, False, k, hidden)

    def _layers(self, x: torch.Tensor, past: int, mask: torch.Tensor | None, causal: bool, keep: int,
                hidden: bool = False):
        """The transformer blocks over k new positions x (k, E), caching their keys and values; the
        logits of the last `keep`, and with `hidden` the final hidden states of all k."""
        k, E = x.shape[0], self.embed_dim
        end, shape, eps, c = past + k, (E,), self.eps, math.sqrt(2.0 / math.pi)
        for (ln1_w, ln1_b, qkv_w, qkv_b, scale, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, out_w, out_b), \
                cache, heads in zip(self.blocks, self.cache, self.heads):
            torch.addmm(qkv_b, torch.layer_norm(x, shape, ln1_w, ln1_b, eps), qkv_w, out=cache[past:end])
            att = F.scaled_dot_product_attention(heads[0, :, :, past:end], heads[1, :, :, :end], heads[2, :, :, :end],
                                                 attn_mask=mask, dropout_p=0.0, scale=scale, is_causal=causal)
            # (1, H, k, D); transformers' transpose + reshape, a copy only where the layout needs one
            x = torch.addmm(proj_b, att[0].transpose(0, 1).reshape(k, E), proj_w).add_(x)
            h = torch.addmm(fc_b, torch.layer_norm(x, shape, ln2_w, ln2_b, eps), fc_w)  # (k, 4E)
            # gelu_new, 0.5 h (1 + tanh(c (h + 0.044715 h^3))), in transformers' order, in place
            t = torch.pow(h, 3.0).mul_(0.044715).add_(h).mul_(c).tanh_().add_(1.0)
            x = torch.addmm(out_b, h.mul_(0.5).mul_(t), out_w).add_(x)
        if hidden:
            h = torch.layer_norm(x, shape, *self.ln_f, eps)  # (k, E)
            return F.linear(h[k - keep:], self.lm_head), h
        return F.linear(torch.layer_norm(x[k - keep:], shape, *self.ln_f, eps), self.lm_head)

    @torch.inference_mode()
    def keep(self, start: int, slots: list[int]) -> None:
        """Move the cached positions `slots` (in order) to start, start + 1, ... (a tree's accepted path)."""
        index = torch.tensor(slots, dtype=torch.long, device=self.wte.device)
        for cache in self.cache:
            cache[start:start + len(slots)] = cache[index]


FORWARDS = ("core", "transformers")


class CachedLM:
    """The tokens fed so far live in the KV cache; `extend` feeds more and returns their logits."""

    def __init__(self, model: PreTrainedModel, forward: str = "core"):
        """forward: "core" (the lean GPT-2 pass where the model allows it) or "transformers" (its own forward)."""
        if forward not in FORWARDS:
            raise ValueError(f"forward must be one of {FORWARDS}, got {forward!r}")
        self.model = model
        self.device = next(model.parameters()).device
        fast = forward == "core" and lean_gpt2(model)
        self._gpt2 = _GPT2Pass(model) if fast else None
        self.cache = None if fast else DynamicCache(config=model.config)  # transformers' cache, other models
        self.length = 0  # tokens in the cache
        self.passes = 0  # forward passes made (prefill included)
        self.last_pass_s = 0.0  # wall time of the latest pass
        self.tree_start: int | None = None  # cache length when the current tree began (None: no tree)
        self._tree_depth: list[int] = []  # per tree node fed so far: its depth (0 = next position)
        self._tree_seen: torch.Tensor | None = None  # (nodes, nodes) bool: node i attends to node j

    @property
    def lean(self) -> bool:
        """Whether the passes run the core's lean GPT-2 pass (else the model's transformers forward)."""
        return self._gpt2 is not None

    def extend(self, tokens: list[int], logits_to_keep: int | None = None, hidden: bool = False):
        """Feed `tokens` in one forward pass; return float32 logits (k, V) of the last k positions
        (k = logits_to_keep, default all fed tokens). Logit row i predicts the token after position i.
        With `hidden`, return (logits, hidden states): the model's final hidden state (after its last
        norm) of every fed token, float32 (len(tokens), E), as drafters that read the target need."""
        if not tokens:
            raise ValueError("extend needs at least one token")
        if self.tree_start is not None:
            raise ValueError("a tree is being fed: end it with keep_path first")
        keep = len(tokens) if logits_to_keep is None else logits_to_keep
        cuda = self.device.type == "cuda"
        if cuda:  # an accelerator runs asynchronously: time this pass, not the queue before it
            torch.cuda.synchronize(self.device)
        start = time.perf_counter()
        states = None
        if self._gpt2 is not None:
            out = self._gpt2(tokens, self.length, keep, hidden)  # (keep, V) [, (k, E)]
            logits, states = out if hidden else (out, None)
        else:
            ids = torch.tensor([tokens], dtype=torch.long, device=self.device)
            more = {"output_hidden_states": True} if hidden else {}
            out = self.model(input_ids=ids, past_key_values=self.cache, use_cache=True, logits_to_keep=keep, **more)
            self.cache = out.past_key_values
            logits = out.logits[0]
            states = out.hidden_states[-1][0] if hidden else None
        if cuda:
            torch.cuda.synchronize(self.device)
        self.last_pass_s = time.perf_counter() - start
        self.length += len(tokens)
        self.passes += 1
        return (logits.float(), states.float()) if hidden else logits.float()  # (keep, V) [, (k, E)]

    def extend_tree(self, tokens: list[int], parents: list[int], hidden: bool = False):
        """Feed tree nodes in ONE pass; return float32 logits (k, V), row i after the path to node i.

        Nodes are numbered in the order fed since the tree began (over several calls if need be);
        parents[i] is the number of node i's parent (an earlier node), or -1 when it hangs straight
        off the cached tokens. Node i sees the cache before the tree, its ancestors and itself, at
        position tree_start + depth(i). End the tree with `keep_path`. With `hidden`, return (logits,
        hidden states (k, E)) as `extend` does."""
        if not tokens or len(tokens) != len(parents):
            raise ValueError("extend_tree needs one parent per token, and at least one token")
        if self.tree_start is None:
            self.tree_start, self._tree_depth = self.length, []
            self._tree_seen = torch.zeros(0, 0, dtype=torch.bool)
        old, k = len(self._tree_depth), len(tokens)
        seen = torch.zeros(old + k, old + k, dtype=torch.bool)  # (all nodes, all nodes)
        seen[:old, :old] = self._tree_seen
        for i, parent in enumerate(parents):
            node = old + i
            if not -1 <= parent < node:
                raise ValueError(f"parent {parent} of tree node {node} must be an earlier node or -1")
            if parent >= 0:
                seen[node] = seen[parent]
            seen[node, node] = True
            self._tree_depth.append(self._tree_depth[parent] + 1 if parent >= 0 else 0)
        self._tree_seen = seen
        positions = [self.tree_start + d for d in self._tree_depth[old:]]
        mask = torch.cat([torch.ones(k, self.tree_start, dtype=torch.bool), seen[old:]], dim=1)  # (k, cache + k)
        start = time.perf_counter()
        if self._gpt2 is not None:
            out = self._gpt2.tree(tokens, positions, self.length, mask.to(self.device), hidden)
        else:
            out = self._forward_tree(tokens, positions, mask, hidden)
        logits, states = out if hidden else (out, None)
        self.last_pass_s = time.perf_counter() - start
        self.length += k
        self.passes += 1
        return (logits.float(), states.float()) if hidden else logits.float()  # (k, V) [, (k, E)]

    def _forward_tree(self, tokens: list[int], positions: list[int], mask: torch.Tensor, hidden: bool = False):
        """A tree pass through the model's own forward, with a custom 4D attention mask."""
        impl = getattr(self.model.config, "_attn_implementation", None)
        if impl not in ("sdpa", "eager"):
            raise ValueError(f"tree verification needs a custom 4D attention mask, which {impl!r} attention "
                             f"does not take: load {type(self.model).__name__} with attn_implementation='sdpa'")
        dtype = next(self.model.parameters()).dtype
        additive = torch.zeros(mask.shape, dtype=dtype).masked_fill(~mask, torch.finfo(dtype).min)
        out = self.model(input_ids=torch.tensor([tokens], dtype=torch.long, device=self.device),
                         attention_mask=additive[None, None].to(self.device),  # (1, 1, k, cache + k)
                         position_ids=torch.tensor([positions], dtype=torch.long, device=self.device),
                         past_key_values=self.cache, use_cache=True, output_hidden_states=hidden)
        self.cache = out.past_key_values
        return (out.logits[0], out.hidden_states[-1][0]) if hidden else out.logits[0]

    def keep_path(self, nodes: list[int]) -> None:
        """End the current tree, keeping only `nodes` (a chain from a node hanging off the cache down
        through its descendants, in order) right after the tokens cached before the tree."""
        if self.tree_start is None:
            raise ValueError("keep_path needs a tree fed with extend_tree")
        for i, node in enumerate(nodes):
            if not 0 <= node < len(self._tree_depth) or self._tree_depth[node] != i:
                raise ValueError(f"keep_path needs a root-to-node chain of tree nodes, got {nodes}")
            if i and not self._tree_seen[node, nodes[i - 1]]:
                raise ValueError(f"tree node {node} does not descend from node {nodes[i - 1]}")
        start, slots = self.tree_start, [self.tree_start + n for n in nodes]
        if self._gpt2 is not None:
            self._gpt2.keep(start, slots)
        else:
            index = torch.tensor(list(range(start)) + slots, dtype=torch.long, device=self.device)
            for layer in self.cache.layers:
                if type(layer) is not DynamicLayer:
                    raise ValueError(f"cannot keep a tree path in a {type(layer).__name__} cache")
                if not layer.is_initialized:
                    continue  # a layer this model never wrote to
                layer.keys, layer.values = layer.keys.index_select(-2, index), layer.values.index_select(-2, index)
        self.length = start + len(nodes)
        self.tree_start, self._tree_depth, self._tree_seen = None, [], None

    def prefill(self, tokens: list[int], hidden: bool = False) -> torch.Tensor | None:
        """Feed a prompt (no logits needed: the LM head runs on one position only). With `hidden`,
        return the prompt's final hidden states (len(tokens), E) (None for an empty prompt)."""
        if tokens:
            out = self.extend(tokens, logits_to_keep=1, hidden=hidden)
            return out[1] if hidden else None
        return None

    def rollback(self, n: int) -> None:
        """Forget the last n tokens of the cache (transformers 5.x: crop(-n) removes n tokens)."""
        if not 0 <= n <= self.length:
            raise ValueError(f"cannot roll back {n} of {self.length} cached tokens")
        if self.tree_start is not None:
            raise ValueError("a tree is being fed: end it with keep_path first")
        if n:
            if self.cache is not None:
                self.cache.crop(-n)
            self.length -= n  # the GPT-2 buffers: later positions are simply overwritten
