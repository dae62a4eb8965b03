"""Statistical exactness of whole generations: speculative samples of a 3-token continuation follow
the target's exact (enumerated) distribution, and a deliberately broken rule fails the same test."""

import numpy as np
import pytest
import torch
from scipy import stats

from specdec_core import NgramDrafter, SamplingConfig, speculative_generate
from specdec_core.broken import BROKEN_Q_OTHER_TEMPERATURE, BROKEN_RESAMPLE_FROM_P
from specdec_core.sampling import to_probs

pytestmark = pytest.mark.slow  # tens of thousands of whole generations per test

PROMPT = [1, 2, 3, 1, 2]
LENGTH = 3  # tokens per sample: with gamma = 2 a round can accept, reject, or earn a bonus
N_SAMPLES = 20_000


@torch.inference_mode()
def exact_distribution(target, sampling: SamplingConfig) -> dict[tuple, float]:
    """P(y_1..y_LENGTH | PROMPT) under the transformed target distribution, by enumeration."""
    vocab = target.config.vocab_size
    probs = {(): 1.0}
    for _ in range(LENGTH):
        nxt = {}
        for prefix, mass in probs.items():
            if mass == 0:
                continue
            logits = target(torch.tensor([PROMPT + list(prefix)])).logits[0, -1].double()
            p = to_probs(logits, sampling).double()
            for y in range(vocab):
                nxt[prefix + (y,)] = mass * float(p[y])
        probs = nxt
    return probs


def chi_square_pvalue(samples: list[tuple], exact: dict[tuple, float]) -> float:
    """Chi-square goodness of fit, pooling outcomes expected fewer than 5 times into one cell."""
    counts = {}
    for s in samples:
        counts[s] = counts.get(s, 0) + 1
    impossible = sum(c for s, c in counts.items() if exact.get(s, 0) == 0)
    if impossible:
        return 0.0  # an outcome of probability zero: certainly not the target distribution
    n = len(samples)
    big = [s for s, pr in exact.items() if pr * n >= 5]
    small = [s for s, pr in exact.items() if 0 < pr * n < 5]
    obs = [counts.get(s, 0) for s in big] + [sum(counts.get(s, 0) for s in small)]
    exp = [exact[s] * n for s in big] + [sum(exact[s] for s in small) * n]
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    exp = np.array(exp) * (sum(obs) / sum(exp))  # remove float rounding of the total
    return float(stats.chisquare(obs, exp).pvalue)


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
    p_value = chi_square_pvalue(draw(target, draft, sampling), exact_distribution(target, sampling))
    assert p_value > 1e-3, f"{name}: chi-square p = {p_value:.2e}"


def test_ngram_drafter_samples_follow_target(tiny_pair):
    target, _ = tiny_pair
    sampling = SamplingConfig(1.0)
    p_value = chi_square_pvalue(draw(target, NgramDrafter(), sampling), exact_distribution(target, sampling))
    assert p_value > 1e-3, f"n-gram drafter: chi-square p = {p_value:.2e}"


@pytest.mark.parametrize("rule", [BROKEN_RESAMPLE_FROM_P, BROKEN_Q_OTHER_TEMPERATURE], ids=lambda r: r.name)
def test_broken_rule_fails_the_same_test(tiny_pair, rule):
    """The test has power: a sampler with a classic bug is caught at the same sample size."""
    target, draft = tiny_pair
    sampling = SamplingConfig(1.0)
    p_value = chi_square_pvalue(draw(target, draft, sampling, rule), exact_distribution(target, sampling))
    assert p_value < 1e-6, f"{rule.name} passed the test (p = {p_value:.2e})"
