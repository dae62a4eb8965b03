"""The paper's closed forms, checked against a Monte-Carlo simulation of i.i.d. acceptance."""
import numpy as np
import pytest
import torch

from specdec_core import theory


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.6, 0.8, 0.95])
@pytest.mark.parametrize("gamma", [1, 3, 7])
def test_expected_tokens_matches_simulation(alpha, gamma):
    sim = theory.simulate_tokens_per_round(alpha, gamma, 200_000, seed=gamma)
    stderr = sim.std() / np.sqrt(len(sim))
    assert abs(sim.mean() - theory.expected_tokens(alpha, gamma)) < 5 * stderr + 1e-12


def test_closed_forms_at_known_points():
    assert theory.expected_tokens(0.0, 5) == 1.0
    assert theory.expected_tokens(1.0, 5) == 6.0
    assert theory.expected_tokens(0.5, 1) == pytest.approx(1.5)
    assert theory.walltime_improvement(0.8, 4, 0.0) == pytest.approx((1 - 0.8**5) / 0.2)
    assert theory.speedup(0.8, 4, 0.1, v=1.0) == pytest.approx(theory.walltime_improvement(0.8, 4, 0.1))
    assert theory.speedup(0.8, 4, 0.1, v=lambda g: 1.4) == pytest.approx(((1 - 0.8**5) / 0.2) / 1.8)
    # Theorem 3.11: operations grow by (gamma c_hat + gamma + 1) / E
    assert theory.expected_operations_increase(0.5, 2, 0.0) == pytest.approx(3 / 1.75)


def test_optimal_gamma_is_the_argmax_and_moves_with_alpha():
    for alpha, c in [(0.6, 0.05), (0.8, 0.05), (0.9, 0.01), (0.8, 0.3)]:
        best = theory.optimal_gamma(alpha, c)
        assert all(theory.speedup(alpha, best, c) >= theory.speedup(alpha, g, c) for g in range(1, 33))
    assert theory.optimal_gamma(0.9, 0.05) > theory.optimal_gamma(0.6, 0.05)
    # a CPU-like v(gamma) that grows with gamma pulls the optimum down
    assert theory.optimal_gamma(0.8, 0.1, v=lambda g: 1 + 0.1 * g) <= theory.optimal_gamma(0.8, 0.1)


def test_alpha_of_is_sum_of_min():
    p = torch.tensor([0.5, 0.5, 0.0])
    q = torch.tensor([0.25, 0.25, 0.5])
    assert float(theory.alpha_of(p, q)) == pytest.approx(0.5)
    assert float(theory.alpha_of(p, p)) == pytest.approx(1.0)
