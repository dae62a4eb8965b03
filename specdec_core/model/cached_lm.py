"""A causal LM with its own KV cache, for one row or many: the one object every decoder feeds.

Rows as vLLM and gpt-fast hold them: each row is a sequence with its own cache length, and one pass
feeds any rows any number of tokens (`feed({row: tokens})`), each at its own positions; `rollback`
forgets the last n tokens of one row, `retire` drops finished rows. One row is a batch of one:
`extend`, `prefill` and `rollback` default to row 0, and a token tree (`extend_tree`, then
`keep_path`) is fed to the one row of a one-row LM: every node attends to the committed tokens and to
its own ancestors only, at the position of its depth, and `keep_path` keeps only the accepted branch,
so the cache reads as if that branch had been fed in a line.

One `CachedLM` belongs to one generation call (or one batch). The model it wraps is shared and
read-only (many sessions use one cached model), so every call makes its own cache: nothing mutable
is shared.

The passes themselves are pass_choice.py's choice: the compiled GPT-2 pass for a plain GPT-2 (the bundled
pair, the hub's GPT-2 family), its Python reference with forward="exact" or where the kernel is not
built, the model's own transformers forward for any other causal LM. `forward="transformers"`, or a
model wrapped in `forward_choice.TransformersForward`, sends a GPT-2 the third way too (the benchmark
compares them).
"""
import time

import torch
from transformers import PreTrainedModel

from .forward_choice import ALL_FORWARDS, check_forward
from .pass_choice import model_pass
from .transformers_pass import TransformersPass

KEEP = ("all", "last", None)  # which logits `feed` returns per row: every fed position, the last, none


class CachedLM:
    """The tokens fed so far live in the KV cache, row by row; `feed` / `extend` feed more and return
    their logits."""

    def __init__(self, model: PreTrainedModel, forward: str = "core", rows: int = 1):
        """forward: "core" (the lean GPT-2 pass where the model allows it: the compiled one where built),
        "exact" (the Python reference pass: transformers' bits) or "transformers" (its own forward);
        rows: how many sequences the cache holds."""
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
            raise ValueError(f"rows must be an integer >= 1, got {rows!r}")
        self.model = model
        self.device = next(model.parameters()).device
        self._pass = model_pass(model, rows, check_forward(forward, ALL_FORWARDS))
        self.lengths = [0] * rows  # tokens in each row's cache
        self.live = [True] * rows  # False once retired
        self.passes = 0  # forward passes made (prefill included)
        self.last_pass_s = 0.0  # wall time of the latest pass
        self.tree_start: int | None = None  # cache length when the current tree began (None: no tree)
        self._tree_depth: list[int] = []  # per tree node fed so far: its depth (0 = next position)
        self._tree_seen: torch.Tensor | None = None  # (nodes, nodes) bool: node i attends to node j

    @property
    def length(self) -> int:
        """Tokens in the cache of a one-row LM."""
        if len(self.lengths) != 1:
            raise ValueError(f"length is a one-row LM's; this one holds {len(self.lengths)} rows: read lengths")
        return self.lengths[0]

    @property
    def lean(self) -> bool:
        """Whether the passes run the core's lean GPT-2 pass (else the model's transformers forward)."""
        return not isinstance(self._pass, TransformersPass)

    @property
    def cache(self):
        """transformers' DynamicCache where the model's own forward runs, else None (the lean pass
        keeps its own buffers)."""
        return None if self.lean else self._pass.cache

    def feed(self, feeds: dict[int, list[int]], keep="all", hidden: bool = False) -> dict:
        """ONE forward pass over every row `feeds` names, each fed its tokens after its cached ones; return
        float32 logits per row: (k, V) for every fed position (keep="all"), (1, V) for the last ("last"),
        none (None), or the last `keep` (an int). Logit row i predicts the token after fed position i. With
        `hidden`, each row's value is (logits, hidden states (k, E)): the model's final hidden state (after
        its last norm) of every fed token, as drafters that read the target need. Rows fed no tokens are
        left alone."""
        feeds = {r: list(t) for r, t in feeds.items() if t}
        if not feeds:
            return {}
        if self.tree_start is not None:
            raise ValueError("a tree is being fed: end it with keep_path first")
        if any(not self.live[r] for r in feeds):
            raise ValueError("a retired row cannot be fed")
        if keep in KEEP:
            keep = {r: len(t) if keep == "all" else 1 if keep == "last" else 0 for r, t in feeds.items()}
        elif isinstance(keep, int) and not isinstance(keep, bool):
            keep = {r: min(keep, len(t)) for r, t in feeds.items()}
        else:
            raise ValueError(f"keep must be one of {KEEP} or a number of positions, got {keep!r}")
        cuda = self.device.type == "cuda"
        if cuda:  # an accelerator runs asynchronously: time this pass, not the queue before it
            torch.cuda.synchronize(self.device)
        start = time.perf_counter()
        logits, states = self._pass.run(feeds, self.lengths, keep, hidden)  # {row: (keep, V)}, {row: (k, E)}
        if cuda:
            torch.cuda.synchronize(self.device)
        self.last_pass_s = time.perf_counter() - start
        for r, t in feeds.items():
            self.lengths[r] += len(t)
        self.passes += 1
        if hidden:
            return {r: (v.float(), states[r].float()) for r, v in logits.items()}
        return {r: v.float() for r, v in logits.items()}

    def extend(self, tokens: list[int], logits_to_keep: int | None = None, hidden: bool = False, row: int = 0):
        """Feed one row `tokens` in one forward pass; return float32 logits (k, V) of the last k positions
        (k = logits_to_keep, default all fed tokens), with `hidden` (logits, hidden states (len(tokens), E)),
        as `feed` returns them for one row."""
        if not tokens:
            raise ValueError("extend needs at least one token")
        return self.feed({row: tokens}, len(tokens) if logits_to_keep is None else logits_to_keep, hidden)[row]

    def prefill(self, tokens: list[int], hidden: bool = False, row: int = 0) -> torch.Tensor | None:
        """Feed a prompt (no logits needed: the LM head runs on one position only). With `hidden`,
        return the prompt's final hidden states (len(tokens), E) (None for an empty prompt)."""
        if tokens:
            out = self.extend(tokens, logits_to_keep=1, hidden=hidden, row=row)
            return out[1] if hidden else None
        return None

    def rollback(self, n: int, row: int = 0) -> None:
        """Forget the last n tokens of one row's cache."""
        if not 0 <= n <= self.lengths[row]:
            raise ValueError(f"cannot roll back {n} of row {row}'s {self.lengths[row]} cached tokens")
        if self.tree_start is not None:
            raise ValueError("a tree is being fed: end it with keep_path first")
        if n:
            self._pass.rollback(row, n)
            self.lengths[row] -= n

    def retire(self, rows: list[int]) -> None:
        """Finished rows: they are never fed again (the lean passes free their buffers)."""
        rows = [r for r in rows if self.live[r]]
        if rows:
            for r in rows:
                self.live[r] = False
            self._pass.retire(rows)

    # --- a token tree, fed to the one row ----------------------------------------------------------------

    def extend_tree(self, tokens: list[int], parents: list[int], hidden: bool = False):
        """Feed tree nodes in ONE pass; return float32 logits (k, V), row i after the path to node i.

        Nodes are numbered in the order fed since the tree began (over several calls if need be);
        parents[i] is the number of node i's parent (an earlier node), or -1 when it hangs straight
        off the cached tokens. Node i sees the cache before the tree, its ancestors and itself, at
        position tree_start + depth(i). End the tree with `keep_path`. With `hidden`, return (logits,
        hidden states (k, E)) as `extend` does."""
        if not tokens or len(tokens) != len(parents):
            raise ValueError("extend_tree needs one parent per token, and at least one token")
        length = self.length  # a tree is a one-row LM's
        if self.tree_start is None:
            self.tree_start, self._tree_depth = length, []
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
        out = self._pass.tree(tokens, positions, length, mask, hidden)
        logits, states = out if hidden else (out, None)
        self.last_pass_s = time.perf_counter() - start
        self.lengths[0] += k
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
        self._pass.keep(0, start, slots)
        self.lengths[0] = start + len(nodes)
        self.tree_start, self._tree_depth, self._tree_seen = None, [], None
