"""Deliberately WRONG acceptance rules: the mistakes people commonly make when implementing
speculative sampling. They exist only so the exactness lab and the tests can show that a correct
statistical test catches them. Never use them to generate text.
"""
import torch

from .drafters import Proposal
from .sampler import Rule, acceptance_probability, residual_distribution
from .sampling import SamplingConfig, to_probs
from .tree import TreeRule, _accept
from dataclasses import replace


def _resample_from_p(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    return p  # wrong: the accept branch already produced min(p, q); p double-counts it


def _accept_if_p_ge_q(p_x: torch.Tensor, q_x: torch.Tensor) -> torch.Tensor:
    return (p_x >= q_x).float()  # wrong: a token with p < q must still be kept with probability p/q


def _q_at_other_temperature(proposal: Proposal, sampling: SamplingConfig) -> torch.Tensor:
    if proposal.logits is None:
        raise ValueError("this broken rule needs a model drafter (it recomputes q from the draft logits)")
    # wrong: the drafts were drawn at `sampling.temperature`, but the rule judges them with a q
    # computed at twice that temperature
    return to_probs(proposal.logits, replace(sampling, temperature=2 * sampling.temperature))


BROKEN_RESAMPLE_FROM_P = Rule("broken: resample from p, not the residual", acceptance_probability, _resample_from_p)
BROKEN_ACCEPT_IF_P_GE_Q = Rule("broken: accept only when p(x) >= q(x)", _accept_if_p_ge_q, residual_distribution)
BROKEN_Q_OTHER_TEMPERATURE = Rule("broken: q taken at another temperature than the draft's",
                                  acceptance_probability, residual_distribution, _q_at_other_temperature)

BROKEN_RULES = (BROKEN_RESAMPLE_FROM_P, BROKEN_ACCEPT_IF_P_GE_Q, BROKEN_Q_OTHER_TEMPERATURE)


# --- token trees (see specdec_core.tree) -------------------------------------------------------------

def _same_p(p: torch.Tensor, q: torch.Tensor, x: int) -> tuple[torch.Tensor, torch.Tensor]:
    return p, q  # wrong: after a rejection the next sibling must face norm(max(0, p - q)), not p again


def _fresh_target_draw(p: torch.Tensor, q: torch.Tensor, x: int) -> float:
    return float(p[x])  # a fresh y ~ p for this branch, the child kept when y == x


def _last_fresh_draw(p: torch.Tensor, q: torch.Tensor, x: int) -> torch.Tensor:
    rest = p.clone()  # the last branch's y, known to differ from its child x
    rest[x] = 0.0
    return rest / rest.sum() if rest.sum() > 0 else p


BROKEN_TREE_SAME_P = TreeRule("broken: every child judged against the same p", _accept, _same_p,
                              lambda p, q, x: residual_distribution(p, q))
# wrong: each branch gets its own chance of matching the target, so drafted tokens win too often
BROKEN_TREE_FRESH_DRAW = TreeRule("broken: a fresh target draw per branch", _fresh_target_draw, _same_p,
                                  _last_fresh_draw)
BROKEN_TREE_RULES = (BROKEN_TREE_SAME_P, BROKEN_TREE_FRESH_DRAW)
