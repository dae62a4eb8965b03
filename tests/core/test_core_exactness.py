"""Statistical exactness of whole generations: speculative samples of a 3-token continuation follow
the target's exact (enumerated) distribution, and a deliberately broken rule fails the same test."""

import pytest

from specdec_core import NgramDrafter, SamplingConfig, speculative_generate
from specdec_core.broken import BROKEN_Q_OTHER_TEMPERATURE, BROKEN_RESAMPLE_FROM_P
from tests.core.exactness import chi_square_pvalue, exact_distribution

pytestmark = pytest.mark.slow  # tens of thousands of whole generations per test

PROMPT = [1, 2, 3, 1, 2]
LENGTH = 3  # tokens per sample: with gamma = 2 a round can accept, reject, or earn a bonus
N_SAMPLES = 20_000


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
