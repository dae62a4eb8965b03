"""What happened in a generation: one `RoundTrace` per speculative round, and the overall result.

A trace is rich enough to animate a round (drafts with q(x) and p(x), acceptance probabilities and
uniform draws, the residual's top entries, the corrective or bonus token, pass timings). The heavy
parts (top-k lists) are filled only when the caller asks for `trace=True`.
"""
from dataclasses import dataclass

import pandas as pd
import torch

TopK = list[tuple[int, float]]  # (token id, probability), most likely first
TRACE_TOP = 8  # how many entries of p, q and the residual a trace keeps per position


def top_entries(dist: torch.Tensor, k: int = TRACE_TOP):
    """The k most likely entries of a distribution (V,) as TopK, or of each row of (n, V) as a list."""
    values, ids = torch.topk(dist, min(k, dist.shape[-1]), dim=-1)
    if dist.dim() == 1:
        return [(int(i), float(v)) for i, v in zip(ids.tolist(), values.tolist()) if v > 0]
    return [[(int(i), float(v)) for i, v in zip(r_ids, r_vals) if v > 0]
            for r_ids, r_vals in zip(ids.tolist(), values.tolist())]


@dataclass
class TreeTrace:
    """A token-tree round: the drafted nodes, how they hang together, and how each was judged."""
    nodes: list[int]  # node i's token; nodes come after their parents
    parents: list[int]  # node i's parent node, -1 for the children of the committed context
    path: list[int]  # the accepted nodes, from the context down
    p_node: list[float]  # p(x) of node i's token under the target at its parent
    q_node: list[float]  # q(x) under the drafter at its parent (the distribution its siblings were drawn from)
    accept_prob: list[float | None]  # the chance node i was accepted with, None when it was never tested
    uniforms: list[float | None]  # the u drawn for node i (None: not tested, or greedy)
    p_top: list[TopK] | None = None  # top entries of p at the context (index 0) and at node i (index i + 1)
    q_top: list[TopK] | None = None  # the same for q (empty where the drafter did not look)

    @property
    def depth(self) -> list[int]:
        """1-based depth of every node."""
        out: list[int] = []
        for parent in self.parents:
            out.append(out[parent] + 1 if parent >= 0 else 1)
        return out

    def verdict(self, i: int) -> str:
        """"accepted", "rejected" (tested and turned down) or "not checked"."""
        if i in self.path:
            return "accepted"
        return "rejected" if self.accept_prob[i] is not None else "not checked"


@dataclass
class RoundTrace:
    index: int  # 0-based round number
    position: int  # tokens generated before this round
    draft_tokens: list[int]  # x_1..x_n proposed by the drafter
    n_accepted: int  # length of the accepted prefix of the drafts
    next_token: int  # the corrective token (after a rejection) or the bonus token (all accepted)
    next_kind: str  # "corrective" | "bonus"
    emitted: list[int]  # tokens this round added to the output (after EOS / length truncation)
    q_draft: list[float]  # q_i(x_i)
    p_draft: list[float]  # p_i(x_i)
    accept_prob: list[float]  # min(1, p_i(x_i) / q_i(x_i)) (greedy: 1 if x_i is the target argmax)
    uniforms: list[float] | None  # the u_i drawn (None in greedy mode)
    draft_pass_s: list[float]  # wall time of each draft forward pass
    target_pass_s: float  # wall time of the ONE target pass over n + 1 positions
    draft_passes: int
    next_prob: float = float("nan")  # probability of next_token under the distribution it came from
    p_top: list[TopK] | None = None  # top entries of p at each of the n + 1 positions
    q_top: list[TopK] | None = None  # top entries of q at each draft position
    residual_top: TopK | None = None  # top entries of norm(max(0, p - q)) at the rejected position
    target_passes: int = 1
    gamma: int | None = None  # the most drafts the draft-length policy allowed this round
    draft_stop: str | None = None  # why drafting stopped: policies.STOP_REASONS
    draft_top: list[float] | None = None  # the drafter's raw top probability at each draft (model drafters)
    draft_margin: list[float] | None = None  # ... and its top-1 minus top-2 probability
    tree: TreeTrace | None = None  # token-tree rounds only (draft_tokens then lists every node)
    # Tokens in the target's KV cache: before the verify pass, after it (+ last token + drafts), after the
    # rollback that forgets the rejected drafts. Tokens in the drafter's KV cache: at the round's start,
    # after it dropped what the committed text no longer shares (the previous round's rejected drafts),
    # and after drafting. None: not recorded (tree rounds; a drafter with no cache).
    # sum_x min(p_i, q_i) = 1 - TV(p_i, q_i): beta at each draft position (alpha is its expectation)
    overlap: list[float] | None = None
    target_cache: tuple[int, int, int] | None = None
    draft_cache: tuple[int, int, int] | None = None

    @property
    def nodes(self) -> list[int] | None:
        """A tree round's drafted tokens, one per node (None for a linear round)."""
        return self.tree.nodes if self.tree is not None else None

    @property
    def parents(self) -> list[int] | None:
        """A tree round's parent of each node, -1 = the committed context (None for a linear round)."""
        return self.tree.parents if self.tree is not None else None

    @property
    def rejected_at(self) -> int | None:
        """0-based index of the first rejected draft, or None when all were accepted."""
        return self.n_accepted if self.next_kind == "corrective" else None


@dataclass(frozen=True)
class TreeSettings:
    """How a token-tree generation drafted (GenerationResult.tree; None for chains and plain decoding)."""
    shape: tuple[int, ...]  # branching factor per depth
    node_budget: int | None  # None: the static shape; else a best-first tree of this many nodes


@dataclass
class GenerationResult:
    tokens: list[int]  # the new tokens only
    target_passes: int  # target forward passes while decoding (the prompt's prefill not counted)
    draft_passes: int
    rounds: list[RoundTrace]  # empty for autoregressive decoding
    token_kinds: list[str]  # per new token: "target" (plain decoding), "accepted", "corrective", "bonus"
    target_pass_s: list[float]  # wall time of every decoding target pass
    prefill_s: float
    total_s: float
    stop_reason: str  # "max_new_tokens" | "eos" | "max_rounds"
    seed: int | None
    drafter: str | None = None
    gamma: int | None = None  # the constant gamma; None when a policy chose it round by round
    prompt_len: int = 0
    policy: str | None = None  # the draft-length policy's name
    tree: TreeSettings | None = None  # token-tree runs only

    @property
    def drafted(self) -> int:
        return sum(len(r.draft_tokens) for r in self.rounds)

    @property
    def accepted(self) -> int:
        return sum(r.n_accepted for r in self.rounds)

    @property
    def drafts_per_round(self) -> float:
        """Drafted tokens per round (a tree's nodes per round); 0 without rounds."""
        return self.drafted / len(self.rounds) if self.rounds else 0.0

    @property
    def acceptance_rate(self) -> float:
        """Accepted drafts / proposed drafts (NaN when nothing was drafted)."""
        return self.accepted / self.drafted if self.drafted else float("nan")

    @property
    def tokens_per_pass(self) -> float:
        return len(self.tokens) / self.target_passes if self.target_passes else float("nan")

    @property
    def tokens_per_s(self) -> float:
        return len(self.tokens) / self.total_s if self.total_s > 0 else float("nan")


def rounds_frame(rounds: list[RoundTrace]) -> pd.DataFrame:
    """One row per round: drafts, accepted count, the next token and its kind, timings."""
    return pd.DataFrame([{
        "round": r.index + 1,
        "position": r.position,
        "gamma": r.gamma,
        "drafted": len(r.draft_tokens),
        "draft_stop": r.draft_stop,
        "accepted": r.n_accepted,
        "rejected_at": r.rejected_at + 1 if r.rejected_at is not None else None,
        "next_token": r.next_token,
        "next_kind": r.next_kind,
        "emitted": len(r.emitted),
        "draft_ms": 1e3 * sum(r.draft_pass_s),
        "target_ms": 1e3 * r.target_pass_s,
    } for r in rounds])


def drafts_frame(rounds: list[RoundTrace]) -> pd.DataFrame:
    """One row per drafted token: q(x), p(x), min(1, p/q), the uniform draw and the verdict."""
    rows = []
    for r in rounds:
        for i, x in enumerate(r.draft_tokens):
            verdict = "accepted" if i < r.n_accepted else ("rejected" if i == r.n_accepted else "not checked")
            rows.append({
                "round": r.index + 1, "draft_pos": i + 1, "token": x,
                "q(x)": r.q_draft[i], "p(x)": r.p_draft[i], "accept_prob": r.accept_prob[i],
                "u": r.uniforms[i] if r.uniforms is not None else None, "verdict": verdict,
            })
    return pd.DataFrame(rows, columns=["round", "draft_pos", "token", "q(x)", "p(x)", "accept_prob", "u", "verdict"])
