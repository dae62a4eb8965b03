"""Token trees on the drafter's side: the tree's shape, the `DraftTree` a drafter proposes, and how
one is grown from a drafter's distributions (`draft_tree`). This lives below the sampler so that any
drafter can draft trees (`DraftSession.propose_tree`); verifying a tree is `specdec_core.tree`'s job.

A node's children are drawn from the drafter's q at that node WITHOUT replacement (greedy mode: its
most likely tokens). Either a static `shape` (branching factor per depth) or, with a `node_budget`,
best-first: each depth's share of the budget goes where the drafter's path probability promises the
most (EAGLE-2, Li et al. 2024).
"""
import heapq
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from .sampling_config import SamplingConfig, sample, to_probs

MAX_TREE_DEPTH = 8  # deeper than this, even a chain accepted at 0.9 keeps under half of its last level
MAX_BRANCHING = 8  # children per node
MAX_TREE_NODES = 64


# --- shapes -----------------------------------------------------------------------------------------

def tree_size(shape: tuple[int, ...]) -> int:
    """Nodes in a full static tree: (2, 2, 1, 1) has 2 + 4 + 4 + 4 = 14."""
    total, width = 0, 1
    for k in shape:
        width *= k
        total += width
    return total


def check_shape(shape) -> tuple[int, ...]:
    """The shape as a tuple of branching factors, or ValueError naming `shape`."""
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        raise ValueError(f"shape must be a tuple of branching factors per depth, got {shape!r}")
    shape = tuple(shape)
    if not 1 <= len(shape) <= MAX_TREE_DEPTH or any(
            isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_BRANCHING for k in shape):
        raise ValueError(f"shape must hold 1 to {MAX_TREE_DEPTH} integers in [1, {MAX_BRANCHING}], got {shape!r}")
    if tree_size(shape) > MAX_TREE_NODES:
        raise ValueError(f"shape {shape} has {tree_size(shape)} nodes, more than {MAX_TREE_NODES}")
    return shape


def check_node_budget(node_budget) -> int | None:
    """None (a static tree) or a node count in [1, MAX_TREE_NODES], else ValueError naming `node_budget`."""
    if node_budget is None:
        return None
    if isinstance(node_budget, bool) or not isinstance(node_budget, int) or not 1 <= node_budget <= MAX_TREE_NODES:
        raise ValueError(f"node_budget must be None or an integer in [1, {MAX_TREE_NODES}], got {node_budget!r}")
    return node_budget


# --- the tree ---------------------------------------------------------------------------------------

@dataclass
class DraftTree:
    """What a drafter proposes for a tree round (the tree-shaped `Proposal`)."""
    tokens: list[int] = field(default_factory=list)  # node i's token; parents come before children
    parents: list[int] = field(default_factory=list)  # node i's parent, -1 = the committed context
    depth: list[int] = field(default_factory=list)  # 1-based
    score: list[float] = field(default_factory=list)  # drafter's probability of the path down to node i
    # node (-1: the context) -> (V,) the q its children were drawn from (greedy: softmax, for ranking)
    q: dict[int, torch.Tensor] = field(default_factory=dict)
    children: dict[int, list[int]] = field(default_factory=dict)  # in the order they were drawn
    pass_s: list[float] = field(default_factory=list)  # wall time of each drafter forward pass

    def path_tokens(self, node: int) -> list[int]:
        """Tokens from the context down to `node` (empty for -1)."""
        out = []
        while node >= 0:
            out.append(self.tokens[node])
            node = self.parents[node]
        return out[::-1]

    def add(self, parent: int, token: int, q_token: float) -> int:
        """Hang a node with `token` under `parent` (drawn with probability q_token there); its number."""
        node = len(self.tokens)
        self.tokens.append(token)
        self.parents.append(parent)
        self.depth.append(self.depth[parent] + 1 if parent >= 0 else 1)
        self.score.append((self.score[parent] if parent >= 0 else 1.0) * q_token)
        self.children.setdefault(parent, []).append(node)
        return node


# (tree so far, nodes) -> raw drafter logits (len(nodes), V) after the path to each node (-1: the context)
DrafterLogits = Callable[[DraftTree, list[int]], torch.Tensor]


def tree_q(logits: torch.Tensor, sampling: SamplingConfig) -> torch.Tensor:
    """A node's q from the drafter's raw logits (V,): greedy drafting ranks children by the plain
    softmax; sampling draws from q itself (after the sampling transform)."""
    return torch.softmax(logits.float(), -1) if sampling.greedy else to_probs(logits, sampling)


def _add_child(tree: DraftTree, parent: int, left: dict, sampling: SamplingConfig,
               generator: torch.Generator) -> int | None:
    """Draw `parent`'s next child without replacement (greedy: the likeliest token not yet drawn);
    None when q has no mass left. `left[parent]` is q with the drawn children zeroed."""
    rest = left.setdefault(parent, tree.q[parent].clone())
    mass = float(rest.sum())
    if mass <= 1e-12:
        return None
    x = int(rest.argmax()) if sampling.greedy else sample(rest / mass, generator)
    rest[x] = 0.0
    return tree.add(parent, x, float(tree.q[parent][x]))


def draft_tree(logits_at: DrafterLogits, shape: tuple[int, ...], sampling: SamplingConfig,
               generator: torch.Generator, node_budget: int | None = None,
               max_depth: int | None = None) -> DraftTree:
    """A tree of drafts at most `max_depth` (default len(shape)) deep. Static: a node at depth d gets
    shape[d] children. With `node_budget`: that many nodes, each level's share placed best-first by
    the drafter's path probability (shape then only sets the depth). `logits_at` is asked once per level."""
    depth = len(shape) if max_depth is None else min(len(shape), max_depth)
    tree, left = DraftTree(), {}
    tree.q[-1] = tree_q(logits_at(tree, [-1])[0], sampling)

    def look(nodes: list[int]) -> None:  # the drafter's q at new nodes, in one pass
        for node, logits in zip(nodes, logits_at(tree, nodes)):
            tree.q[node] = tree_q(logits, sampling)

    if node_budget is None:
        level = [-1]
        for d in range(depth):
            level = [c for parent in level for c in
                     (_add_child(tree, parent, left, sampling, generator) for _ in range(shape[d])) if c is not None]
            if d + 1 < depth and level:
                look(level)
        return tree

    # Best-first, one depth at a time (EAGLE-2's expansion): each level gets its share of the budget,
    # and its nodes go to the best "slots" across the level. A slot is a node's next child, worth
    # score(node) * the largest q left there: the greedy child's path probability; in sampling mode an
    # estimate made before the draw, so that whether a child exists never depends on the child itself.
    # One drafter pass per level, as for a static shape.
    def worth(node: int) -> float:  # of the node's next slot
        rest = left.get(node, tree.q[node])
        return (tree.score[node] if node >= 0 else 1.0) * float(rest.max())

    level = [-1]
    for d in range(depth):
        width = node_budget // depth + (d < node_budget % depth)  # this level's share of the budget
        heap = [(-worth(n), i, n) for i, n in enumerate(level)]  # a max-heap of slots
        heapq.heapify(heap)
        new, tie = [], len(heap)
        while heap and len(new) < width:
            _, _, node = heapq.heappop(heap)
            child = _add_child(tree, node, left, sampling, generator)
            if child is None:
                continue
            new.append(child)
            if len(tree.children[node]) < MAX_BRANCHING and float(left[node].sum()) > 1e-12:
                heapq.heappush(heap, (-worth(node), tie, node))
                tie += 1
        if d + 1 < depth and new:
            look(new)
        level = new
    return tree
