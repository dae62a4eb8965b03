"""The exactness lab: does speculative sampling really draw from the target's distribution p?

For a fixed prefix we know p exactly for the next one or two tokens (one target pass per first token),
so we can draw K samples with speculative decoding and K with plain sampling and test both against it
with Pearson's chi-square (scipy.stats.chisquare). The exact rule passes; the broken rules of
`specdec_core.broken` fail the same test at the same K.

Speed: K full generations would cost K prefills. Instead the rounds are replayed over distributions
computed once per distinct context (prefix + up to two tokens) and kept in `Distributions`. The replay
drives the same generation skeleton (`bookkeeping.Generation`, here bookkeeping without a model), calls
the sampler's own `verify` with the same `Rule`, draws drafts the way `ModelDrafter` does and
consumes the random generator in the same order as `speculative_generate(max_new_tokens=n + 1)`:
sample i with seed s + i gives the first n tokens that generator would give with seed s + i (up to
float rounding between a cached and an uncached pass; tests/core/test_lab.py checks this). One
token more than kept is generated so that the last kept position is still a drafted one: with
max_new_tokens = n the sampler never drafts the final token, and the rule would go untested there.
"""
import difflib
import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy import stats

from ..bookkeeping import Generation, make_generator
from ..drafters import Proposal
from ..model import CachedLM, context_length, vocab_size
from ..sampling_config import SamplingConfig, sample, to_probs
from ..speculative import EXACT, Rule, verify
from ..tree import EXACT_TREE, TreeRule, verify_tree
from ..tree_draft import check_node_budget, check_shape, draft_tree
from .stats import Pacing

MAX_K = 20_000  # samples per decoder: bounds the page's work (each sample is a few tensor ops)
MIN_K = 100
MIN_EXPECTED = 5  # chi-square cells expected fewer times than this are pooled (the usual rule of thumb)
LEVEL = 0.001  # significance level: p-value below it = "not the target distribution"
# The documented demonstration (the library's defaults for the lab; an app may start from the same run):
# on the bundled pair with DOCUMENTED_PROMPT, DOCUMENTED_TEMPERATURE and DOCUMENTED_GAMMA, the prompt's first
# DOCUMENTED_PREFIX_TOKENS tokens as prefix (None: all of them), the next DOCUMENTED_N_TOKENS tokens tested with
# K = DOCUMENTED_K samples from seed DOCUMENTED_SEED, the exact rule passes and every broken rule fails.
# tests/core/test_lab.py and tests/app/test_chapter_identical_outputs.py check it.
DOCUMENTED_PROMPT = "ROMEO:\nBut soft, what light through yonder window breaks?"
DOCUMENTED_TEMPERATURE = 1.0  # the target's own distribution
DOCUMENTED_GAMMA = 4
DOCUMENTED_SAMPLING = SamplingConfig(DOCUMENTED_TEMPERATURE)
DOCUMENTED_K = 3000
DOCUMENTED_SEED = 0
DOCUMENTED_PREFIX_TOKENS: int | None = 9  # "ROMEO:\nBut soft, what light through": mid-line, the target is
# unsure (alpha about 0.8 here), so all three mistakes show; after the full line alpha is near 0.96 and resampling
# from p (whose error scales with 1 - alpha) needs a larger K to be caught reliably.
DOCUMENTED_N_TOKENS = 1
# Token trees, documented the same way (same prefix, K and seed): with this shape the next two tokens (a one-token
# run cannot tell a tree from a chain), the exact tree rule passes and both naive tree rules fail.
DOCUMENTED_TREE_SHAPE = (3, 2)
DOCUMENTED_TREE_N_TOKENS = 2
OTHER = "other"  # marks pooled outcomes inside a cell key

Outcome = tuple[int, ...]  # the next n tokens


# --- distributions after the prefix, computed once per context ---------------------------------------

class Distributions:
    """Logits of the target and the drafter after `prefix + suffix`, computed once per suffix with a KV
    cache of the prefix (one short pass per new context). Belongs to one lab run: not thread-safe."""

    def __init__(self, target, draft, prefix_ids: list[int]):
        prefix = [int(t) for t in prefix_ids]
        if not prefix:
            raise ValueError("the prefix is empty: the lab needs at least one token to condition on")
        if vocab_size(target) != vocab_size(draft):
            raise ValueError("drafter and target must share one vocabulary")
        self.prefix = prefix
        self.vocab = vocab_size(target)
        self.window = min(context_length(target), context_length(draft))
        self._lms = {"target": CachedLM(target), "draft": CachedLM(draft)}
        for lm in self._lms.values():
            lm.prefill(prefix[:-1])
        self._memo: dict[tuple[str, Outcome], torch.Tensor] = {}
        self._probs: dict[tuple[str, Outcome, SamplingConfig], torch.Tensor] = {}

    @property
    def passes(self) -> int:
        """Forward passes made so far (both models, the prefix's prefill included)."""
        return sum(lm.passes for lm in self._lms.values())

    @torch.inference_mode()
    def logits(self, role: str, suffix: Outcome) -> torch.Tensor:
        """(V,) raw logits of `role` ("target" or "draft") for the token after prefix + suffix."""
        key = (role, suffix)
        if key not in self._memo:
            lm = self._lms[role]
            fed = [self.prefix[-1], *suffix]
            self._memo[key] = lm.extend(fed, logits_to_keep=1)[0]
            lm.rollback(len(fed))
        return self._memo[key]

    def probs(self, role: str, suffix: Outcome, sampling: SamplingConfig) -> torch.Tensor:
        """(V,) `role`'s distribution after prefix + suffix, after the sampling transform (p or q)."""
        key = (role, suffix, sampling)
        if key not in self._probs:
            self._probs[key] = to_probs(self.logits(role, suffix), sampling)
        return self._probs[key]

    def p(self, suffix: Outcome, sampling: SamplingConfig) -> torch.Tensor:
        """(V,) the target distribution after prefix + suffix."""
        return self.probs("target", suffix, sampling)


# --- the two samplers, replayed --------------------------------------------------------------------

def speculative_sample(dist: Distributions, n_tokens: int, gamma: int, sampling: SamplingConfig,
                       generator: torch.Generator, rule: Rule = EXACT) -> Outcome:
    """The first n_tokens of one speculative generation (see the module docstring for the replay)."""
    g = Generation(dist.prefix, n_tokens + 1, generator)  # no eos: the lab counts every token
    out = g.tokens
    while len(out) < n_tokens:  # the kept tokens are drawn: the rest would be placeholders
        n_draft = g.room(gamma)  # as speculative_generate: >= 1 here
        drafts, q_rows = [], []
        for _ in range(n_draft):  # as ModelDrafter.propose: x_i ~ q(. | context, x_<i)
            q_rows.append(dist.probs("draft", tuple(out + drafts), sampling))
            drafts.append(sample(q_rows[-1], generator))
        logits = torch.stack([dist.logits("draft", tuple(out + drafts[:i])) for i in range(n_draft)])  # (n, V)
        proposal = Proposal(drafts, torch.stack(q_rows), logits)
        # p_1..p_{n+1}. The last row only feeds a bonus token at position max_new, which is never
        # kept, so a placeholder stands in for it (it saves one pass per distinct draft sequence).
        p_rows = [dist.p(tuple(out + drafts[:i]), sampling) if len(out) + i < n_tokens
                  else torch.full((dist.vocab,), 1.0 / dist.vocab) for i in range(n_draft + 1)]
        p = torch.stack(p_rows)  # (n + 1, V)
        q = rule.verification_q(proposal, sampling)[:n_draft]
        target_logits = torch.stack([dist.logits("target", tuple(out + drafts[:i])) for i in range(n_draft)])  # (n, V)
        v = verify(p, q, drafts, sampling, generator, rule, target_logits)
        g.commit(drafts[:v.n_accepted], v.next_token, v.next_kind)
    return tuple(out[:n_tokens])


def tree_sample(dist: Distributions, n_tokens: int, shape: tuple[int, ...], sampling: SamplingConfig,
                generator: torch.Generator, rule: TreeRule = EXACT_TREE, node_budget: int | None = None) -> Outcome:
    """The first n_tokens of one token-tree generation, replayed like `speculative_sample`: the same
    `draft_tree` and `verify_tree` as `tree_generate(max_new_tokens=n + 1)`, in the same order."""
    g = Generation(dist.prefix, n_tokens + 1, generator)
    out = g.tokens
    while len(out) < n_tokens:
        depth = g.room(len(shape))  # as tree_generate: >= 1 here

        def logits_at(tree, nodes, out=out):  # the drafter after the path to each node
            return torch.stack([dist.logits("draft", tuple(out + tree.path_tokens(n))) for n in nodes])

        tree = draft_tree(logits_at, shape, sampling, generator, node_budget, depth)

        def p_at(node, out=out, tree=tree):  # only the nodes the walk visits; past the kept tokens, a placeholder
            suffix = tuple(out + tree.path_tokens(node))
            return dist.p(suffix, sampling) if len(suffix) < n_tokens else torch.full((dist.vocab,), 1.0 / dist.vocab)

        v = verify_tree(tree, p_at, sampling, generator, rule)
        g.commit([tree.tokens[n] for n in v.path], v.next_token, v.next_kind)
    return tuple(out[:n_tokens])


def plain_sample(dist: Distributions, n_tokens: int, sampling: SamplingConfig,
                 generator: torch.Generator) -> Outcome:
    """n_tokens drawn one by one from p, as autoregressive_generate does."""
    out: list[int] = []
    for _ in range(n_tokens):
        out.append(sample(dist.p(tuple(out), sampling), generator))
    return tuple(out)


# --- the exact distribution, as chi-square cells ----------------------------------------------------

@dataclass
class Cells:
    """Outcomes grouped for the test: one cell per outcome expected >= MIN_EXPECTED times, the rest
    pooled. `keys[i]` is an outcome, or a pooled key such as (y1, OTHER) or (OTHER,) / (OTHER, OTHER)."""
    keys: list[tuple]
    probs: np.ndarray  # exact probability of each cell (sums to 1)
    index: dict[tuple, int]  # outcome or pooled key -> cell
    n_tokens: int

    def cell_of(self, outcome: Outcome) -> int:
        if outcome in self.index:
            return self.index[outcome]
        if self.n_tokens == 2 and (outcome[0], OTHER) in self.index:
            return self.index[(outcome[0], OTHER)]
        return self.index[(OTHER,) * self.n_tokens]


def exact_cells(dist: Distributions, n_tokens: int, sampling: SamplingConfig, k: int) -> Cells:
    """The target's exact distribution of the next n_tokens (1 or 2), grouped into chi-square cells
    for k samples. Two tokens: P(y1, y2) = p(y1) p(y2 | y1), enumerated for every first token
    expected at least MIN_EXPECTED times (one target pass each); other first tokens form one cell."""
    p1 = dist.p((), sampling).double()
    heads = [int(y) for y in torch.nonzero(p1 * k >= MIN_EXPECTED).flatten()]
    keyed: list[tuple[tuple, float]] = []
    pooled: list[tuple[tuple, float]] = []
    if n_tokens == 1:
        keyed = [((y,), float(p1[y])) for y in heads]
        pooled.append(((OTHER,), float(p1.sum()) - sum(pr for _, pr in keyed)))
    else:
        for y1 in heads:
            joint = p1[y1] * dist.p((y1,), sampling).double()  # (V,)
            big = [int(y) for y in torch.nonzero(joint * k >= MIN_EXPECTED).flatten()]
            keyed += [((y1, y2), float(joint[y2])) for y2 in big]
            pooled.append(((y1, OTHER), float(p1[y1]) - sum(float(joint[y2]) for y2 in big)))
        pooled.append(((OTHER, OTHER), float(p1.sum()) - sum(float(p1[y]) for y in heads)))
    # Pooled remainders big enough keep their own cell; the small ones share one.
    index, keys, probs = {}, [], []
    for key, pr in keyed + [kp for kp in pooled if kp[1] * k >= MIN_EXPECTED]:
        index[key] = len(keys)
        keys.append(key)
        probs.append(pr)
    rest_key = (OTHER,) * n_tokens
    if rest_key not in index:
        index[rest_key] = len(keys)
        keys.append(rest_key)
        probs.append(0.0)
    rest = index[rest_key]
    for key, pr in pooled:
        if key not in index:
            index[key] = rest
            probs[rest] += max(pr, 0.0)
    probs = np.clip(np.array(probs), 0.0, None)
    return Cells(keys, probs / probs.sum(), index, n_tokens)


def is_possible(dist: Distributions, outcome: Outcome, sampling: SamplingConfig) -> bool:
    """Whether the target gives the outcome a probability above zero (top-k / top-p cut the rest)."""
    if sampling.top_k is None and sampling.top_p is None:
        return True  # a softmax at a finite temperature is positive everywhere
    return all(float(dist.p(outcome[:i], sampling)[y]) > 0 for i, y in enumerate(outcome))


@dataclass
class ChiSquare:
    statistic: float
    df: int
    pvalue: float
    impossible: int  # samples the target gives probability zero (any one of them rejects at once)

    @property
    def passes(self) -> bool:
        """Consistent with the target distribution at the lab's level."""
        return self.pvalue >= LEVEL


def chi_square(counts: np.ndarray, cells: Cells, impossible: int = 0) -> ChiSquare:
    """Pearson's chi-square goodness of fit of cell counts to the exact cell probabilities."""
    if impossible:
        return ChiSquare(math.inf, len(cells.keys) - 1, 0.0, impossible)
    keep = cells.probs > 0
    if keep.sum() < 2:  # one cell holds everything: nothing to test
        return ChiSquare(0.0, 0, 1.0, 0)
    f_obs = counts[keep].astype(float)
    f_exp = cells.probs[keep] * f_obs.sum() / cells.probs[keep].sum()
    result = stats.chisquare(f_obs, f_exp)
    return ChiSquare(float(result.statistic), int(keep.sum()) - 1, float(result.pvalue), 0)


# --- one lab run -----------------------------------------------------------------------------------

@dataclass
class LabResult:
    rule: str
    k: int
    n_tokens: int
    gamma: int
    seed: int
    cells: Cells
    speculative: np.ndarray  # counts per cell
    plain: np.ndarray | None
    speculative_test: ChiSquare
    plain_test: ChiSquare | None
    seconds: float
    passes: int  # forward passes the run needed (distinct contexts)
    examples: dict[tuple, Outcome] = field(default_factory=dict)  # cell key -> one outcome seen in it

    def top_cells(self, n: int = 12) -> list[int]:
        """Indices of the n most likely cells (pooled cells last), for a readable histogram."""
        order = sorted(range(len(self.cells.keys)), key=lambda i: (OTHER in self.cells.keys[i], -self.cells.probs[i]))
        return order[:n]


def check_lab_inputs(dist_window: int, prefix_len: int, n_tokens: int, k: int, gamma: int,
                     sampling: SamplingConfig) -> None:
    if n_tokens not in (1, 2):
        raise ValueError(f"the lab tests the next 1 or 2 tokens, got {n_tokens}")
    if isinstance(k, bool) or not isinstance(k, int) or not MIN_K <= k <= MAX_K:
        raise ValueError(f"K must be an integer in [{MIN_K}, {MAX_K}], got {k!r}")
    if isinstance(gamma, bool) or not isinstance(gamma, int) or not 1 <= gamma <= 32:
        raise ValueError(f"gamma must be an integer in [1, 32], got {gamma!r}")
    if sampling.greedy:
        raise ValueError("the sampling lab needs a temperature above 0 (greedy output is compared token by token)")
    if prefix_len + n_tokens + 1 > dist_window:
        raise ValueError(f"the prefix ({prefix_len} tokens) leaves no room for {n_tokens + 1} more tokens "
                         f"in the context window of {dist_window}")


def run_lab(target, draft, prefix_ids: list[int], *, n_tokens: int = 1, k: int = 2000, gamma: int = 4,
            sampling: SamplingConfig = SamplingConfig(), rule: Rule | TreeRule = EXACT, seed: int = 0,
            with_plain: bool = True, pacing: Pacing = Pacing(),
            dist: Distributions | None = None, shape: tuple[int, ...] | None = None,
            node_budget: int | None = None) -> LabResult:
    """K speculative samples (sample i seeded with seed + i) of the next n_tokens after the prefix,
    judged with `rule`, and K plain samples, each tested against the exact distribution. Pass `dist`
    to reuse distributions already computed for the same models and prefix. With a tree `shape`
    (and optionally `node_budget`) the samples come from token trees, `rule` a TreeRule (EXACT
    stands for EXACT_TREE), and gamma is ignored. `pacing`'s progress is told as the samples are drawn
    (the K samples are one piece of work: its slot is the caller's to hold)."""
    start = time.perf_counter()
    dist = dist or Distributions(target, draft, prefix_ids)
    if shape is not None:
        shape, node_budget, gamma = check_shape(shape), check_node_budget(node_budget), len(check_shape(shape))
        rule = EXACT_TREE if rule is EXACT else rule
        if not isinstance(rule, TreeRule):
            raise ValueError(f"rule must be a TreeRule for token trees, got {rule.name!r}")
    check_lab_inputs(dist.window, len(dist.prefix), n_tokens, k, gamma, sampling)
    make_generator(seed)  # validates the seed
    if seed + 2 * k >= 2**63:
        raise ValueError("seed too large for K consecutive seeds")
    report = pacing.report
    report(0.0, "Computing the exact distribution…")
    cells = exact_cells(dist, n_tokens, sampling, k)
    examples: dict[tuple, Outcome] = {}

    def draw(label: str, one, offset: float, share: float) -> tuple[np.ndarray, int]:
        counts, impossible = np.zeros(len(cells.keys), dtype=np.int64), 0
        every = max(1, k // 50)
        for i in range(k):
            outcome = one(torch.Generator().manual_seed(seed + i))
            if not is_possible(dist, outcome, sampling):
                impossible += 1
                continue
            cell = cells.cell_of(outcome)
            counts[cell] += 1
            examples.setdefault(cells.keys[cell], outcome)
            if (i + 1) % every == 0:
                report(offset + share * (i + 1) / k, f"{label}: {i + 1} of {k} samples")
        return counts, impossible

    share = 0.5 if with_plain else 1.0
    if shape is None:
        one = lambda g: speculative_sample(dist, n_tokens, gamma, sampling, g, rule)  # noqa: E731
    else:
        one = lambda g: tree_sample(dist, n_tokens, shape, sampling, g, rule, node_budget)  # noqa: E731
    spec, spec_bad = draw(f"Speculative ({rule.name})", one, 0.0, share)
    plain = plain_test = None
    if with_plain:
        plain, plain_bad = draw("Plain sampling", lambda g: plain_sample(dist, n_tokens, sampling, g), 0.5, 0.5)
        plain_test = chi_square(plain, cells, plain_bad)
    report(1.0, "Done")
    return LabResult(rule.name, k, n_tokens, gamma, seed, cells, spec, plain, chi_square(spec, cells, spec_bad),
                     plain_test, time.perf_counter() - start, dist.passes, examples)


# --- greedy: token for token -----------------------------------------------------------------------

def token_diff(a: list[int], b: list[int], a_name: str = "standard", b_name: str = "speculative") -> list[str]:
    """A unified diff of two token-id sequences, one id per line: empty when they are identical."""
    return list(difflib.unified_diff([str(t) for t in a], [str(t) for t in b], a_name, b_name, lineterm=""))


def first_difference(a: list[int], b: list[int]) -> int | None:
    """Index of the first position where two sequences differ (or where one ends), None if identical."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))
