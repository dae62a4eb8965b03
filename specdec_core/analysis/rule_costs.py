"""What an acceptance rule buys and what it costs, beside the exactness lab's chi-square verdict.

Buys: acceptance rate, tokens per target pass and speedup over plain sampling, measured with real
generations (`speculative_generate(..., rule=...)`), interleaved as every timing in the project.
Costs: its exact output distribution at the lab's prefix (for the next token), hence the power of
the lab's test against it at K samples: the chance the test notices. The exact-match rule costs
nothing in distribution and much in acceptance: sum p q instead of sum min(p, q).

`judge_rules` runs the lab's chi-square test for several rules on one prefix and the same samples'
seeds (the exact rule beside broken, lossy or tree rules), with each rule's power where it is computed.
"""
from dataclasses import dataclass

import numpy as np
import torch
from scipy import stats

from ..drafters import Proposal
from ..request import GenerationRequest
from ..sampling_config import SamplingConfig, to_probs
from ..speculative import Rule, autoregressive_generate, speculative_generate
from .fidelity import interleaved_runs, rule_output_distribution, speedup
from .lab import LEVEL, Cells, ChiSquare, Distributions, LabResult, run_lab
from .stats import Pacing

PLAIN = "plain sampling"


# --- what a rule costs and buys ------------------------------------------------------------------

def rule_cell_probs(dist: Distributions, rule: Rule, cells: Cells, sampling: SamplingConfig) -> np.ndarray:
    """Exact probability of each cell under `rule` for the next token (n_tokens = 1: one draft is
    judged, so the first token comes out of one accept/resample step, `fidelity.rule_output_distribution`)."""
    if cells.n_tokens != 1:
        raise ValueError("a rule's exact distribution is computed for the next token only (n_tokens = 1)")
    p = dist.p((), sampling).double()
    logits = dist.logits("draft", ())
    proposal = Proposal([0], to_probs(logits, sampling)[None], logits[None])
    q = rule.verification_q(proposal, sampling)[0].double()
    out = rule_output_distribution(rule, p, q, sampling, dist.logits("target", ()).double())
    probs = np.zeros(len(cells.keys))
    for y, pr in enumerate(out.tolist()):
        probs[cells.cell_of((y,))] += pr
    return probs


def power(cells: Cells, probs: np.ndarray, k: int) -> float:
    """Chance that K samples from the cell distribution `probs` fail the chi-square test at LEVEL
    (Pearson's statistic is then noncentral chi-square with K sum (probs - p)^2 / p as noncentrality).
    For an exact rule it is LEVEL itself: how often the test wrongly rejects a correct sampler."""
    keep = cells.probs > 0
    df = int(keep.sum()) - 1
    if df < 1:
        return 0.0
    noncentrality = k * float((((probs[keep] - cells.probs[keep]) ** 2) / cells.probs[keep]).sum())
    critical = stats.chi2.ppf(1 - LEVEL, df)
    return float(stats.ncx2.sf(critical, df, noncentrality)) if noncentrality > 1e-12 else LEVEL


def acceptance_figures(dist: Distributions, sampling: SamplingConfig) -> dict:
    """At the prefix's next token: the exact rule's acceptance sum min(p, q) and the exact-match
    rule's sum p q (the chance that y ~ p equals x ~ q)."""
    p, q = dist.p((), sampling).double(), dist.probs("draft", (), sampling).double()
    return {"exact": float(torch.minimum(p, q).sum()), "exact_match": float((p * q).sum())}


def rule_economics(target, draft, rules: list[Rule], prompts: list[list[int]], request: GenerationRequest, *,
                   gamma: int = 4, repeats: int = 3, pacing: Pacing = Pacing()) -> list[dict]:
    """For each rule, on `prompts` (each asked for `request` at its fixed length, every prompt with the
    request's seed): measured acceptance rate (accepted / drafted), tokens per target pass, and speedup
    over plain sampling (median and range of repetition-by-repetition ratios, interleaved runs, the
    pacing's slot taken around each run)."""
    if request.sampling.greedy:
        raise ValueError("sampling must have a temperature above 0: the rules differ in how they use chance")
    request = request.fixed_length()
    plain = lambda ids: autoregressive_generate(target, request.for_prompt(ids))
    spec = lambda rule: lambda ids: speculative_generate(target, draft, request.for_prompt(ids), gamma=gamma,
                                                         trace=False, rule=rule)
    runs = interleaved_runs({PLAIN: plain, **{rule.name: spec(rule) for rule in rules}}, prompts, repeats,
                            pacing=pacing)
    rows = []
    for rule in rules:
        results = runs[rule.name].results
        drafted, accepted = sum(r.drafted for r in results), sum(r.accepted for r in results)
        tokens, passes = sum(len(r.tokens) for r in results), sum(r.target_passes for r in results)
        rows.append({"rule": rule.name, "acceptance": accepted / drafted if drafted else None,
                     "tokens_per_pass": tokens / passes, "speed": speedup(runs[PLAIN], runs[rule.name])})
    return rows


# --- every rule on one prefix --------------------------------------------------------------------

@dataclass
class RuleVerdict:
    rule: str
    result: LabResult  # the rule's K samples and their chi-square test
    power: float | None  # chance that K samples catch the rule (next token only), None if not computed

    @property
    def test(self) -> ChiSquare:
        return self.result.speculative_test


@dataclass
class PrefixVerdicts:
    verdicts: dict[str, RuleVerdict]  # rule name -> its verdict, in the order the rules were given
    acceptance: dict  # `acceptance_figures` at the prefix: sum min(p, q) and sum p q


def judge_rules(target, draft, prefix_ids: list[int], rules: list, *, n_tokens: int, k: int, sampling: SamplingConfig,
                seed: int, gamma: int = 4, shape: tuple[int, ...] | None = None, with_power: bool = False,
                pacing: Pacing = Pacing()) -> PrefixVerdicts:
    """The lab's test (`lab.run_lab`, speculative samples only) for every rule on the same prefix, K and
    seeds, from one set of distributions; with `shape`, token-tree rules on trees of that shape. With
    `with_power` (and n_tokens = 1) each rule's power at K too. Each rule runs inside its own
    pacing slot; the pacing's progress is reported across the rules."""
    with pacing.slot():
        dist = Distributions(target, draft, prefix_ids)
    verdicts = {}
    for i, rule in enumerate(rules):
        with pacing.slot():
            res = run_lab(target, draft, prefix_ids, n_tokens=n_tokens, k=k, gamma=gamma, sampling=sampling, rule=rule,
                          seed=seed, with_plain=False, dist=dist, shape=shape,
                          pacing=pacing.part(i / len(rules), (i + 1) / len(rules)))
            power_ = (power(res.cells, rule_cell_probs(dist, rule, res.cells, sampling), res.k)
                      if with_power and n_tokens == 1 else None)
        verdicts[rule.name] = RuleVerdict(rule.name, res, power_)
    return PrefixVerdicts(verdicts, acceptance_figures(dist, sampling))
