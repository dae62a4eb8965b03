"""Deliberately WRONG acceptance rules: the mistakes people commonly make when implementing
speculative sampling. They exist only so the exactness lab and the tests can show that a correct
statistical test catches them. Never use them to generate text.
"""
from dataclasses import replace

import torch

from .drafters import Proposal
from .sampler import Rows, Rule, exact_acceptance, exact_residual
from .sampling import SamplingConfig, to_probs


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
