"""What a draft-length policy plans with: the cost of a round (c and v(gamma) of theory.speedup), as
one frozen type, planned or measured."""
import math
from collections.abc import Mapping
from dataclasses import dataclass

from .checks import check_float


@dataclass(frozen=True)
class Costs:
    """The project's one cost type: c and v(gamma) of theory.speedup, in single-position target passes,
    frozen and hashable.

    Planning costs (a `table` of v) are FIXED for a generation, so a seed reproduces its text (a policy
    timing live passes would choose different gammas, hence draw different tokens, each run). The
    defaults are the bundled Shakespeare pair as measured once on the project's own machine
    (docs/benchmarks.md): a fallback for the CLI and the tests. The pages plan with the costs measured on
    the machine serving them (`with_costs`, ui.server.measure.planning_policy).

    Measured costs (`Costs.measured`) also keep the seconds they came from: a target pass over one
    position, a draft pass, and a target pass over each measured k positions; v then interpolates
    between the measured k (and holds the nearest beyond them)."""
    c: float = 0.079  # one draft pass / one target pass (measured inside the benchmark's runs)
    table: tuple[float, ...] = (1.0, 1.19, 1.28, 1.49, 1.64, 1.76, 1.96, 2.28, 2.41)  # v(0), v(1), ...; linear beyond
    target_s: float | None = None  # measured: one target pass over one position
    draft_s: float | None = None  # measured: one draft pass over one position
    verify: tuple[tuple[int, float], ...] = ()  # measured: (k, seconds of one target pass over k positions)

    def __post_init__(self):
        check_float("c", self.c, 0.0, 100.0)
        if self.verify:
            if self.target_s is None or not self.target_s > 0:
                raise ValueError(f"measured costs need a positive target_s, got {self.target_s!r}")
        elif len(self.table) < 2 or any(not math.isfinite(x) or x <= 0 for x in self.table):
            raise ValueError(f"the v table must list at least v(0) and v(1), all positive, got {self.table!r}")

    @classmethod
    def measured(cls, target_s: float, draft_s: float, verify_s: Mapping[int, float]) -> "Costs":
        """Costs from measured seconds: c = draft_s / target_s, v(gamma) = pass over gamma + 1 / target_s."""
        return cls(draft_s / target_s, (), float(target_s), float(draft_s),
                   tuple((int(k), float(t)) for k, t in sorted(verify_s.items())))

    @property
    def verify_s(self) -> dict[int, float]:
        """k -> seconds of one target pass over k positions (measured costs; empty otherwise)."""
        return dict(self.verify)

    def v(self, gamma: int) -> float:
        """Cost of one target pass over gamma + 1 positions (verifying gamma drafts), in single passes."""
        if self.verify:
            k, seconds = gamma + 1, self.verify_s
            if k in seconds:
                return seconds[k] / self.target_s
            ks = sorted(seconds)  # linear interpolation between measured points
            lo = max((x for x in ks if x <= k), default=ks[0])
            hi = min((x for x in ks if x >= k), default=ks[-1])
            if lo == hi:
                return seconds[lo] / self.target_s
            t = seconds[lo] + (seconds[hi] - seconds[lo]) * (k - lo) / (hi - lo)
            return t / self.target_s
        if gamma < len(self.table):
            return self.table[gamma]
        slope = self.table[-1] - self.table[-2]
        return self.table[-1] + slope * (gamma - len(self.table) + 1)

    def round_cost(self, gamma: int) -> float:
        """gamma drafter passes and one verifying target pass, in single target passes."""
        return gamma * self.c + self.v(gamma)

    def planning(self, max_gamma: int = 16) -> "Costs":
        """These costs as a policy plans with them: c and a table of v(0) = 1 ... v(max_gamma), linear
        beyond (the seconds left behind)."""
        return Costs(float(self.c), tuple([1.0] + [float(self.v(g)) for g in range(1, max_gamma + 1)]))

    @classmethod
    def from_profile(cls, costs: "Costs", max_gamma: int = 16) -> "Costs":
        """`costs.planning(max_gamma)`: measured costs as a policy plans with them."""
        return costs.planning(max_gamma)
