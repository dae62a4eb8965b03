"""Draft-length policies: how many tokens the drafter proposes in each round (the paper's gamma).

The paper fixes gamma for a whole generation. Serving stacks choose it as they go, because alpha
changes from token to token: transformers' assisted generation grows or shrinks it after each
round (`num_assistant_tokens_schedule="heuristic"`) or stops a round when the drafter's confidence
drops (`assistant_confidence_threshold`, after the DISCO paper, arXiv 2405.04304). vLLM's dynamic
speculative decoding takes gamma from a batch-size -> gamma table the operator writes
(`num_speculative_tokens_per_batch_size`, vllm-project/vllm PR #32374, merged); the acceptance-driven
proposal (RFC vllm-project/vllm#4565) was closed without being merged, as far as its threads show.
The acceptance-driven policy here is that idea, not something vLLM ships. Each of these is a policy here.

Why any of them keeps the output exact: a policy decides how long a round drafts from what has
already happened (earlier rounds' verdicts, the drafts so far and the drafter's own distributions),
never from the verdict still to come. Each position's token is then drawn from p whatever the round
length turned out to be: either the draft passes the exact rule, or the corrective/bonus token is
drawn from the target at that very position. `specdec_core.broken.PeekingPolicy` breaks exactly
this (it looks at the coming verdict), and the tests show it failing.

Like a drafter, a policy is shared and stateless; `start()` gives the per-generation state, so
nothing leaks between generations or threads. Per round the sampler calls
  session.next_gamma(context)                     -> gamma, the most drafts this round may make
  session.keep_drafting(drafts, logits, generator) -> before each draft but the first: go on? (optional)
  session.observe(n_drafted, n_accepted)           -> the verdict, once the target has judged
`keep_drafting` is None for policies that never stop a round early; when it is a function, `logits`
is the drafter's RAW logits row (V,) that the next draft would be drawn from (a model drafter has
already paid the pass that made it; a drafter without a distribution, such as n-gram lookup, never
asks) and `generator` is the generation's generator, for a policy that stops at random: it may
draw from it, never read ahead of it.
"""
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Protocol

import torch

from .checks import MAX_GAMMA, check_float, check_int
from .costs import Costs

SIGNALS = ("top", "margin")  # confidence signals: top probability, or top-1 minus top-2 probability


def confidence(logits: torch.Tensor, signal: str = "margin") -> torch.Tensor:
    """The drafter's confidence in its next token from its RAW logits (..., V), before any sampling
    transform (in greedy mode the transformed q is one-hot and says nothing): "top" is the top
    probability, "margin" the top probability minus the second's."""
    if signal not in SIGNALS:
        raise ValueError(f"signal must be one of {SIGNALS}, got {signal!r}")
    top2 = torch.softmax(logits.float(), dim=-1).topk(2, dim=-1).values  # (..., 2)
    return top2[..., 0] if signal == "top" else top2[..., 0] - top2[..., 1]


def check_learning(policy) -> None:
    """The settings every policy that learns acceptance as it goes shares."""
    check_float("prior_alpha", policy.prior_alpha, 0.0, 0.999)
    check_float("prior_weight", policy.prior_weight, 0.01, 1000.0)
    check_float("decay", policy.decay, 0.0, 1.0)
    check_int("max_gamma", policy.max_gamma, 1, MAX_GAMMA)


# Why drafting stopped in a round (RoundTrace.draft_stop).
STOP_GAMMA = "gamma"  # drafted the round's gamma
STOP_CONFIDENCE = "confidence"  # the policy's stop test, on the drafter's confidence, ended the round
STOP_DRAFTER = "drafter"  # the drafter proposed fewer (n-gram lookup found no longer match)
STOP_TOKENS_LEFT = "tokens left"  # only this many tokens were still wanted
STOP_REASONS = (STOP_GAMMA, STOP_CONFIDENCE, STOP_DRAFTER, STOP_TOKENS_LEFT)
STOP_IN_WORDS = {
    STOP_GAMMA: "it had drafted the γ the policy chose",
    STOP_CONFIDENCE: "the policy judged the drafter too unsure of its next token to go on",
    STOP_DRAFTER: "the drafter had nothing more to propose",
    STOP_TOKENS_LEFT: "no more tokens were wanted",
}


# --- the policies -----------------------------------------------------------------------------------

class PolicySession(Protocol):
    keep_drafting: Callable | None

    def next_gamma(self, context: list[int]) -> int: ...

    def observe(self, n_drafted: int, n_accepted: int) -> None: ...


class Policy:
    """Shared and stateless; `start` gives each generation its PolicySession. Subclasses set `name` and
    `max_gamma` and implement `start`; what is optional has its default here."""
    name: str = "policy"
    max_gamma: int  # the longest round it can ask for
    plans_with_costs: bool = False  # True: it plans with a Costs, which with_costs replaces

    def start(self) -> PolicySession:
        raise NotImplementedError(f"{type(self).__name__} must implement start")

    def describe(self) -> str:
        """The policy in a few words, for captions and tables (default: its name)."""
        return self.name

    def with_costs(self, costs: Costs) -> "Policy":
        """The same policy planning with another fixed cost profile (default: itself, for a policy
        that plans with none)."""
        return self


@dataclass(frozen=True)
class Constant(Policy):
    """The paper's policy: gamma drafts every round."""
    gamma: int = 4
    name: str = "constant"

    def __post_init__(self):
        check_int("gamma", self.gamma, 1, MAX_GAMMA)

    def describe(self) -> str:
        return f"constant γ = {self.gamma}"

    @property
    def max_gamma(self) -> int:
        return self.gamma

    def start(self) -> "_ConstantSession":
        return _ConstantSession(self.gamma)


@dataclass
class _ConstantSession:
    gamma: int
    keep_drafting = None

    def next_gamma(self, context) -> int:
        return self.gamma

    def observe(self, n_drafted, n_accepted) -> None:
        pass


@dataclass(frozen=True)
class Heuristic(Policy):
    """transformers' "heuristic" schedule: gamma + 2 after a round that accepted every draft, gamma - 1
    after any other, kept within [min_gamma, max_gamma] (transformers has no upper bound)."""
    start_gamma: int = 5
    min_gamma: int = 1
    max_gamma: int = 12
    name: str = "heuristic"

    def __post_init__(self):
        check_int("max_gamma", self.max_gamma, 1, MAX_GAMMA)
        check_int("min_gamma", self.min_gamma, 1, self.max_gamma)
        check_int("start_gamma", self.start_gamma, self.min_gamma, self.max_gamma)

    def describe(self) -> str:
        return f"heuristic schedule (γ from {self.start_gamma}, +2 / −1, within {self.min_gamma}–{self.max_gamma})"

    def start(self) -> "_HeuristicSession":
        return _HeuristicSession(self, self.start_gamma)


@dataclass
class _HeuristicSession:
    policy: Heuristic
    gamma: int
    keep_drafting = None

    def next_gamma(self, context) -> int:
        return self.gamma

    def observe(self, n_drafted, n_accepted) -> None:
        step = 2 if n_drafted > 0 and n_accepted == n_drafted else -1
        self.gamma = min(self.policy.max_gamma, max(self.policy.min_gamma, self.gamma + step))


@dataclass(frozen=True)
class ConfidenceStop(Policy):
    """Draft while the drafter's confidence in its next token stays at or above `threshold`, up to
    `max_gamma` drafts (the first draft is always made). The signal is of the drafter's raw
    distribution: the top probability (transformers' `assistant_confidence_threshold`, llama.cpp's
    `--draft-p-min`) or the margin between the top two. The alpha Dial's calibration chart shows how
    well either predicts acceptance for the bundled pair."""
    # Defaults tuned on the app's preset prompts (not the benchmark's): the bundled drafter's margin is
    # under 0.016 for a fifth of its drafts, which the target accepts 40% of the time (others: ~85%).
    threshold: float = 0.02
    signal: str = "margin"
    max_gamma: int = 6
    name: str = "confidence"

    def __post_init__(self):
        check_float("threshold", self.threshold, 0.0, 1.0)
        check_int("max_gamma", self.max_gamma, 1, MAX_GAMMA)
        if self.signal not in SIGNALS:
            raise ValueError(f"signal must be one of {SIGNALS}, got {self.signal!r}")

    def describe(self) -> str:
        label = "top probability" if self.signal == "top" else "top-1 − top-2 margin"
        return f"confidence stop ({label} ≥ {self.threshold:g}, at most {self.max_gamma})"

    def start(self) -> "_ConfidenceSession":
        return _ConfidenceSession(self)


@dataclass
class _ConfidenceSession:
    policy: ConfidenceStop

    def next_gamma(self, context) -> int:
        return self.policy.max_gamma

    def keep_drafting(self, drafts: list[int], logits: torch.Tensor | None, generator) -> bool:
        if logits is None:  # a drafter without a distribution has no confidence to lose
            return True
        return float(confidence(logits, self.policy.signal)) >= self.policy.threshold

    def observe(self, n_drafted, n_accepted) -> None:
        pass


@dataclass(frozen=True)
class AcceptanceDriven(Policy):
    """Choose each round's gamma to maximise the hardware-aware speedup E(gamma) / (gamma c + v(gamma))
    (theory.speedup with a per-position alpha), where E(gamma) = 1 + sum_k prod_{i<=k} a_i and a_i is
    the acceptance rate measured so far at draft position i (accepted / reached). This is the idea of
    vLLM's closed RFC #4565, not what vLLM merged (its dynamic mode reads gamma from a batch-size
    table, PR #32374). Counts decay by `decay` per round, so the policy
    follows alpha as it drifts; a position seldom reached leans on the overall rate (`prior_weight`
    pseudo-rounds of it), which itself starts at `prior_alpha`."""
    plans_with_costs = True
    costs: Costs = field(default_factory=Costs)
    prior_alpha: float = 0.7
    prior_weight: float = 4.0
    decay: float = 0.95
    max_gamma: int = 12
    name: str = "acceptance"

    def __post_init__(self):
        check_learning(self)
        if not isinstance(self.costs, Costs):
            raise ValueError(f"costs must be a policies.Costs, got {type(self.costs).__name__}")

    def describe(self) -> str:
        return f"acceptance-driven (γ maximising E/(γc + v(γ)), at most {self.max_gamma})"

    def with_costs(self, costs: Costs) -> "AcceptanceDriven":
        return replace(self, costs=costs)

    def start(self) -> "_AcceptanceSession":
        return _AcceptanceSession(self, [0.0] * self.max_gamma, [0.0] * self.max_gamma)

    def rates(self, reached: list[float], accepted: list[float]) -> list[float]:
        """a_1..a_max_gamma from (decayed) counts: each position shrunk towards the pooled rate."""
        pooled = (sum(accepted) + self.prior_weight * self.prior_alpha) / (sum(reached) + self.prior_weight)
        return [(a + self.prior_weight * pooled) / (r + self.prior_weight) for r, a in zip(reached, accepted)]

    def best_gamma(self, rates: list[float]) -> int:
        """The gamma in [1, max_gamma] with the highest E(gamma) / round cost (ties: the smaller)."""
        best, best_speed, expected, survive = 1, -1.0, 1.0, 1.0
        for g in range(1, self.max_gamma + 1):
            survive *= rates[g - 1]
            expected += survive
            speed = expected / self.costs.round_cost(g)
            if speed > best_speed + 1e-12:
                best, best_speed = g, speed
        return best


@dataclass
class _AcceptanceSession:
    policy: AcceptanceDriven
    reached: list[float]  # decayed count of rounds that reached draft position i (index i - 1)
    accepted: list[float]  # ... and that accepted it
    keep_drafting = None

    def next_gamma(self, context) -> int:
        return self.policy.best_gamma(self.policy.rates(self.reached, self.accepted))

    def observe(self, n_drafted, n_accepted) -> None:
        d = self.policy.decay
        self.reached = [r * d for r in self.reached]
        self.accepted = [a * d for a in self.accepted]
        judged = min(n_drafted, n_accepted + 1)  # the accepted drafts and the first rejected one
        for i in range(judged):
            self.reached[i] += 1
            self.accepted[i] += i < n_accepted


@dataclass(frozen=True)
class Hybrid(Policy):
    """Each round's gamma from the acceptance-driven policy, the round ended early by the confidence
    stop: the measured acceptance sets how far a round may go, the drafter's margin where it stops."""
    plans_with_costs = True
    length: AcceptanceDriven = field(default_factory=AcceptanceDriven)
    stop: ConfidenceStop = field(default_factory=lambda: ConfidenceStop(max_gamma=MAX_GAMMA))
    name: str = "hybrid"

    def __post_init__(self):
        if not isinstance(self.length, AcceptanceDriven) or not isinstance(self.stop, ConfidenceStop):
            raise ValueError("a hybrid policy needs an AcceptanceDriven length and a ConfidenceStop stop")

    def describe(self) -> str:
        label = "top probability" if self.stop.signal == "top" else "margin"
        return f"hybrid (acceptance-driven γ up to {self.max_gamma}, stopped when the {label} < {self.stop.threshold:g})"

    def with_costs(self, costs: Costs) -> "Hybrid":
        return replace(self, length=self.length.with_costs(costs))

    @property
    def max_gamma(self) -> int:
        return self.length.max_gamma

    def start(self) -> "_HybridSession":
        return _HybridSession(self.length.start(), self.stop.start())


@dataclass
class _HybridSession:
    length: _AcceptanceSession
    stop: _ConfidenceSession

    def next_gamma(self, context) -> int:
        return self.length.next_gamma(context)

    def keep_drafting(self, drafts, logits, generator) -> bool:
        return self.stop.keep_drafting(drafts, logits, generator)

    def observe(self, n_drafted, n_accepted) -> None:
        self.length.observe(n_drafted, n_accepted)


@dataclass(frozen=True)
class Calibrated(Policy):
    """Stop a round where one more draft would lower the expected speedup. Each draft's chance of
    acceptance is predicted from the drafter's margin (top-1 minus top-2 of its raw distribution),
    read off a calibration table: per margin bin, the share of judged drafts the target accepted,
    starting from `prior_by_bin` (measured once for the bundled pair, greedy, on the app's preset
    prompts, not the benchmark's) and updated by the drafts judged during the generation, with
    `prior_weight` pseudo-drafts of the prior per bin and counts decaying by `decay`. Before draft
    i + 1, with E the expected tokens and C the cost of the round so far (theory.speedup's E and
    gamma c + v(gamma)) and S the chance that every draft so far is accepted, it drafts on when
    (E + S a) / (C + c + v(i + 1) - v(i)) >= E / C for the next draft's predicted acceptance a. The
    first draft is always made (its margin comes before any decision)."""
    plans_with_costs = True
    costs: Costs = field(default_factory=Costs)
    edges: tuple[float, ...] = (0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32)  # margin bin boundaries
    # acceptance per bin (502 judged drafts): 0.40 0.37 0.53 0.87 0.91 0.82 0.74 0.94
    prior_by_bin: tuple[float, ...] = (0.40, 0.37, 0.53, 0.87, 0.91, 0.82, 0.74, 0.94)
    prior_alpha: float = 0.8  # the first draft's acceptance before any is judged
    prior_weight: float = 4.0
    decay: float = 0.98
    max_gamma: int = 12
    name: str = "calibrated"

    def __post_init__(self):
        check_learning(self)
        if list(self.edges) != sorted(self.edges) or not all(0 < e < 1 for e in self.edges):
            raise ValueError(f"edges must rise within (0, 1), got {self.edges!r}")
        if len(self.prior_by_bin) != len(self.edges) + 1 or not all(0 <= x <= 1 for x in self.prior_by_bin):
            raise ValueError(f"prior_by_bin must give one acceptance in [0, 1] per bin ({len(self.edges) + 1}), "
                             f"got {self.prior_by_bin!r}")

    def describe(self) -> str:
        return f"calibrated stop (drafts on while the margin-predicted acceptance pays, at most {self.max_gamma})"

    def with_costs(self, costs: Costs) -> "Calibrated":
        return replace(self, costs=costs)

    def start(self) -> "_CalibratedSession":
        n = len(self.edges) + 1
        return _CalibratedSession(self, [0.0] * n, [0.0] * n, [0.0, 0.0])


@dataclass
class _CalibratedSession:
    policy: Calibrated
    judged: list[float]  # per margin bin: decayed count of judged drafts
    accepted: list[float]  # ... and of accepted ones
    first: list[float]  # [judged, accepted] of first drafts (no margin seen before them)
    margins: list[float] = field(default_factory=list)  # this round: the margin of drafts 2, 3, ...
    expected: float = 1.0  # this round: E so far
    survive: float = 1.0  # this round: chance that every draft so far is accepted

    def _predict(self, margin: float) -> float:
        b = sum(margin >= e for e in self.policy.edges)
        w = self.policy.prior_weight
        return (self.accepted[b] + w * self.policy.prior_by_bin[b]) / (self.judged[b] + w)

    def next_gamma(self, context) -> int:
        w = self.policy.prior_weight
        a1 = (self.first[1] + w * self.policy.prior_alpha) / (self.first[0] + w)
        self.margins, self.survive = [], a1
        self.expected = 1.0 + a1
        return self.policy.max_gamma

    def keep_drafting(self, drafts, logits, generator) -> bool:
        margin = 1.0 if logits is None else float(confidence(logits, "margin"))
        self.margins.append(margin)
        a, i, costs = self._predict(margin), len(drafts), self.policy.costs
        cost = costs.round_cost(i)
        if (self.expected + self.survive * a) / costs.round_cost(i + 1) < self.expected / cost:
            return False
        self.survive *= a
        self.expected += self.survive
        return True

    def observe(self, n_drafted, n_accepted) -> None:
        d = self.policy.decay
        self.judged = [x * d for x in self.judged]
        self.accepted = [x * d for x in self.accepted]
        self.first = [x * d for x in self.first]
        if n_drafted == 0:
            return
        self.first[0] += 1
        self.first[1] += n_accepted >= 1
        for j, margin in enumerate(self.margins[:n_drafted - 1], start=2):  # drafts 2.. that were judged
            if j > n_accepted + 1:
                break
            b = sum(margin >= e for e in self.policy.edges)
            self.judged[b] += 1
            self.accepted[b] += j <= n_accepted


# The public registry: a policy's name -> a factory taking no arguments (sensible defaults).
POLICIES: dict[str, Callable[[], Policy]] = {
    "constant": Constant,
    "heuristic": Heuristic,
    "confidence": ConfidenceStop,
    "acceptance": AcceptanceDriven,
    "hybrid": Hybrid,
    "calibrated": Calibrated,
}
ADAPTIVE = tuple(name for name in POLICIES if name != "constant")  # every policy but the paper's constant
# The adaptive policy offered where no measurement has chosen one for a drafter (pairs.ModelPair.adaptive_policy
# reads what `specdec bench-policies --record` measured best for each of the bundled pair's drafters).
DEFAULT_ADAPTIVE = "hybrid"


def make_policy(name: str, gamma: int = 4, max_gamma: int | None = None, threshold: float | None = None,
                signal: str | None = None) -> Policy:
    """The policy registered as `name`, with the knobs the CLI and the pages expose; None keeps the
    factory's default. `gamma` is the constant policy's gamma and the heuristic's starting gamma."""
    if name not in POLICIES:
        raise ValueError(f"policy must be one of {sorted(POLICIES)}, got {name!r}")
    if name == "constant":
        return Constant(gamma)
    if name == "hybrid":
        default = Hybrid()
        return Hybrid(make_policy("acceptance", gamma, max_gamma), replace(
            default.stop, **{k: v for k, v in (("threshold", threshold), ("signal", signal)) if v is not None}))
    policy = POLICIES[name]()
    changes = {"max_gamma": max_gamma, "threshold": threshold, "signal": signal}
    knobs = {f.name for f in fields(policy)}
    changes = {k: v for k, v in changes.items() if v is not None and k in knobs}
    if name == "heuristic":
        top = changes.get("max_gamma", policy.max_gamma)
        changes["start_gamma"] = min(check_int("gamma", gamma, 1, MAX_GAMMA), top)
    return replace(policy, **changes)


def with_costs(policy: Policy, costs: Costs) -> Policy:
    """`policy.with_costs(costs)`: e.g. the profile a page measured on this machine."""
    return policy.with_costs(costs)


def describe(policy: Policy) -> str:
    """`policy.describe()`."""
    return policy.describe()


def as_policy(gamma) -> Policy:
    """Accept a policy, or an int gamma (the constant policy)."""
    if isinstance(gamma, bool):
        raise ValueError(f"gamma must be an integer in [1, {MAX_GAMMA}] or a draft-length policy, got {gamma!r}")
    if isinstance(gamma, int):
        if not 1 <= gamma <= MAX_GAMMA:
            raise ValueError(f"gamma must be an integer in [1, {MAX_GAMMA}] or a draft-length policy, got {gamma!r}")
        return Constant(gamma)
    if isinstance(gamma, Policy):
        return gamma
    raise ValueError(f"gamma must be an integer in [1, {MAX_GAMMA}] or a draft-length policy, got {gamma!r}")
