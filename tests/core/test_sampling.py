"""to_probs keeps exactly the tokens transformers' own logits warpers keep (temperature, top-k, top-p)."""
import pytest
import torch
from transformers.generation.logits_process import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

from specdec_core.sampling_config import SamplingConfig, to_probs


def transformers_probs(logits: torch.Tensor, cfg: SamplingConfig) -> torch.Tensor:
    scores = logits[None].float()
    warpers = [TemperatureLogitsWarper(cfg.temperature)]
    if cfg.top_k is not None:
        warpers.append(TopKLogitsWarper(cfg.top_k))
    if cfg.top_p is not None:
        warpers.append(TopPLogitsWarper(cfg.top_p))
    for w in warpers:
        scores = w(None, scores)
    return scores.softmax(-1)[0]


def test_top_p_boundary_matches_transformers():
    """Fifty equal logits, top_p 0.5: in float32 the 25 smallest sum to 0.49999999 <= 0.5, so
    transformers drops them and keeps 25; counting from the top would keep 26."""
    cfg = SamplingConfig(top_p=0.5)
    ours = to_probs(torch.zeros(50), cfg)
    assert int((ours > 0).sum()) == 25
    assert torch.equal(ours > 0, transformers_probs(torch.zeros(50), cfg) > 0)


@pytest.mark.parametrize("cfg", [SamplingConfig(1.0, top_p=0.9), SamplingConfig(0.7, top_p=0.5),
                                 SamplingConfig(1.3, top_k=20, top_p=0.8), SamplingConfig(1.0, top_k=5),
                                 SamplingConfig(0.5, top_p=0.95)])
def test_random_rows_keep_the_same_tokens_as_transformers(cfg):
    g = torch.Generator().manual_seed(0)
    rows = torch.randn(2000, 64, generator=g) * torch.rand(2000, 1, generator=g) * 4
    rows[:200] = torch.randint(0, 4, (200, 64), generator=g).float()  # many ties: the boundary cases
    for row in rows:
        ours, theirs = to_probs(row, cfg), transformers_probs(row, cfg)
        assert torch.equal(ours > 0, theirs > 0)
        assert torch.allclose(ours, theirs, atol=1e-6)


def test_batched_rows_equal_row_by_row():
    rows = torch.randn(7, 30, generator=torch.Generator().manual_seed(1))
    cfg = SamplingConfig(0.8, top_k=10, top_p=0.7)
    assert torch.allclose(to_probs(rows, cfg), torch.stack([to_probs(r, cfg) for r in rows]))
