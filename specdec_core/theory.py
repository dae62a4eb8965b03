"""The paper's closed-form cost model (Leviathan et al. 2022, section 3), plus a hardware-aware variant,
and a race simulated from it (time counted in target passes; the live race is analysis.race).

alpha: probability that a draft token is accepted (assumed i.i.d. across positions).
gamma: draft tokens per round.    c: cost of one draft pass / cost of one target pass.
v:     cost of ONE target pass over gamma + 1 positions / cost of a single-position pass.
       The paper assumes v = 1 (a GPU has idle arithmetic to spare); on a CPU v grows with gamma.
"""
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch


def _check(alpha: float, gamma: int) -> None:
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    if gamma < 0:
        raise ValueError(f"gamma must be >= 0, got {gamma}")


def expected_tokens(alpha: float, gamma: int) -> float:
    """Expected tokens per target pass (one round): (1 - alpha^(gamma+1)) / (1 - alpha). Eq. (1)."""
    _check(alpha, gamma)
    if alpha == 1:
        return gamma + 1.0
    return (1 - alpha ** (gamma + 1)) / (1 - alpha)


def accepted_per_drafted(alpha: float, gamma: int) -> float:
    """Expected accepted / drafted in a round of gamma drafts: alpha (1 - alpha^gamma) / (gamma (1 - alpha)).
    NOT alpha: the drafts after a rejection are drafted but never judged (gamma = 4, alpha = 0.8: 0.59)."""
    _check(alpha, gamma)
    if gamma == 0:
        raise ValueError("gamma must be >= 1: a round with no drafts has no acceptance rate per draft")
    return (expected_tokens(alpha, gamma) - 1) / gamma


def walltime_improvement(alpha: float, gamma: int, c: float) -> float:
    """The paper's expected speedup over plain decoding: E / (gamma * c + 1). Theorem 3.8."""
    return expected_tokens(alpha, gamma) / (gamma * c + 1)


def _v(v: float | Callable[[int], float], gamma: int) -> float:
    return float(v(gamma)) if callable(v) else float(v)


def speedup(alpha: float, gamma: int, c: float, v: float | Callable[[int], float] = 1.0) -> float:
    """Hardware-aware expected speedup: E / (gamma * c + v(gamma)); v = 1 gives the paper's formula, and
    v may be a constant or v(gamma) itself (such as a measured `costs.Costs.v`)."""
    return expected_tokens(alpha, gamma) / (gamma * c + _v(v, gamma))


def optimal_gamma(alpha: float, c: float, v: float | Callable[[int], float] = 1.0, max_gamma: int = 32) -> int:
    """The integer gamma in [1, max_gamma] with the highest expected speedup (ties: the smaller)."""
    return max(range(1, max_gamma + 1), key=lambda g: (round(speedup(alpha, g, c, v), 12), -g))


def expected_operations_increase(alpha: float, gamma: int, c_hat: float) -> float:
    """Expected factor by which total arithmetic grows: (1-alpha)(gamma*c_hat + gamma + 1) / (1 - alpha^(gamma+1)),
    c_hat = draft operations per token / target operations per token. Theorem 3.11."""
    return (gamma * c_hat + gamma + 1) / expected_tokens(alpha, gamma)


def alpha_of(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Acceptance probability of one position, sum_x min(p(x), q(x)); (..., V) -> (...)."""
    return torch.minimum(p, q).sum(-1)


def simulate_tokens_per_round(alpha: float, gamma: int, n_rounds: int, seed: int = 0) -> np.ndarray:
    """Monte-Carlo check of the model: tokens emitted by each of n_rounds rounds when every draft
    is accepted independently with probability alpha (accepted prefix + 1 corrective/bonus)."""
    _check(alpha, gamma)
    rng = np.random.default_rng(seed)
    accepted = rng.random((n_rounds, gamma)) < alpha
    prefix = np.where(accepted.all(1), gamma, np.argmin(accepted, axis=1))
    return prefix + 1


# --- a race simulated from the model ----------------------------------------------------------------
# Plain decoding makes one token per pass. A speculative round costs gamma * c (drafts) + v (one target
# pass over gamma + 1 positions; v = 1 on the paper's ideal hardware) and emits its accepted prefix plus
# one token, each draft accepted independently with probability alpha (simulate_tokens_per_round).

@dataclass
class SimulatedLane:
    name: str
    times: list[float]  # when each token appeared, in target-pass units
    passes: int  # target passes
    round_cost: float  # cost of one pass (plain) or one round (speculative), in target passes

    @property
    def finish(self) -> float:
        return self.times[-1] if self.times else 0.0


def simulated_plain(n_tokens: int) -> SimulatedLane:
    return SimulatedLane("standard", [float(i + 1) for i in range(n_tokens)], n_tokens, 1.0)


def simulated_speculative(alpha: float, gamma: int, c: float, n_tokens: int = 40, v: float = 1.0,
                          seed: int = 0, name: str = "speculative") -> SimulatedLane:
    """One random race under the paper's model: rounds of cost gamma * c + v, each emitting
    1 + (accepted prefix) tokens. The tokens of a round appear when its target pass ends."""
    if n_tokens < 1:
        raise ValueError(f"n_tokens must be >= 1, got {n_tokens}")
    if c < 0 or v <= 0:
        raise ValueError(f"c must be >= 0 and v > 0, got c = {c}, v = {v}")
    per_round = simulate_tokens_per_round(alpha, gamma, n_tokens, seed)  # never more rounds than tokens
    cost = gamma * c + v
    times, t, passes = [], 0.0, 0
    for emitted in per_round:
        t += cost
        passes += 1
        times += [t] * int(min(emitted, n_tokens - len(times)))
        if len(times) >= n_tokens:
            break
    return SimulatedLane(name, times, passes, cost)


def expected_finish(alpha: float, gamma: int, c: float, n_tokens: int, v: float = 1.0) -> float:
    """Expected finishing time in target passes: n_tokens / speedup (the theory module's formula)."""
    return n_tokens / speedup(alpha, gamma, c, v)
