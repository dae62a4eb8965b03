"""The rules that are lossy on purpose, and the exact-match rule that is exact but wasteful.

Each lossy rule: accepts what it says (whole rows: entropy, ranking), also at temperature 0, and its
output is NOT the target's distribution, analytically and by the chi-square test (tiny pair, and the
lab's documented run on the bundled pair, with the test's power). The exact-match rule: its output
IS p, it passes the same tests, and it accepts sum p q instead of sum min(p, q)."""
import copy

import pytest
import torch

from specdec_core import GREEDY, SamplingConfig, autoregressive_generate, lossy, speculative_generate
from specdec_core.analysis import lab, rule_costs
from specdec_core.analysis.fidelity import rule_output_distribution, speculative_output, tv_distance
from specdec_core.exact_match import EXACT_MATCH
from specdec_core.pairs import load_pair
from specdec_core.speculative import EXACT, Rows, Rule, verify
from tests.conftest import tiny_gpt2
from tests.core.exactness import chi_square_pvalue, exact_distribution
from tests.core.test_core_exactness import LENGTH, PROMPT, draw
from tests.core.test_core_greedy import prompts
from tests.core.test_core_rule import KINDS, random_pair

LOSSY = list(lossy.RULES.values())
N = 4000  # whole generations per chi-square test on the tiny pair (the lossy rules fail far below it)


@pytest.fixture(scope="module")
def sharp_pair():
    """(target, draft) on a vocabulary of 8: a flat target, and as drafter the same network with its
    logits doubled (final layer norm scaled), so q over-rates the target's top tokens: the case where
    the exact rule rejects drafts the lossy rules keep."""
    target = tiny_gpt2(0, n_layer=2, n_embd=16, spread=0.3, memoized=True)
    draft = copy.deepcopy(target)
    draft._memo = {}
    with torch.no_grad():
        draft.transformer.ln_f.weight.mul_(2.0)
    return target, draft


def rows_of(p: torch.Tensor, q: torch.Tensor, drafts: list[int], sampling=SamplingConfig(), logits=None) -> Rows:
    return Rows(p, q, torch.tensor(drafts), sampling, logits)


# --- the public API ---------------------------------------------------------------------------------

def test_rules_maps_each_lossy_rule_name_to_a_rule():
    assert set(lossy.RULES) == {"typical acceptance", "relaxed acceptance"}
    for name, rule in lossy.RULES.items():
        assert isinstance(rule, Rule) and rule.name == name
    assert EXACT_MATCH not in lossy.RULES.values() and EXACT not in lossy.RULES.values()


@pytest.mark.parametrize("rule", LOSSY + [EXACT_MATCH], ids=lambda r: r.name)
def test_rule_is_usable_in_speculative_generate(small_pair, rule):
    target, draft = small_pair
    for sampling in (SamplingConfig(1.0), GREEDY):
        res = speculative_generate(target, draft, [1, 2, 3], gamma=3, max_new_tokens=12, sampling=sampling,
                                   seed=0, rule=rule)
        assert len(res.tokens) == 12


def test_bad_parameters_are_refused_by_name():
    with pytest.raises(ValueError, match="top_k"):
        lossy.relaxed_acceptance(top_k=0)
    with pytest.raises(ValueError, match="epsilon"):
        lossy.typical_acceptance(epsilon=0)


# --- what each rule accepts ------------------------------------------------------------------------

def test_typical_acceptance_thresholds_on_entropy_and_ignores_q():
    p = torch.tensor([[0.5, 0.3, 0.15, 0.05]], dtype=torch.float64)
    h = float(lossy.entropy(p[0]))
    threshold = min(lossy.TYPICAL_EPSILON, lossy.TYPICAL_DELTA * torch.exp(torch.tensor(-h)).item())
    for x in range(4):
        for q in (torch.tensor([[0.25] * 4], dtype=torch.float64), torch.tensor([[0.0, 0.0, 0.0, 1.0]], dtype=torch.float64)):
            a = float(lossy.TYPICAL.acceptance_probability(rows_of(p, q, [x]))[0])
            assert a == (1.0 if float(p[0, x]) > threshold else 0.0)
    # After a rejection, Medusa's draw: p without the tokens under the threshold, renormalised.
    fallback = lossy.TYPICAL.residual(rows_of(p, p, [3]), 0)
    kept = torch.where(p[0] < threshold, torch.zeros_like(p[0]), p[0])
    assert torch.allclose(fallback, kept / kept.sum())
    assert float(fallback[3]) == 0.0 and float(p[0, 3]) <= threshold  # the rejected draft cannot come straight back


def test_typical_fallback_never_re_emits_a_rejected_draft():
    """Any row, any rejected draft: the fallback gives it no mass, and keeps the target's top token."""
    g = torch.Generator().manual_seed(3)
    for _ in range(200):
        p = torch.softmax(torch.randn(1, 12, generator=g, dtype=torch.float64) * 3, -1)
        for x in range(12):
            rows = rows_of(p, p, [x])
            if float(lossy.TYPICAL.acceptance_probability(rows)[0]) == 0.0:
                fallback = lossy.TYPICAL.residual(rows, 0)
                assert float(fallback[x]) == 0.0 and float(fallback[int(p[0].argmax())]) > 0


def test_relaxed_acceptance_keeps_top_k_or_near_top_else_exact():
    rule = lossy.relaxed_acceptance(top_k=2, delta=0.1)
    p = torch.tensor([[0.4, 0.32, 0.2, 0.08]], dtype=torch.float64)
    q = torch.tensor([[0.1, 0.6, 0.05, 0.25]], dtype=torch.float64)
    got = [float(rule.acceptance_probability(rows_of(p, q, [x]))[0]) for x in range(4)]
    assert got[:2] == [1.0, 1.0]  # top 2 of the target, even where q over-rates it (exact: 0.32/0.6)
    assert got[2] == 1.0  # exact would give min(1, 0.2/0.05) = 1 anyway
    assert got[3] == pytest.approx(0.08 / 0.25)  # neither in the top 2 nor within 0.1 of 0.4: the exact rule
    near = lossy.relaxed_acceptance(top_k=1, delta=0.25)
    assert float(near.acceptance_probability(rows_of(p, q, [2]))[0]) == 1.0  # 0.2 >= 0.4 - 0.25


def test_relaxed_rule_applies_at_temperature_zero():
    """Greedy: p and q are one-hot, so the rule ranks the target's raw logits; verify no longer bypasses it."""
    logits = torch.tensor([[2.0, 1.9, -3.0, -4.0], [0.0, 0.0, 0.0, 0.0]])
    p = torch.zeros(2, 4)
    p[0, 0] = p[1, 0] = 1.0  # one-hot on the argmax (row 1: the bonus row)
    q = torch.zeros(1, 4)
    q[0, 1] = 1.0  # the drafter's argmax is the target's second choice
    g = torch.Generator().manual_seed(0)
    relaxed = verify(p, q, [1], GREEDY, g, lossy.RELAXED, logits)
    exact = verify(p, q, [1], GREEDY, g, EXACT, logits)
    assert (relaxed.n_accepted, exact.n_accepted) == (1, 0)
    assert exact.next_token == 0 and exact.next_kind == "corrective"
    with pytest.raises(ValueError, match="logits"):
        verify(p, q, [1], GREEDY, g, lossy.RELAXED)


def test_relaxed_rule_changes_greedy_output_the_others_do_not(small_pair):
    target, draft = small_pair
    changed = 0
    for prompt in prompts(6):
        plain = autoregressive_generate(target, prompt, max_new_tokens=30, sampling=GREEDY).tokens
        for rule in (EXACT, EXACT_MATCH, lossy.TYPICAL):  # one-hot p: typical acceptance is greedy matching
            assert speculative_generate(target, draft, prompt, gamma=3, max_new_tokens=30, sampling=GREEDY,
                                        rule=rule).tokens == plain, rule.name
        changed += speculative_generate(target, draft, prompt, gamma=3, max_new_tokens=30, sampling=GREEDY,
                                        rule=lossy.RELAXED).tokens != plain
    assert changed >= 1, "the relaxed rule never accepted a second choice: the test shows nothing"


# --- output distributions, analytically ------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_exact_and_exact_match_rules_output_p_at_distance_zero(kind):
    g = torch.Generator().manual_seed(11 + KINDS.index(kind))
    for _ in range(50):
        p, q = random_pair(kind, g)
        for rule in (EXACT, EXACT_MATCH):
            assert float(tv_distance(rule_output_distribution(rule, p, q), p)) < 1e-12, rule.name
        assert float(tv_distance(speculative_output(p, q), p)) < 1e-12


@pytest.mark.parametrize("rule", LOSSY, ids=lambda r: r.name)
def test_lossy_rule_output_is_not_p(rule):
    g = torch.Generator().manual_seed(5)
    worst = max(float(tv_distance(rule_output_distribution(rule, p, q), p))
                for p, q in (random_pair("general", g) for _ in range(50)))
    assert worst > 1e-2


def test_exact_match_accepts_sum_pq_less_than_sum_min():
    g = torch.Generator().manual_seed(3)
    for _ in range(50):
        p, q = random_pair("general", g)
        rows = rows_of(p.expand(12, 12), q.expand(12, 12), list(range(12)))
        match = float((q * EXACT_MATCH.acceptance_probability(rows)).sum())
        exact = float((q * EXACT.acceptance_probability(rows)).sum())
        assert match == pytest.approx(float((p * q).sum()))
        assert exact == pytest.approx(float(torch.minimum(p, q).sum()))
        assert match < exact


# --- the chi-square test: whole generations on the tiny pair ---------------------------------------

@pytest.mark.parametrize("rule", [EXACT, EXACT_MATCH], ids=lambda r: r.name)
def test_exact_rules_pass_the_chi_square_test(sharp_pair, rule):
    target, draft = sharp_pair
    sampling = SamplingConfig(1.0)
    exact = exact_distribution(target, PROMPT, LENGTH, sampling)
    assert chi_square_pvalue(draw(target, draft, sampling, rule, n=N), exact) > 1e-3


def test_exact_match_accepts_less_and_the_lossy_rules_more(sharp_pair):
    target, draft = sharp_pair
    sampling = SamplingConfig(1.0)
    rate = lambda rule: sum(speculative_generate(target, draft, [1, 2, 3, 1, 2], gamma=2, max_new_tokens=3,
                                                 sampling=sampling, seed=i, trace=False, rule=rule).accepted
                            for i in range(500))
    assert rate(EXACT_MATCH) < 0.8 * rate(EXACT)
    for rule in LOSSY:
        assert rate(rule) > rate(EXACT), rule.name


@pytest.mark.parametrize("rule", LOSSY, ids=lambda r: r.name)
def test_lossy_rule_fails_the_chi_square_test(sharp_pair, rule):
    target, draft = sharp_pair
    sampling = SamplingConfig(1.0)
    p_value = chi_square_pvalue(draw(target, draft, sampling, rule, n=N), exact_distribution(target, PROMPT, LENGTH, sampling))
    assert p_value < 1e-6, f"{rule.name} passed the test (p = {p_value:.2e})"


# --- the lab's documented run on the bundled pair ---------------------------------------------------

@pytest.fixture(scope="module")
def documented():
    """Every shipped rule's verdict on the documented run, the way the page and the tool get it."""
    pair = load_pair("shakespeare")
    prefix = pair.tokenizer.encode(lab.DOCUMENTED_PROMPT)[:lab.DOCUMENTED_PREFIX_TOKENS]
    return rule_costs.judge_rules(pair.target, pair.draft, prefix, [EXACT, EXACT_MATCH, *LOSSY],
                                  n_tokens=lab.DOCUMENTED_N_TOKENS, k=lab.DOCUMENTED_K, sampling=lab.DOCUMENTED_SAMPLING,
                                  seed=lab.DOCUMENTED_SEED, gamma=lab.DOCUMENTED_GAMMA, with_power=True)


@pytest.mark.parametrize("rule", LOSSY, ids=lambda r: r.name)
def test_lossy_rule_fails_the_documented_run_with_high_power(documented, rule):
    verdict = documented.verdicts[rule.name]
    assert not verdict.test.passes, f"{rule.name} passed (p = {verdict.test.pvalue:.3g})"
    assert verdict.power > 0.99


@pytest.mark.parametrize("rule", [EXACT, EXACT_MATCH], ids=lambda r: r.name)
def test_exact_rules_pass_the_documented_run_where_power_is_the_level(documented, rule):
    verdict = documented.verdicts[rule.name]
    assert verdict.test.passes, verdict.test
    assert verdict.power == pytest.approx(lab.LEVEL, abs=1e-6)  # an exact rule is only "caught" by chance


def test_documented_acceptance_exact_match_below_exact(documented):
    figures = documented.acceptance
    assert 0 < figures["exact_match"] < figures["exact"] <= 1
