"""The exactness lab (analysis.lab): exact enumeration, replay, chi-square, the documented run."""
import numpy as np
import pytest
import torch

from specdec_core import autoregressive_generate, speculative_generate
from specdec_core.analysis import lab
from specdec_core.broken import BROKEN_RULES
from specdec_core.sampling_config import GREEDY, SamplingConfig
from specdec_core.speculative import EXACT


@pytest.mark.parametrize("n_tokens", [1, 2])
@pytest.mark.parametrize("sampling", [SamplingConfig(1.0), SamplingConfig(0.8, top_k=20)], ids=["t1", "t0.8-k20"])
def test_lab_replay_gives_the_generators_tokens(pair, prompt_ids, n_tokens, sampling):
    """The lab's fast replay draws what speculative_generate / autoregressive_generate draw for the same seed."""
    dist = lab.Distributions(pair.target, pair.draft, prompt_ids)
    spec_same = plain_same = 0
    for seed in range(12):
        replay = lab.speculative_sample(dist, n_tokens, 3, sampling, torch.Generator().manual_seed(seed))
        real = speculative_generate(pair.target, pair.draft, prompt_ids, gamma=3, max_new_tokens=n_tokens + 1,
                                    sampling=sampling, seed=seed, eos_token_id=None, trace=False).tokens[:n_tokens]
        spec_same += replay == tuple(real)
        replay = lab.plain_sample(dist, n_tokens, sampling, torch.Generator().manual_seed(seed))
        real = autoregressive_generate(pair.target, prompt_ids, n_tokens, sampling, seed=seed, eos_token_id=None).tokens
        plain_same += replay == tuple(real)
    assert spec_same >= 11 and plain_same >= 11  # a cached vs uncached pass may differ in the last bits


def test_lab_cells_are_a_partition_of_the_exact_distribution(pair, prompt_ids):
    dist = lab.Distributions(pair.target, pair.draft, prompt_ids)
    for n_tokens in (1, 2):
        cells = lab.exact_cells(dist, n_tokens, SamplingConfig(1.0), 2000)
        assert cells.probs.sum() == pytest.approx(1.0) and (cells.probs >= 0).all()
        assert all(p * 2000 >= lab.MIN_EXPECTED for key, p in zip(cells.keys, cells.probs) if lab.OTHER not in key)
        outcome = (int(dist.p((), SamplingConfig(1.0)).argmax()),) * n_tokens
        assert 0 <= cells.cell_of(outcome) < len(cells.keys)


def test_lab_rejects_bad_inputs(pair, prompt_ids):
    with pytest.raises(ValueError, match="K must be"):
        lab.run_lab(pair.target, pair.draft, prompt_ids, k=lab.MAX_K + 1)
    with pytest.raises(ValueError, match="temperature"):
        lab.run_lab(pair.target, pair.draft, prompt_ids, k=200, sampling=GREEDY)
    with pytest.raises(ValueError, match="1 or 2"):
        lab.run_lab(pair.target, pair.draft, prompt_ids, k=200, n_tokens=3)
    with pytest.raises(ValueError, match="empty"):
        lab.Distributions(pair.target, pair.draft, [])


def test_chi_square_catches_impossible_outcomes_and_skewed_counts():
    cells = lab.Cells([(0,), (1,), (lab.OTHER,)], np.array([0.5, 0.5, 0.0]), {(0,): 0, (1,): 1, (lab.OTHER,): 2}, 1)
    assert lab.chi_square(np.array([500, 500, 0]), cells).passes
    assert not lab.chi_square(np.array([600, 400, 0]), cells).passes
    assert lab.chi_square(np.array([500, 499, 0]), cells, impossible=1).pvalue == 0.0


def test_lab_exact_rule_passes_at_the_documented_sample_size(documented_runs):
    res = documented_runs[EXACT.name]
    assert res.k == lab.DOCUMENTED_K <= lab.MAX_K
    assert res.speculative_test.df >= 2, "the documented prefix must give the test something to test"
    assert res.speculative_test.passes, res.speculative_test
    assert res.plain_test.passes, res.plain_test


@pytest.mark.parametrize("rule", BROKEN_RULES, ids=lambda r: r.name)
def test_lab_broken_rule_fails_at_the_documented_sample_size(documented_runs, rule):
    res = documented_runs[rule.name]
    assert not res.speculative_test.passes, f"{rule.name} passed (p = {res.speculative_test.pvalue:.3g})"
