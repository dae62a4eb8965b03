"""Deliberately WRONG acceptance rules: the mistakes people commonly make when implementing
speculative sampling. They exist only so the exactness lab and the tests can show that a correct
statistical test catches them. Never use them to generate text.
"""
import torch

from .drafters import Proposal
from .sampler import Rule, acceptance_probability, residual_distribution
from .sampling import SamplingConfig, to_probs
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


# --- a deliberately WRONG draft-length policy -------------------------------------------------------

class PeekingPolicy:
    """Wrong: ends a round as soon as the verdict still to come would accept every draft so far. It
    reads that verdict ahead of time: it copies the generation's generator (the uniforms the rule is
    about to draw) and runs the target itself. A draft that would be rejected gets another chance in
    a longer round with fresh uniforms, so drafts are over-accepted. Any policy that looks only at
    the past is exact (see specdec_core.policies); this one shows the tests notice the difference."""

    def __init__(self, target, sampling: SamplingConfig, max_gamma: int = 4):
        self.target, self.sampling, self.max_gamma = target, sampling, max_gamma
        self.name = "broken: peeks at the coming verdict"

    def start(self) -> "_PeekingSession":
        return _PeekingSession(self)


class _PeekingSession:
    def __init__(self, policy: PeekingPolicy):
        self.policy, self.context, self.q_rows = policy, [], []

    def next_gamma(self, context: list[int]) -> int:
        self.context, self.q_rows = list(context), []
        return self.policy.max_gamma

    def keep_drafting(self, drafts: list[int], logits: torch.Tensor, generator: torch.Generator) -> bool:
        from .lm import CachedLM  # the target's own pass, outside the round (the cheat)
        self.q_rows.append(to_probs(logits, self.policy.sampling))
        if self.policy.sampling.greedy:
            return True
        ahead = torch.Generator().manual_seed(0)
        ahead.set_state(generator.get_state())  # the uniforms verify() will draw if the round ends here
        uniforms = torch.rand(len(drafts), generator=ahead, dtype=torch.float64)
        logits_all = CachedLM(self.policy.target).extend(self.context + drafts)  # (len(context) + n, V)
        p = to_probs(logits_all[-len(drafts) - 1:-1], self.policy.sampling)  # (n, V): p at each draft
        x = torch.tensor(drafts)
        rows = torch.arange(len(drafts))
        accept = acceptance_probability(p[rows, x], torch.stack(self.q_rows)[rows, x])
        return not bool((uniforms < accept.double()).all())  # stop only when the round would be a clean sweep

    def observe(self, n_drafted: int, n_accepted: int) -> None:
        pass
