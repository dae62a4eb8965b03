"""The decoding loops: speculative decoding's exact sampler, and plain autoregressive decoding as its
baseline (the logits -> distribution transform is sampling_config.py; the bookkeeping every loop shares,
bookkeeping.py).

Leviathan, Kalman & Matias, "Fast Inference from Transformers via Speculative Decoding" (2022),
Algorithm 1; Chen et al., "Accelerating Large Language Model Decoding with Speculative Sampling"
(2023). Names follow the paper: the target's distribution is p, the drafter's is q, the draft
length is gamma.

One round:
  1. The drafter proposes x_1..x_gamma, each drawn from its q_i (gamma cheap passes). The paper fixes
     gamma; here a draft-length policy (specdec_core.policies) may choose it round by round, and may
     end a round early from the drafter's own confidence, never from the verdict still to come.
  2. The target scores the last committed token and all drafts in ONE forward pass, giving
     p_1..p_{gamma+1}: p_i is the target's distribution for the position of x_i.
  3. Drafts are accepted left to right while u_i < p_i(x_i) / q_i(x_i), u_i ~ Uniform(0, 1).
  4. At the first rejection, a corrective token is drawn from norm(max(0, p_i - q_i)); if all gamma
     drafts pass, a bonus token is drawn from p_{gamma+1}.
Steps 3 and 4 together draw each token from exactly p (see `acceptance_probability`). In greedy
mode (temperature 0) p and q are one-hot, so the rule becomes: accept while the draft is the
target's argmax, then emit the target's argmax. The output is then token-for-token greedy decoding.
Steps 3 and 4 are a `Rule` (`EXACT` here); a rule sees whole rows of p and q (`Rows`), so that the
deliberately wrong rules of `broken` and the lossy-on-purpose ones of `lossy` use the same `verify`.

Every distribution here is after the sampling transform (temperature, top-k, top-p) of
`sampling.to_probs`, applied identically to p and q: the transformed p IS the target distribution.

What is not the paper's two steps (input checks, the prompt's prefill, the round record, eos and
max_new_tokens, the result) is the generation skeleton of `specdec_core.bookkeeping`, shared with
token trees (`specdec_core.tree`), the exactness lab and batched decoding.
"""
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

from .bookkeeping import Generation, begin, score_together
from .checks import MAX_GAMMA
from .drafters import Proposal
from .policies import (
    STOP_CONFIDENCE,
    STOP_DRAFTER,
    STOP_GAMMA,
    STOP_TOKENS_LEFT,
    Constant,
    Policy,
    as_policy,
    confidence,
)
from .request import as_request
from .sampling_config import SamplingConfig, sample, to_probs
from .trace import GenerationResult, RoundTrace, top_entries

# --- the rule ---------------------------------------------------------------------------------------

def acceptance_probability(p_x: torch.Tensor, q_x: torch.Tensor) -> torch.Tensor:
    """min(1, p(x) / q(x)), elementwise. Where q(x) = 0 (never drafted) it is 1."""
    safe_q = torch.where(q_x > 0, q_x, torch.ones_like(q_x))
    return torch.where(q_x > 0, torch.clamp(p_x / safe_q, max=1.0), torch.ones_like(p_x))


def residual_distribution(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """norm(max(0, p - q)) over the last dimension: where to resample after a rejection.

    Why this is exact: x is drafted from q and kept with probability min(1, p/q), so a token y
    comes out of the accept branch with probability min(q(y), p(y)). A rejection happens with
    probability 1 - sum(min(p, q)) = sum(max(0, p - q)), and then y is drawn with probability
    max(0, p(y) - q(y)) / sum(max(0, p - q)). Adding both: min(p, q) + max(0, p - q) = p(y).
    """
    r = torch.clamp(p - q, min=0.0)
    total = r.sum(-1, keepdim=True)
    # Only reachable by rounding (a rejection implies p(x) < q(x), hence sum(max(0, p - q)) > 0).
    return torch.where(total > 0, r / torch.where(total > 0, total, torch.ones_like(total)), p)


@dataclass(frozen=True)
class Rows:
    """What a rule sees when it judges n drafts: whole rows, not only the drafted entries, so that a
    rule may look at a row's entropy or ranking (the lossy rules of `specdec_core.lossy` do)."""
    p: torch.Tensor  # (n, V) target probs after the sampling transform (one-hot rows when greedy)
    q: torch.Tensor  # (n, V) the q the drafts are judged with, same transform
    x: torch.Tensor  # (n,) the drafted tokens x_1..x_n
    sampling: SamplingConfig
    target_logits: torch.Tensor | None = None  # (n, V) before the transform; None when the caller has none

    @property
    def p_x(self) -> torch.Tensor:
        """(n,) p_i(x_i)."""
        return self.p[torch.arange(len(self.x)), self.x]

    @property
    def q_x(self) -> torch.Tensor:
        """(n,) q_i(x_i)."""
        return self.q[torch.arange(len(self.x)), self.x]


def exact_acceptance(rows: Rows) -> torch.Tensor:
    """Algorithm 1: keep draft x_i with probability min(1, p_i(x_i) / q_i(x_i))."""
    return acceptance_probability(rows.p_x, rows.q_x)


def exact_residual(rows: Rows, i: int) -> torch.Tensor:
    """Algorithm 1: after rejecting x_i, draw from norm(max(0, p_i - q_i))."""
    return residual_distribution(rows.p[i], rows.q[i])


@dataclass(frozen=True)
class Rule:
    """How drafts are judged. `EXACT` is the paper's rule; `specdec_core.broken` holds deliberately
    wrong variants, `specdec_core.lossy` the rules serving stacks ship lossy on purpose."""
    name: str
    acceptance_probability: Callable[[Rows], torch.Tensor]  # (n,) chance to keep each draft
    residual: Callable[[Rows, int], torch.Tensor]  # (V,) where to draw after rejecting draft i
    # The q the rule judges with; exact: the very q the drafts were drawn from.
    verification_q: Callable[[Proposal, SamplingConfig], torch.Tensor] = lambda proposal, sampling: proposal.q


EXACT = Rule("exact", exact_acceptance, exact_residual)


@dataclass
class Verdict:
    n_accepted: int
    next_token: int
    next_kind: str  # "corrective" | "bonus"
    next_prob: float
    p_x: torch.Tensor  # (n,) p_i(x_i)
    q_x: torch.Tensor  # (n,) q_i(x_i)
    accept_prob: torch.Tensor  # (n,)
    uniforms: torch.Tensor | None  # (n,), None in greedy mode
    residual: torch.Tensor | None  # (V,) at the rejected position


def verify(p: torch.Tensor, q: torch.Tensor, drafts: list[int], sampling: SamplingConfig,
           generator: torch.Generator, rule: Rule = EXACT, target_logits: torch.Tensor | None = None) -> Verdict:
    """Judge drafts x_1..x_n against the target: p is (n + 1, V), q is (n, V), both after
    `to_probs` (one-hot rows in greedy mode); `target_logits` (n, V or more rows) are the target's
    raw logits, for rules that rank them. Returns how many drafts are accepted and the corrective
    or bonus token that follows them. Greedy mode has no coin: a draft is kept when the rule gives
    it a chance above 0 (with one-hot rows the exact rule's chance is 0 or 1)."""
    n = len(drafts)
    x = torch.tensor(drafts, dtype=torch.long)
    rows = Rows(p[:n], q[:n], x, sampling, None if target_logits is None else target_logits[:n])
    accept_prob = rule.acceptance_probability(rows)  # (n,)
    if sampling.greedy:
        uniforms, accepted = None, accept_prob > 0
    else:
        uniforms = torch.rand(n, generator=generator, dtype=torch.float64)
        accepted = uniforms < accept_prob.double()
    verdicts = accepted.tolist()  # one transfer, then plain Python
    n_accepted = verdicts.index(False) if False in verdicts else n

    if n_accepted < n:  # corrective token from the residual at the first rejected position
        residual = rule.residual(rows, n_accepted)
        kind, dist = "corrective", residual
    else:  # every draft passed: a bonus token from the target's own next distribution
        residual = None
        kind, dist = "bonus", p[n]
    token = int(dist.argmax()) if sampling.greedy else sample(dist, generator)
    return Verdict(n_accepted, token, kind, float(dist[token]), rows.p_x, rows.q_x, accept_prob, uniforms, residual)


def judge(g: Generation, drafts: list[int], proposal: Proposal, logits: torch.Tensor, sampling: SamplingConfig,
          rule: Rule = EXACT) -> tuple[torch.Tensor, torch.Tensor, Verdict, list[int], bool]:
    """Steps 3 and 4 of a round for one generation (a chain's, or one row of a batch's), after its scored
    pass gave `logits` (n + 1, V): p and q after the sampling transform, the verdict, the target's
    cache keeping the last committed token and the accepted drafts, and the round's tokens committed.
    Returns (p, q, verdict, the tokens added, whether eos came)."""
    p = to_probs(logits, sampling)
    own_q = sampling.greedy or not drafts  # greedy, or no drafts to judge: the proposal's own q
    q = (proposal.q if own_q else rule.verification_q(proposal, sampling))[:len(drafts)]
    v = verify(p, q, drafts, sampling, g.generator, rule, logits)
    g.keep(list(range(v.n_accepted + 1)))  # the cache forgets the rejected drafts
    new, hit_eos = g.commit(drafts[:v.n_accepted], v.next_token, v.next_kind)
    return p, q, v, new, hit_eos


# --- plain decoding ---------------------------------------------------------------------------------

def plain_token(logits: torch.Tensor, sampling: SamplingConfig, generator: torch.Generator) -> int:
    """One token of plain decoding from the target's logits (V,): drawn from p, its argmax when greedy."""
    # greedy: the argmax itself (p would be one-hot on it; building p costs a draft step's tenth)
    return int(logits.argmax()) if sampling.greedy else sample(to_probs(logits, sampling), generator)


@torch.inference_mode()
def autoregressive_generate(target, prompt_ids, max_new_tokens: int = 40,
                            sampling: SamplingConfig = SamplingConfig(), seed: int | None = None,
                            eos_token_id: int | None | str = "model",
                            on_token: Callable[[int, float], None] | None = None) -> GenerationResult:
    """The baseline: one target pass per new token, each drawn from p (argmax when greedy).
    `prompt_ids` may be a GenerationRequest carrying the prompt, max_new_tokens, sampling, seed and
    eos_token_id. `on_token(token, pass_seconds)` is called as each token appears."""
    request = as_request(prompt_ids, max_new_tokens, sampling, seed, eos_token_id)
    g = begin(target, request)
    while g.running:
        token = plain_token(g.score([g.context[-1]])[0], request.sampling, g.generator)
        _, hit_eos = g.commit([], token, "target")
        if on_token is not None:
            on_token(token, g.lm.last_pass_s)
        g.end_round(None, hit_eos)
    return g.result()


# --- speculative decoding ---------------------------------------------------------------------------

@torch.inference_mode()
def speculative_generate(target, drafter, prompt_ids, gamma: int | Policy = 4, max_new_tokens: int = 40,
                         sampling: SamplingConfig = SamplingConfig(), seed: int | None = None,
                         eos_token_id: int | None | str = "model", trace: bool = True,
                         rule: Rule = EXACT, max_rounds: int | None = None,
                         on_round: Callable[[RoundTrace], None] | None = None) -> GenerationResult:
    """Speculative decoding of `target` with `drafter` (a causal LM sharing the target's vocabulary,
    or any Drafter). `gamma` is the draft length: an int, or a policy from `specdec_core.policies`
    that chooses it round by round. Its output is distributed exactly as `autoregressive_generate`'s
    (identical tokens in greedy mode), whatever the policy. `trace=False` keeps only the cheap
    per-round fields. `on_round(round_trace)` is called after each round. `prompt_ids` may be a
    GenerationRequest carrying the prompt, max_new_tokens, sampling, seed and eos_token_id."""
    policy = as_policy(gamma)
    request = as_request(prompt_ids, max_new_tokens, sampling, seed, eos_token_id)
    g = begin(target, request, drafter=drafter, max_rounds=max_rounds)
    for _ in rounds([g], g.session, policy, request.sampling, rule, trace, on_round):
        pass  # a batch of one: its rounds are recorded in g
    return g.result(gamma=policy.gamma if isinstance(policy, Constant) else None, policy=policy.name)


# --- the rounds: one loop for one row (a chain) or many (a batch) ------------------------------------

def rounds(gens: list[Generation], session, policy: Policy | None, sampling: SamplingConfig, rule: Rule = EXACT,
           trace: bool = False, on_round: Callable[[RoundTrace], None] | None = None) -> Iterator[list[Generation]]:
    """Run rounds over generations that share one target cache, a row each, until every one stops; after
    each round, yield the generations that stopped in it. A round: every running row drafts (`draft_rows`:
    `session.propose` for one row, `session.propose_rows` for many), ONE target pass scores them all, each
    row is judged with its own generator and recorded (the full trace when `trace`), and the rows that
    stopped leave the cache. `session=None` is plain decoding: one token per row per pass, no rounds kept.
    Each row keeps its own state of `policy` (many rows: a policy without a stop test)."""
    lm, one_row = gens[0].lm, len(gens) == 1
    states = {g.row: policy.start() for g in gens} if session is not None else {}
    while running := [g for g in gens if g.running]:
        # 1. Draft: as many as each row's policy asks, never more than its tokens still wanted.
        drafts = draft_rows(session, running, states, policy, sampling, one_row) if session is not None else {}
        # 2. Verify: ONE target pass over every row's last committed token and its drafts.
        cache_before = [lm.lengths[g.row] for g in running]
        logits = score_together(running, [[g.context[-1]] + (drafts[g.row].tokens if drafts else []) for g in running])
        # 3-4. Judge each row: accepted drafts, then a corrective or bonus token; its cache keeps what was accepted.
        for g, row_logits, before in zip(running, logits, cache_before):
            if session is None:
                g.end_round(None, g.commit([], plain_token(row_logits[0], sampling, g.generator), "target")[1])
            else:
                judge_row(g, drafts[g.row], row_logits, states[g.row], sampling, rule, trace, before, on_round)
        stopped = [g for g in running if not g.running]
        if stopped and len(stopped) < len(running):  # the others go on: the next passes skip these rows
            lm.retire([g.row for g in stopped])
            if session is not None:
                session.retire([g.row for g in stopped])
        yield stopped


@dataclass
class Draft:
    """One row's drafting in a round."""
    planned: int  # the gamma its policy asked for
    proposal: Proposal
    tokens: list[int]  # the drafts judged: the proposal's, at most the row's room
    stop: str  # why drafting stopped (policies.STOP_REASONS)
    passes: int  # drafter passes made for this row
    cache: tuple[int, int, int] | None  # the drafter's cache lengths (one row with a cached drafter), for the trace


def draft_rows(session, running: list[Generation], states: dict, policy: Policy, sampling: SamplingConfig,
               one_row: bool) -> dict[int, Draft]:
    """Every running row's drafts, by row. One row drafts through `session.propose`, with its policy's stop
    test (a drafter that reads the target has seen its features); many rows through `session.propose_rows`,
    one drafter pass per draft position for all of them, each row with its own generator."""
    planned = {g.row: _checked_gamma(states[g.row].next_gamma(g.context), policy) for g in running}
    room = {g.row: g.room(planned[g.row]) for g in running}  # a round must not overshoot max_new_tokens
    wants = {g.row: (g.context, room[g.row]) for g in running if room[g.row] > 0}
    stop_test, passes_before = None, session.passes
    if not wants:
        proposals = {}
    elif one_row:
        g, keep_drafting = running[0], states[running[0].row].keep_drafting
        stop_test = _StopTest(keep_drafting) if keep_drafting is not None and room[g.row] > 1 else None
        early = {"keep_drafting": stop_test} if stop_test is not None else {}  # only asked of drafters that must stop
        proposals = {g.row: session.propose(g.context, room[g.row], sampling, g.generator, **early)}
    else:
        proposals = session.propose_rows(wants, sampling, {g.row: g.generator for g in running if g.row in wants})
    out = {}
    for g in running:
        n, proposal = room[g.row], proposals.get(g.row, Proposal([], torch.zeros(0, 0)))
        tokens = proposal.tokens[:n]
        stop = (STOP_CONFIDENCE if stop_test is not None and stop_test.stopped else
                STOP_DRAFTER if len(tokens) < n else
                STOP_TOKENS_LEFT if n < planned[g.row] else STOP_GAMMA)
        passes = session.passes - passes_before if one_row else len(proposal.pass_s)
        out[g.row] = Draft(planned[g.row], proposal, tokens, stop, passes,
                           session.cache_log if one_row and tokens else None)
    return out


def judge_row(g: Generation, d: Draft, logits: torch.Tensor, length, sampling: SamplingConfig, rule: Rule,
              trace: bool, cache_before: int, on_round: Callable[[RoundTrace], None] | None) -> None:
    """Steps 3 and 4 for one row after the round's pass gave its `logits` (n + 1, V), its policy state
    `length` told the verdict, and the round recorded (with the top entries of p, q and the residual when
    `trace`)."""
    cache_pass = g.lm.lengths[g.row]
    p, q, v, new, hit_eos = judge(g, d.tokens, d.proposal, logits, sampling, rule)
    length.observe(len(d.tokens), v.n_accepted)
    g.draft_passes += d.passes
    r = g.round_record(
        new, d.tokens, v.n_accepted, v, v.q_x, v.p_x, v.accept_prob, v.uniforms, d.proposal.pass_s, d.passes,
        g.lm.last_pass_s, gamma=d.planned, draft_stop=d.stop,
        target_cache=(cache_before, cache_pass, g.lm.lengths[g.row]), draft_cache=d.cache)
    if trace:
        n = len(d.tokens)
        if d.proposal.logits is not None and n:  # the drafter's raw confidence per draft
            raw = d.proposal.logits[:n]
            r.draft_top, r.draft_margin = confidence(raw, "top").tolist(), confidence(raw, "margin").tolist()
        r.p_top, r.q_top = top_entries(p), top_entries(q) if n else []
        # (n,) alpha at each draft position = sum min(p, q) = 1 - TV(p, q)
        r.overlap = torch.minimum(p[:n], q).sum(-1).tolist() if n else []
        r.residual_top = top_entries(v.residual) if v.residual is not None else None
    g.end_round(r, hit_eos, on_round)


def _checked_gamma(planned, policy: Policy) -> int:
    if isinstance(planned, bool) or not isinstance(planned, int) or not 1 <= planned <= MAX_GAMMA:
        raise ValueError(f"policy {policy.name!r} asked for gamma = {planned!r}, outside [1, {MAX_GAMMA}]")
    return planned


class _StopTest:
    """Wraps a policy's per-draft stop test and remembers whether it ended the round."""

    def __init__(self, keep_drafting):
        self.keep_drafting, self.stopped = keep_drafting, False

    def __call__(self, drafts, logits, generator) -> bool:
        go_on = self.keep_drafting(drafts, logits, generator)
        self.stopped = not go_on
        return go_on
