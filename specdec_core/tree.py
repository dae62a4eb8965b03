"""Token trees: draft several continuations at once, verify every branch in ONE target pass, exactly.

SpecInfer (Miao et al., 2024) drafts a tree instead of a chain and scores all its nodes in one target
pass with a tree attention mask (`CachedLM.extend_tree`); EAGLE-2 (Li et al., 2024) grows the tree
where the drafter is most confident. The chain of `sampler.py` is the tree whose shape is (1,) * gamma.

One round:
  1. The drafter grows a tree below the last committed token. A node's children are drawn from the
     drafter's q at that node WITHOUT replacement (greedy mode: its most likely tokens). Either a
     static `shape` (branching factor per depth) or, with a `node_budget`, best-first: each depth's
     share of the budget goes where the drafter's path probability promises the most (EAGLE-2's idea).
  2. The target scores the last committed token and every node in ONE pass: p at each node.
  3. From the root down: at a node, its children x_1, x_2, ... are tried in the order they were drawn.
     Child x_i is accepted with probability min(1, p_i(x_i) / q_i(x_i)); after a rejection
         p_{i+1} = norm(max(0, p_i - q_i)),   q_{i+1} = q_i with x_i removed, renormalised.
     An accepted child becomes the next node; if every child fails, the token is drawn from
     p_{m+1} (corrective); a node without children (a leaf accepted) gives a bonus token from p.
  4. The KV caches keep only the accepted path.
In greedy mode p is one-hot, so the walk follows the child equal to the target's argmax: the output
is token for token greedy decoding.

Why step 3 draws exactly from p (recursive rejection sampling, Yang et al. 2024; Jeon et al. 2024):
claim: from child i on, the token comes out with distribution p_i, whatever q_i is, as long as x_i is
drawn from q_i. With one child left (or none) this is the linear rule of `sampler.residual_distribution`:
the accept branch gives min(p_i, q_i), a rejection (chance sum(max(0, p_i - q_i))) hands over to
p_{i+1}, and min(p_i, q_i) + max(0, p_i - q_i) = p_i. With more children the hand-over is to child
i + 1, which is drawn without replacement, i.e. exactly from q_{i+1} given x_i, so by induction it also
yields p_{i+1}, and the same sum gives p_i. Whether a next child exists may depend on the drafts
already made (budget, q) but never on the target or on the u's, so the argument holds for the
best-first tree too. Two rules that look right and are not live in `specdec_core.broken`.
"""
import heapq
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from .drafters import ModelDrafter, as_drafter
from .lm import vocab_size
from .sampler import _as_model, _begin, _top, _truncate_at_eos, acceptance_probability, residual_distribution
from .sampling import SamplingConfig, sample, to_probs
from .trace import GenerationResult, RoundTrace, TreeTrace

MAX_TREE_DEPTH = 8  # deeper than this, even a chain accepted at 0.9 keeps under half of its last level
MAX_BRANCHING = 8  # children per node
MAX_TREE_NODES = 64
LEVELWISE = False
POWER = 1.0  # one verification pass over this many positions already costs several single passes


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


# --- drafting ---------------------------------------------------------------------------------------

@dataclass
class DraftTree:
    tokens: list[int] = field(default_factory=list)  # node i's token; parents come before children
    parents: list[int] = field(default_factory=list)  # node i's parent, -1 = the committed context
    depth: list[int] = field(default_factory=list)  # 1-based
    score: list[float] = field(default_factory=list)  # drafter's probability of the path down to node i
    # node (-1: the context) -> (V,) the q its children were drawn from (greedy: softmax, for ranking)
    q: dict[int, torch.Tensor] = field(default_factory=dict)
    children: dict[int, list[int]] = field(default_factory=dict)  # in the order they were drawn

    def path_tokens(self, node: int) -> list[int]:
        """Tokens from the context down to `node` (empty for -1)."""
        out = []
        while node >= 0:
            out.append(self.tokens[node])
            node = self.parents[node]
        return out[::-1]


# (tree so far, nodes) -> raw drafter logits (len(nodes), V) after the path to each node (-1: the context)
DrafterLogits = Callable[[DraftTree, list[int]], torch.Tensor]


def _q(logits: torch.Tensor, sampling: SamplingConfig) -> torch.Tensor:
    # Greedy drafting ranks children by the drafter's plain softmax; sampling draws from q itself.
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
    node = len(tree.tokens)
    tree.tokens.append(x)
    tree.parents.append(parent)
    tree.depth.append(tree.depth[parent] + 1 if parent >= 0 else 1)
    tree.score.append((tree.score[parent] if parent >= 0 else 1.0) * float(tree.q[parent][x]))
    tree.children.setdefault(parent, []).append(node)
    return node


def draft_tree(logits_at: DrafterLogits, shape: tuple[int, ...], sampling: SamplingConfig,
               generator: torch.Generator, node_budget: int | None = None,
               max_depth: int | None = None) -> DraftTree:
    """A tree of drafts at most `max_depth` (default len(shape)) deep. Static: a node at depth d gets
    shape[d] children. With `node_budget`: that many nodes, each level's share placed best-first by
    the drafter's path probability (shape then only sets the depth). `logits_at` is asked once per level."""
    depth = len(shape) if max_depth is None else min(len(shape), max_depth)
    tree, left = DraftTree(), {}
    tree.q[-1] = _q(logits_at(tree, [-1])[0], sampling)

    def look(nodes: list[int]) -> None:  # the drafter's q at new nodes, in one pass
        for node, logits in zip(nodes, logits_at(tree, nodes)):
            tree.q[node] = _q(logits, sampling)

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


# --- the rule ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TreeRule:
    """How a node's children are judged in sampling mode. `EXACT_TREE` is recursive rejection
    sampling; `specdec_core.broken` holds rules that look right and are not."""
    name: str
    accept: Callable[[torch.Tensor, torch.Tensor, int], float]  # (p, q, x) -> chance to accept child x
    after_reject: Callable[[torch.Tensor, torch.Tensor, int], tuple[torch.Tensor, torch.Tensor]]  # -> next (p, q)
    # where the token comes from once the last child x was rejected, given the (p, q) after it
    leftover: Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor] = lambda p, q, x: p


def _accept(p: torch.Tensor, q: torch.Tensor, x: int) -> float:
    return float(acceptance_probability(p[x], q[x]))


def _without(q: torch.Tensor, x: int) -> torch.Tensor:
    """q with token x removed, renormalised: the distribution the next sibling was drawn from."""
    rest = q.clone()
    rest[x] = 0.0
    total = rest.sum()
    return rest / total if total > 0 else rest


EXACT_TREE = TreeRule("exact (recursive rejection sampling)", _accept,
                      lambda p, q, x: (residual_distribution(p, q), _without(q, x)))


@dataclass
class TreeVerdict:
    path: list[int]  # accepted nodes, from the context down
    next_token: int
    next_kind: str  # "corrective" (some child was rejected) | "bonus" (a node without children)
    next_prob: float
    accept_prob: dict[int, float] = field(default_factory=dict)  # tested node -> its acceptance chance
    uniforms: dict[int, float] = field(default_factory=dict)  # tested node -> u (sampling only)


def verify_tree(tree: DraftTree, p_at: Callable[[int], torch.Tensor], sampling: SamplingConfig,
                generator: torch.Generator, rule: TreeRule = EXACT_TREE) -> TreeVerdict:
    """Walk the tree from the context down, accepting at most one child per node; `p_at(node)` is
    the target's (V,) distribution after the path to node (-1: the context), after `to_probs`."""
    verdict, node = TreeVerdict([], -1, "bonus", float("nan")), -1
    while True:
        p, kids = p_at(node), tree.children.get(node, [])
        chosen, x = None, None
        if sampling.greedy:  # p is one-hot: follow the child equal to the target's argmax, if any
            y = int(p.argmax())
            for c in kids:
                verdict.accept_prob[c] = float(tree.tokens[c] == y)
            chosen = next((c for c in kids if tree.tokens[c] == y), None)
            dist = p
        else:
            q = tree.q.get(node)  # None at a leaf: nothing to judge there
            for c in kids:
                x = tree.tokens[c]
                a, u = rule.accept(p, q, x), float(torch.rand((), generator=generator, dtype=torch.float64))
                verdict.accept_prob[c], verdict.uniforms[c] = a, u
                if u < a:
                    chosen = c
                    break
                p, q = rule.after_reject(p, q, x)
            dist = rule.leftover(p, q, x) if kids and chosen is None else p
        if chosen is None:
            token = int(dist.argmax()) if sampling.greedy else sample(dist, generator)
            verdict.next_token, verdict.next_prob = token, float(dist[token])
            verdict.next_kind = "corrective" if kids else "bonus"
            return verdict
        verdict.path.append(chosen)
        node = chosen


def node_distribution(rule: TreeRule, p: torch.Tensor, q: torch.Tensor, n_children: int) -> torch.Tensor:
    """Exact (V,) distribution of the token one node emits when n_children children are drawn from q
    without replacement and judged by `rule`; the emitted token is the accepted child or the leftover
    draw. Enumerates every draw order (about V ** n_children terms): small V only."""
    p, q = p.double(), q.double()

    def emit(p_now, q_now, left, k, last):
        if k == 0 or float(left.sum()) <= 0:
            return rule.leftover(p_now, q_now, last) if last is not None else p_now
        out, mass = torch.zeros_like(p), left.sum()
        for x in torch.nonzero(left > 0).flatten().tolist():
            w, a = float(left[x] / mass), rule.accept(p_now, q_now, x)
            out[x] += w * a
            rest = left.clone()
            rest[x] = 0.0
            out += w * (1 - a) * emit(*rule.after_reject(p_now, q_now, x), rest, k - 1, x)
        return out

    return emit(p, q, q.clone(), n_children, None)


# --- generation -------------------------------------------------------------------------------------

class _DrafterTree:
    """The model drafter's side of one round: the context pass, then tree passes over new nodes."""

    def __init__(self, session, context: list[int]):
        self.session, self.context = session, context
        self.slot: dict[int, int] = {}  # tree node -> its number in the drafter's cached tree
        self.pass_s: list[float] = []

    def __call__(self, tree: DraftTree, nodes: list[int]) -> torch.Tensor:
        lm = self.session.lm
        if nodes == [-1]:
            feed = self.session._sync(self.context)
            logits = lm.extend(feed, logits_to_keep=1)  # (1, V)
            self.session.fed += feed
        else:
            parents = [self.slot[tree.parents[n]] if tree.parents[n] >= 0 else -1 for n in nodes]
            for n in nodes:
                self.slot[n] = len(self.slot)
            logits = lm.extend_tree([tree.tokens[n] for n in nodes], parents)  # (len(nodes), V)
        self.pass_s.append(lm.last_pass_s)
        return logits

    def keep(self, tree: DraftTree, path: list[int]) -> None:
        """Keep the accepted nodes the drafter has seen (a prefix of the path) in its cache."""
        seen = [n for n in path if n in self.slot]
        if self.session.lm.tree_start is not None:
            self.session.lm.keep_path([self.slot[n] for n in seen])
        self.session.fed += [tree.tokens[n] for n in seen]


def _tree_trace(tree: DraftTree, v: TreeVerdict, p: torch.Tensor, detailed: bool) -> TreeTrace:
    rows = [n + 1 for n in tree.parents]  # row of p holding each node's parent
    t = TreeTrace(
        nodes=list(tree.tokens), parents=list(tree.parents), path=list(v.path),
        p_node=[float(p[r, x]) for r, x in zip(rows, tree.tokens)],
        q_node=[float(tree.q[par][x]) for par, x in zip(tree.parents, tree.tokens)],
        accept_prob=[v.accept_prob.get(i) for i in range(len(tree.tokens))],
        uniforms=[v.uniforms.get(i) for i in range(len(tree.tokens))])
    if detailed:
        t.p_top = _top(p)
        t.q_top = [_top(tree.q[n]) if n in tree.q else [] for n in range(-1, len(tree.tokens))]
    return t


@torch.inference_mode()
def tree_generate(target, drafter, prompt_ids, shape: tuple[int, ...] = (2, 2, 1, 1), max_new_tokens: int = 40,
                  sampling: SamplingConfig = SamplingConfig(), seed: int | None = 0,
                  node_budget: int | None = None, eos_token_id: int | None | str = "model",
                  trace: bool = True, rule: TreeRule = EXACT_TREE, max_rounds: int | None = None,
                  on_round: Callable[[RoundTrace], None] | None = None, forward: str = "core") -> GenerationResult:
    """Speculative decoding with a token tree per round: `shape` gives the branching factor per
    depth; `node_budget` grows a best-first tree of that many nodes instead (len(shape) deep at
    most). One target pass per round. Its output is distributed exactly as `autoregressive_generate`'s
    (identical tokens in greedy mode). Each round's trace holds the tree (`round.tree`); `forward` picks
    the target's forward path (lm.CachedLM)."""
    target = _as_model(target, "target")
    drafter = as_drafter(drafter)
    if not isinstance(drafter, ModelDrafter):
        raise ValueError(f"drafter must be a model drafter for token trees (it needs q at every node), "
                         f"got {drafter.name!r}")
    vocab = vocab_size(target)
    if drafter.vocab_size != vocab:
        raise ValueError(f"drafter vocabulary ({drafter.vocab_size}) differs from the target's ({vocab})")
    shape, node_budget = check_shape(shape), check_node_budget(node_budget)
    if max_rounds is not None and (isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1):
        raise ValueError(f"max_rounds must be an integer >= 1 or None, got {max_rounds!r}")
    prompt, generator, seed, eos, lm, start, prefill_s = _begin(target, prompt_ids, max_new_tokens, sampling, seed,
                                                                eos_token_id, forward, drafter.context_length)
    session = drafter.start(vocab)
    context = list(prompt)
    tokens, kinds, rounds, pass_s, stop, n_nodes = [], [], [], [], "max_new_tokens", 0
    while len(tokens) < max_new_tokens and (max_rounds is None or len(rounds) < max_rounds):
        depth = min(len(shape), max_new_tokens - len(tokens) - 1)  # a round never overshoots
        passes_before = session.passes
        drafting = _DrafterTree(session, context)
        tree = draft_tree(drafting, shape, sampling, generator, node_budget, depth) if depth > 0 else DraftTree()
        # Verify: ONE target pass over the last committed token (row 0) and every node (row i + 1).
        p = to_probs(lm.extend_tree([context[-1]] + tree.tokens, [-1] + [par + 1 for par in tree.parents]),
                     sampling)  # (1 + nodes, V)
        pass_s.append(lm.last_pass_s)
        v = verify_tree(tree, lambda node, p=p: p[node + 1], sampling, generator, rule)
        lm.keep_path([0] + [n + 1 for n in v.path])
        drafting.keep(tree, v.path)

        accepted = [tree.tokens[n] for n in v.path]
        new, hit_eos = _truncate_at_eos(accepted + [v.next_token], eos)
        tokens += new
        kinds += (["accepted"] * len(accepted) + [v.next_kind])[:len(new)]
        context += new
        n_nodes += len(tree.tokens)
        t = _tree_trace(tree, v, p, trace)
        r = RoundTrace(
            index=len(rounds), position=len(tokens) - len(new), draft_tokens=list(tree.tokens),
            n_accepted=len(accepted), next_token=v.next_token, next_kind=v.next_kind, emitted=new,
            q_draft=t.q_node, p_draft=t.p_node,
            accept_prob=[math.nan if a is None else a for a in t.accept_prob],
            uniforms=None if sampling.greedy else [math.nan if u is None else u for u in t.uniforms],
            draft_pass_s=drafting.pass_s, target_pass_s=lm.last_pass_s,
            draft_passes=session.passes - passes_before, next_prob=v.next_prob, tree=t)
        if trace:
            r.p_top = t.p_top
        rounds.append(r)
        if on_round is not None:
            on_round(r)
        if hit_eos:
            stop = "eos"
            break
    if stop != "eos" and len(tokens) < max_new_tokens:
        stop = "max_rounds"
    return GenerationResult(tokens, len(rounds), session.passes, rounds, kinds, pass_s, prefill_s,
                            time.perf_counter() - start, stop, seed, drafter=drafter.name, gamma=len(shape),
                            prompt_len=len(prompt),
                            extra={"shape": shape, "node_budget": node_budget, "nodes": n_nodes,
                                   "nodes_per_round": n_nodes / len(rounds) if rounds else 0.0})
