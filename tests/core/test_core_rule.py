"""Analytic exactness of one accept/resample step: the rule's output distribution equals p."""
import pytest
import torch

from specdec_core.analysis.fidelity import rule_output_distribution
from specdec_core.broken import BROKEN_ACCEPT_IF_P_GE_Q, BROKEN_RESAMPLE_FROM_P
from specdec_core.sampling_config import SamplingConfig
from specdec_core.speculative import EXACT, Rows, Rule


def output_distribution(p: torch.Tensor, q: torch.Tensor, rule: Rule) -> torch.Tensor:
    """Exact distribution of the emitted token when x ~ q is judged by `rule` against p:
    P(y) = q(y) a(y) + sum_x q(x) (1 - a(x)) r_x(y), with a the acceptance probability and r_x the residual."""
    return rule_output_distribution(rule, p, q)


def one_draft(p: torch.Tensor, q: torch.Tensor, x: int) -> Rows:
    return Rows(p[None], q[None], torch.tensor([x]), SamplingConfig())


def random_pair(kind: str, g: torch.Generator, V: int = 12):
    p = torch.rand(V, generator=g, dtype=torch.float64) ** 3
    q = torch.rand(V, generator=g, dtype=torch.float64) ** 3
    if kind == "q zero where p is not":
        q[: V // 2] = 0
    elif kind == "p zero where q is not":
        p[: V // 2] = 0
    elif kind == "p equals q":
        q = p.clone()
    elif kind == "disjoint supports":
        p[: V // 2], q[V // 2:] = 0, 0
    elif kind == "one-hot q (n-gram drafter)":
        q = torch.zeros(V, dtype=torch.float64)
        q[int(torch.randint(V, (1,), generator=g))] = 1
    return p / p.sum(), q / q.sum()


KINDS = ["general", "q zero where p is not", "p zero where q is not", "p equals q", "disjoint supports",
         "one-hot q (n-gram drafter)"]


@pytest.mark.parametrize("kind", KINDS)
def test_exact_rule_outputs_p(kind):
    g = torch.Generator().manual_seed(KINDS.index(kind))
    for _ in range(200):
        p, q = random_pair(kind, g)
        assert torch.allclose(output_distribution(p, q, EXACT), p, atol=1e-9, rtol=0)


@pytest.mark.parametrize("rule", [BROKEN_RESAMPLE_FROM_P, BROKEN_ACCEPT_IF_P_GE_Q], ids=lambda r: r.name)
def test_broken_rules_do_not_output_p(rule):
    g = torch.Generator().manual_seed(7)
    worst = max(float((output_distribution(p, q, rule) - p).abs().max())
                for p, q in (random_pair("general", g) for _ in range(50)))
    assert worst > 1e-2


def test_one_hot_q_accepts_with_probability_p_and_removes_x():
    p = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    q = torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64)
    rows = one_draft(p, q, 1)
    assert float(EXACT.acceptance_probability(rows)[0]) == pytest.approx(0.3)
    assert torch.allclose(EXACT.residual(rows, 0), torch.tensor([0.5, 0.0, 0.2], dtype=torch.float64) / 0.7)
