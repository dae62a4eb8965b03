"""Deliberately WRONG acceptance rules: the mistakes people commonly make when implementing
speculative sampling. They exist only so the exactness lab and the tests can show that a correct
statistical test catches them. Never use them to generate text.
"""
from dataclasses import replace

import torch

from .drafters import Proposal
from .policies import Policy
from .sampling_config import SamplingConfig, to_probs
from .speculative import Rows, Rule, acceptance_probability, exact_acceptance, exact_residual, residual_distribution
from .tree import TreeRule, accept_child


def _resample_from_p(rows: Rows, i: int) -> torch.Tensor:
    return rows.p[i]  # wrong: the accept branch already produced min(p, q); p double-counts it


def _accept_if_p_ge_q(rows: Rows) -> torch.Tensor:
    return (rows.p_x >= rows.q_x).float()  # wrong: a token with p < q must still be kept with probability p/q


def _q_at_other_temperature(proposal: Proposal, sampling: SamplingConfig) -> torch.Tensor:
    if proposal.logits is None:
        raise ValueError("this broken rule needs a model drafter (it recomputes q from the draft logits)")
    # wrong: the drafts were drawn at `sampling.temperature`, but the rule judges them with a q
    # computed at twice that temperature
    return to_probs(proposal.logits, replace(sampling, temperature=2 * sampling.temperature))


BROKEN_RESAMPLE_FROM_P = Rule("broken: resample from p, not the residual", exact_acceptance, _resample_from_p)
BROKEN_ACCEPT_IF_P_GE_Q = Rule("broken: accept only when p(x) >= q(x)", _accept_if_p_ge_q, exact_residual)
BROKEN_Q_OTHER_TEMPERATURE = Rule("broken: q taken at another temperature than the draft's",
                                  exact_acceptance, exact_residual, _q_at_other_temperature)

BROKEN_RULES = (BROKEN_RESAMPLE_FROM_P, BROKEN_ACCEPT_IF_P_GE_Q, BROKEN_Q_OTHER_TEMPERATURE)


# --- a deliberately WRONG draft-length policy -------------------------------------------------------

class PeekingPolicy(Policy):
    """Wrong: ends a round as soon as the verdict still to come would accept every draft so far. It
    reads that verdict ahead of time: it copies the generation's generator (the uniforms the rule is
    about to draw) and runs the target itself. A draft that would be rejected gets another chance in
    a longer round with fresh uniforms, so drafts are over-accepted. With `reroll` it also draws from
    the generator (as a randomised stop may) until the coming verdict is a clean sweep, so almost
    every draft is accepted. Any policy that looks only at the past is exact (see
    specdec_core.policies); this one shows the tests notice the difference."""

    def __init__(self, target, draft, sampling: SamplingConfig, max_gamma: int = 4, reroll: bool = True):
        self.target, self.draft, self.sampling = target, draft, sampling
        self.max_gamma, self.reroll = max_gamma, reroll
        self.name = "broken: peeks at the coming verdict" + (" and rerolls it" if reroll else "")

    def start(self) -> "_PeekingSession":
        return _PeekingSession(self)


class _PeekingSession:
    REROLLS = 50  # bounded, so a draft the target never accepts cannot stall the round

    def __init__(self, policy: PeekingPolicy):
        self.policy, self.context = policy, []

    def next_gamma(self, context: list[int]) -> int:
        self.context = list(context)
        return self.policy.max_gamma

    def _clean_sweep_ahead(self, drafts: list[int], accept: torch.Tensor, generator: torch.Generator) -> bool:
        ahead = torch.Generator().manual_seed(0)
        ahead.set_state(generator.get_state())  # the uniforms verify() will draw if the round ends here
        return bool((torch.rand(len(drafts), generator=ahead, dtype=torch.float64) < accept.double()).all())

    def keep_drafting(self, drafts: list[int], logits: torch.Tensor, generator: torch.Generator) -> bool:
        from .model import CachedLM  # both models' own passes, outside the round (the cheat)
        if self.policy.sampling.greedy:
            return True
        p, q = (to_probs(CachedLM(m).extend(self.context + drafts)[-len(drafts) - 1:-1], self.policy.sampling)
                for m in (self.policy.target, self.policy.draft))  # (n, V) each: p and q at each draft
        x, rows = torch.tensor(drafts), torch.arange(len(drafts))
        accept = acceptance_probability(p[rows, x], q[rows, x])
        for _ in range(self.REROLLS if self.policy.reroll else 0):
            if self._clean_sweep_ahead(drafts, accept, generator):
                break
            torch.rand(1, generator=generator)  # burn a draw: the coming uniforms shift
        return not self._clean_sweep_ahead(drafts, accept, generator)  # stop on a clean sweep

    def observe(self, n_drafted: int, n_accepted: int) -> None:
        pass


# --- token trees (see specdec_core.tree) -------------------------------------------------------------

def _same_p(p: torch.Tensor, q: torch.Tensor, x: int) -> tuple[torch.Tensor, torch.Tensor]:
    return p, q  # wrong: after a rejection the next sibling must face norm(max(0, p - q)), not p again


def _fresh_target_draw(p: torch.Tensor, q: torch.Tensor, x: int) -> float:
    return float(p[x])  # a fresh y ~ p for this branch, the child kept when y == x


def _last_fresh_draw(p: torch.Tensor, q: torch.Tensor, x: int) -> torch.Tensor:
    rest = p.clone()  # the last branch's y, known to differ from its child x
    rest[x] = 0.0
    return rest / rest.sum() if rest.sum() > 0 else p


BROKEN_TREE_SAME_P = TreeRule("broken: every child judged against the same p", accept_child, _same_p,
                              lambda p, q, x: residual_distribution(p, q))
# wrong: each branch gets its own chance of matching the target, so drafted tokens win too often
BROKEN_TREE_FRESH_DRAW = TreeRule("broken: a fresh target draw per branch", _fresh_target_draw, _same_p,
                                  _last_fresh_draw)
BROKEN_TREE_RULES = (BROKEN_TREE_SAME_P, BROKEN_TREE_FRESH_DRAW)
