"""Token trees: draft several continuations at once, verify every branch in ONE target pass, exactly.

SpecInfer (Miao et al., 2024) drafts a tree instead of a chain and scores all its nodes in one target
pass with a tree attention mask (`CachedLM.extend_tree`); EAGLE-2 (Li et al., 2024) grows the tree
where the drafter is most confident. The chain of `speculative.py` is the tree whose shape is (1,) * gamma.

One round (the rest, checks, prefill, eos and the result, is the skeleton of `generation`):
  1. The drafter grows a tree below the last committed token (`DraftSession.propose_tree`; for a
     model, `tree_draft.draft_tree`). A node's children are drawn from the drafter's q at that node
     WITHOUT replacement (greedy mode: its most likely tokens). Either a static `shape` (branching
     factor per depth) or, with a `node_budget`, best-first: each depth's share of the budget goes
     where the drafter's path probability promises the most (EAGLE-2's idea).
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
drawn from q_i. With one child left (or none) this is the linear rule of `speculative.residual_distribution`:
the accept branch gives min(p_i, q_i), a rejection (chance sum(max(0, p_i - q_i))) hands over to
p_{i+1}, and min(p_i, q_i) + max(0, p_i - q_i) = p_i. With more children the hand-over is to child
i + 1, which is drawn without replacement, i.e. exactly from q_{i+1} given x_i, so by induction it also
yields p_{i+1}, and the same sum gives p_i. Whether a next child exists may depend on the drafts
already made (budget, q) but never on the target or on the u's, so the argument holds for the
best-first tree too. Two rules that look right and are not live in `specdec_core.broken`.
"""
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from .bookkeeping import begin
from .drafters import as_drafter
from .request import as_request
from .sampling_config import SamplingConfig, sample, to_probs
from .speculative import acceptance_probability, residual_distribution
from .trace import GenerationResult, RoundTrace, TreeSettings, TreeTrace, top_entries
from .tree_draft import (
    DraftTree,
    check_node_budget,
    check_shape,
)

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


def accept_child(p: torch.Tensor, q: torch.Tensor, x: int) -> float:
    """min(1, p(x) / q(x)) for one child x: the exact rule's chance to accept it."""
    return float(acceptance_probability(p[x], q[x]))


def _without(q: torch.Tensor, x: int) -> torch.Tensor:
    """q with token x removed, renormalised: the distribution the next sibling was drawn from."""
    rest = q.clone()
    rest[x] = 0.0
    total = rest.sum()
    return rest / total if total > 0 else rest


EXACT_TREE = TreeRule("exact (recursive rejection sampling)", accept_child,
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


# --- generation -------------------------------------------------------------------------------------

def _tree_trace(tree: DraftTree, v: TreeVerdict, p: torch.Tensor, detailed: bool) -> TreeTrace:
    rows = [n + 1 for n in tree.parents]  # row of p holding each node's parent
    t = TreeTrace(
        nodes=list(tree.tokens), parents=list(tree.parents), path=list(v.path),
        p_node=[float(p[r, x]) for r, x in zip(rows, tree.tokens)],
        q_node=[float(tree.q[par][x]) for par, x in zip(tree.parents, tree.tokens)],
        accept_prob=[v.accept_prob.get(i) for i in range(len(tree.tokens))],
        uniforms=[v.uniforms.get(i) for i in range(len(tree.tokens))])
    if detailed:
        t.p_top = top_entries(p)
        t.q_top = [top_entries(tree.q[n]) if n in tree.q else [] for n in range(-1, len(tree.tokens))]
    return t


@torch.inference_mode()
def tree_generate(target, drafter, prompt_ids, shape: tuple[int, ...] = (2, 2, 1, 1), max_new_tokens: int = 40,
                  sampling: SamplingConfig = SamplingConfig(), seed: int | None = 0,
                  node_budget: int | None = None, eos_token_id: int | None | str = "model",
                  trace: bool = True, rule: TreeRule = EXACT_TREE, max_rounds: int | None = None,
                  on_round: Callable[[RoundTrace], None] | None = None) -> GenerationResult:
    """Speculative decoding with a token tree per round: `shape` gives the branching factor per
    depth; `node_budget` grows a best-first tree of that many nodes instead (len(shape) deep at
    most). One target pass per round. Its output is distributed exactly as `autoregressive_generate`'s
    (identical tokens in greedy mode). Each round's trace holds the tree (`round.tree`). `prompt_ids`
    may be a GenerationRequest carrying the prompt, max_new_tokens, sampling, seed and eos_token_id."""
    shape, node_budget = check_shape(shape), check_node_budget(node_budget)
    request = as_request(prompt_ids, max_new_tokens, sampling, seed, eos_token_id, seed_default=0)
    sampling = request.sampling
    drafter = as_drafter(drafter)
    if not drafter.drafts_trees:
        raise ValueError(f"drafter {drafter.name!r} cannot draft token trees (it does not declare drafts_trees)")
    g = begin(target, request, drafter=drafter, max_rounds=max_rounds)
    while g.running:
        # 1. Draft a tree below the last committed token, never deeper than the tokens still wanted.
        depth = g.room(len(shape))
        passes_before = g.session.passes
        tree = (g.session.propose_tree(g.context, shape, sampling, g.generator, node_budget, depth) if depth > 0
                else DraftTree())
        # 2. Verify: ONE target pass over the last committed token (row 0) and every node (row i + 1).
        p = to_probs(g.score([g.context[-1]] + tree.tokens, [-1] + [par + 1 for par in tree.parents]),
                     sampling)  # (1 + nodes, V)
        v = verify_tree(tree, lambda node, p=p: p[node + 1], sampling, g.generator, rule)
        g.keep([0] + [n + 1 for n in v.path])  # both caches keep only the accepted path
        g.session.keep_tree_path(tree, v.path)

        accepted = [tree.tokens[n] for n in v.path]
        new, hit_eos = g.commit(accepted, v.next_token, v.next_kind)
        t = _tree_trace(tree, v, p, trace)
        r = g.round_record(
            new, tree.tokens, len(accepted), v, t.q_node, t.p_node,
            [math.nan if a is None else a for a in t.accept_prob],
            None if sampling.greedy else [math.nan if u is None else u for u in t.uniforms],
            tree.pass_s, g.session.passes - passes_before, g.lm.last_pass_s, tree=t)
        if trace:
            r.p_top = t.p_top
        g.end_round(r, hit_eos, on_round)
    return g.result(gamma=len(shape), tree=TreeSettings(shape, node_budget))
