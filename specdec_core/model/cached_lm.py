"""A causal LM with its own KV cache: prefill, extend by k tokens in ONE forward pass, roll back n tokens.

A tree of candidate tokens can also be fed in one pass (`extend_tree`): every node attends to the
committed tokens and to its own ancestors only, at the position of its depth; `keep_path` then
keeps only the accepted branch, so the cache reads as if that branch had been fed in a line.

One `CachedLM` belongs to one generation call. The model it wraps is shared and read-only (many
sessions use one cached model), so every call makes its own cache: nothing mutable is shared.

The passes themselves are passes.py's choice: the compiled GPT-2 pass for a plain GPT-2 (the bundled
pair, the hub's GPT-2 family), its Python reference with forward="exact" or where the kernel is not
built, the model's own transformers forward for any other causal LM. `forward="transformers"`, or a
model wrapped in `forwards.TransformersForward`, sends a GPT-2 the third way too (the benchmark
compares them).
"""
import time

import torch
from transformers import PreTrainedModel

from .compiled import CompiledGPT2Pass
from .forwards import ONE_ROW_FORWARDS, check_forward
from .gpt2 import GPT2Pass
from .passes import model_pass
from .transformers_pass import TransformersPass


class CachedLM:
    """The tokens fed so far live in the KV cache; `extend` feeds more and returns their logits."""

    def __init__(self, model: PreTrainedModel, forward: str = "core"):
        """forward: "core" (the lean GPT-2 pass where the model allows it: the compiled one where built),
        "exact" (the Python reference pass: transformers' bits) or "transformers" (its own forward)."""
        self.model = model
        self.device = next(model.parameters()).device
        forward = check_forward(forward, ONE_ROW_FORWARDS)
        self._pass: CompiledGPT2Pass | GPT2Pass | TransformersPass = model_pass(model, forward=forward)
        self.length = 0  # tokens in the cache
        self.passes = 0  # forward passes made (prefill included)
        self.last_pass_s = 0.0  # wall time of the latest pass
        self.tree_start: int | None = None  # cache length when the current tree began (None: no tree)
        self._tree_depth: list[int] = []  # per tree node fed so far: its depth (0 = next position)
        self._tree_seen: torch.Tensor | None = None  # (nodes, nodes) bool: node i attends to node j

    @property
    def lean(self) -> bool:
        """Whether the passes run the core's lean GPT-2 pass (else the model's transformers forward)."""
        return not isinstance(self._pass, TransformersPass)

    @property
    def cache(self):
        """transformers' DynamicCache where the model's own forward runs, else None (the lean pass
        keeps its own buffers)."""
        return None if self.lean else self._pass.cache

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
        out = self._pass(tokens, self.length, keep, hidden)  # (keep, V) [, (k, E)]
        logits, states = out if hidden else (out, None)
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
        out = self._pass.tree(tokens, positions, self.length, mask, hidden)
        logits, states = out if hidden else (out, None)
        self.last_pass_s = time.perf_counter() - start
        self.length += k
        self.passes += 1
        return (logits.float(), states.float()) if hidden else logits.float()  # (k, V) [, (k, E)]

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
        self._pass.keep(start, slots)
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
            self._pass.rollback(n)
            self.length -= n
