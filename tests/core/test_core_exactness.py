"""Statistical exactness of whole generations: speculative samples of a 3-token continuation follow
the target's exact (enumerated) distribution, and a deliberately broken rule fails the same test."""

import pytest

from specdec_core import NgramDrafter, SamplingConfig, speculative_generate
from specdec_core.broken import BROKEN_Q_OTHER_TEMPERATURE, BROKEN_RESAMPLE_FROM_P
from tests.core.exactness import chi_square_pvalue, exact_distribution

pytestmark = pytest.mark.slow  # 16,000 whole generations per test

PROMPT = [1, 2, 3, 1, 2]
LENGTH = 3  # tokens per sample: with gamma = 2 a round can accept, reject, or earn a bonus
# Sized by the subtler of the two broken controls (resample from p), under the Pearson test's
# noncentral chi-square: a wrong rule's statistic is ~ chi2'(df, lam = n * w2), w2 = sum (p1 - p0)^2 / p0.
# Measured on fresh-seed draws of that control, w2 = (X2 - df) / n: 0.0071 (n = 20,000), then 0.0066, 0.0080,
# 0.0042, 0.0066, 0.0088 (n = 15,000 each): mean 0.0069. The broken test's bar p < 1e-6 is X2 > 65.4 (df = 20).
# n = 16,000: lam = 110 and power P(chi2'(20, 110) > 65.4) = 0.9997 (0.999 needs ~15,000). The five fresh-seed
# runs at 15,000 all failed (p from 2e-22 to 1e-9). The q-at-another-temperature bug (w2 = 0.024) is missed with
# probability < 1e-30. The honest samplers' false alarm is their bar, p <= 1e-3, at any n (the seeds are fixed).
# Was 20,000.
N_SAMPLES = 16_000


def draw(target, drafter, sampling, rule=None, n=N_SAMPLES, seed0=0):
    kwargs = {} if rule is None else {"rule": rule}
    return [tuple(speculative_generate(target, drafter, PROMPT, gamma=2, max_new_tokens=LENGTH,
                                       sampling=sampling, seed=seed0 + i, trace=False, **kwargs).tokens)
            for i in range(n)]


CONFIGS = {
    "temperature 1": SamplingConfig(1.0),
    "temperature 0.7, top-k 4": SamplingConfig(0.7, top_k=4),
    "temperature 1.3, top-p 0.8": SamplingConfig(1.3, top_p=0.8),
}


@pytest.mark.parametrize("name", CONFIGS)
def test_speculative_samples_follow_target(tiny_pair, name):
    target, draft = tiny_pair
    sampling = CONFIGS[name]
    p_value = chi_square_pvalue(draw(target, draft, sampling), exact_distribution(target, PROMPT, LENGTH, sampling))
    assert p_value > 1e-3, f"{name}: chi-square p = {p_value:.2e}"


def test_ngram_drafter_samples_follow_target(tiny_pair):
    target, _ = tiny_pair
    sampling = SamplingConfig(1.0)
    p_value = chi_square_pvalue(draw(target, NgramDrafter(), sampling), exact_distribution(target, PROMPT, LENGTH, sampling))
    assert p_value > 1e-3, f"n-gram drafter: chi-square p = {p_value:.2e}"


@pytest.mark.parametrize("rule", [BROKEN_RESAMPLE_FROM_P, BROKEN_Q_OTHER_TEMPERATURE], ids=lambda r: r.name)
def test_broken_rule_fails_the_same_test(tiny_pair, rule):
    """The test has power: a sampler with a classic bug is caught at the same sample size."""
    target, draft = tiny_pair
    sampling = SamplingConfig(1.0)
    p_value = chi_square_pvalue(draw(target, draft, sampling, rule), exact_distribution(target, PROMPT, LENGTH, sampling))
    assert p_value < 1e-6, f"{rule.name} passed the test (p = {p_value:.2e})"
