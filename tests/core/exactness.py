"""The statistical exactness check the generation tests share: a continuation's exact distribution by
enumeration, and Pearson's chi-square of samples against it."""
import numpy as np
import torch
from scipy import stats

from specdec_core.sampling_config import SamplingConfig, to_probs


@torch.inference_mode()
def exact_distribution(target, prompt: list[int], length: int, sampling: SamplingConfig) -> dict[tuple, float]:
    """P(y_1..y_length | prompt) under the transformed target distribution, by enumeration (small vocabularies)."""
    vocab = target.config.vocab_size
    probs = {(): 1.0}
    for _ in range(length):
        nxt = {}
        for prefix, mass in probs.items():
            if mass == 0:
                continue
            logits = target(torch.tensor([prompt + list(prefix)])).logits[0, -1].double()
            p = to_probs(logits, sampling).double()
            for y in range(vocab):
                nxt[prefix + (y,)] = mass * float(p[y])
        probs = nxt
    return probs


def chi_square_pvalue(samples: list[tuple], exact: dict[tuple, float]) -> float:
    """Chi-square goodness of fit, pooling outcomes expected fewer than 5 times into one cell; 0 when a
    sample has probability zero (certainly not the target distribution)."""
    counts = {}
    for s in samples:
        counts[s] = counts.get(s, 0) + 1
    if any(exact.get(s, 0) == 0 for s in counts):
        return 0.0
    n = len(samples)
    big = [s for s, pr in exact.items() if pr * n >= 5]
    small = [s for s, pr in exact.items() if 0 < pr * n < 5]
    obs = [counts.get(s, 0) for s in big] + [sum(counts.get(s, 0) for s in small)]
    exp = [exact[s] * n for s in big] + [sum(exact[s] for s in small) * n]
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    exp = np.array(exp) * (sum(obs) / sum(exp))  # remove float rounding of the total
    return float(stats.chisquare(obs, exp).pvalue)
