"""What a draft-length policy plans with: the cost of a round (c and v(gamma) of theory.speedup), the
drafter's confidence in its next token, and the bounds every policy's settings are checked against."""
import math
from dataclasses import dataclass

import torch

MAX_GAMMA = 32  # beyond this a round is all waste: even alpha = 0.95 keeps 0.95**32 < 20% of drafts
SIGNALS = ("top", "margin")  # confidence signals: top probability, or top-1 minus top-2 probability


def check_int(name: str, value, lo: int, hi: int) -> int:
    """value, if it is an integer in [lo, hi]; else ValueError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{name} must be an integer in [{lo}, {hi}], got {value!r}")
    return value


def check_float(name: str, value, lo: float, hi: float) -> float:
    """value as a float, if it is a finite number in [lo, hi]; else ValueError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not lo <= value <= hi:
        raise ValueError(f"{name} must be a number in [{lo}, {hi}], got {value!r}")
    return float(value)


def check_learning(policy) -> None:
    """The settings every policy that learns acceptance as it goes shares."""
    check_float("prior_alpha", policy.prior_alpha, 0.0, 0.999)
    check_float("prior_weight", policy.prior_weight, 0.01, 1000.0)
    check_float("decay", policy.decay, 0.0, 1.0)
    check_int("max_gamma", policy.max_gamma, 1, MAX_GAMMA)


@dataclass(frozen=True)
class Costs:
    """c and v(gamma) of theory.speedup, FIXED for a generation, so a seed reproduces its text (a
    policy timing live passes would choose different gammas, hence draw different tokens, each run).
    The defaults are the bundled Shakespeare pair as measured once on the project's own machine
    (docs/benchmarks.md): a fallback for the CLI and the tests. The pages plan with the profile measured
    on the machine serving them (`with_costs`, ui.server.measure.planning_policy)."""
    c: float = 0.079  # one draft pass / one target pass (measured inside the benchmark's runs)
    v: tuple[float, ...] = (1.0, 1.19, 1.28, 1.49, 1.64, 1.76, 1.96, 2.28, 2.41)  # v(0), v(1), ...; linear beyond

    def __post_init__(self):
        check_float("c", self.c, 0.0, 100.0)
        if len(self.v) < 2 or any(not math.isfinite(x) or x <= 0 for x in self.v):
            raise ValueError(f"v must list at least v(0) and v(1), all positive, got {self.v!r}")

    def v_of(self, gamma: int) -> float:
        """Cost of one target pass over gamma + 1 positions, in single-position passes."""
        if gamma < len(self.v):
            return self.v[gamma]
        slope = self.v[-1] - self.v[-2]
        return self.v[-1] + slope * (gamma - len(self.v) + 1)

    def round_cost(self, gamma: int) -> float:
        """gamma drafter passes and one verifying target pass, in single target passes."""
        return gamma * self.c + self.v_of(gamma)

    @classmethod
    def from_profile(cls, profile, max_gamma: int = 16) -> "Costs":
        """From a measured `analysis.measure.CostProfile` (anything with .c and .v(gamma))."""
        return cls(float(profile.c), tuple([1.0] + [float(profile.v(g)) for g in range(1, max_gamma + 1)]))


def confidence(logits: torch.Tensor, signal: str = "margin") -> torch.Tensor:
    """The drafter's confidence in its next token from its RAW logits (..., V), before any sampling
    transform (in greedy mode the transformed q is one-hot and says nothing): "top" is the top
    probability, "margin" the top probability minus the second's."""
    if signal not in SIGNALS:
        raise ValueError(f"signal must be one of {SIGNALS}, got {signal!r}")
    top2 = torch.softmax(logits.float(), dim=-1).topk(2, dim=-1).values  # (..., 2)
    return top2[..., 0] if signal == "top" else top2[..., 0] - top2[..., 1]
