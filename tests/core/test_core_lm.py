"""The KV-cache wrapper: rolled-back-and-re-extended logits equal a fresh full forward."""
import pytest
import torch

from specdec_core.model import CachedLM


@pytest.fixture(params=["core", "transformers"], ids=["own GPT-2 pass", "transformers forward + Cache.crop"])
def forward_path(request):
    """CachedLM has two paths: its lean GPT-2 pass, and transformers' forward with a DynamicCache."""
    return request.param


@pytest.mark.parametrize("keep,cut,redo", [(10, 3, 8), (1, 0, 5), (12, 12, 4), (6, 5, 1)])
def test_rollback_then_extend_matches_full_forward(small_pair, forward_path, keep, cut, redo):
    target, _ = small_pair
    g = torch.Generator().manual_seed(keep * 100 + cut)
    ids = torch.randint(0, 40, (40,), generator=g).tolist()
    with torch.inference_mode():
        lm = CachedLM(target, forward_path)
        lm.prefill(ids[:keep])
        lm.extend(ids[keep:keep + cut + 2])  # feed some tokens that are then partly rolled back
        lm.rollback(cut + 2)
        start = keep
        got = lm.extend(ids[start:start + redo])
        full = target(torch.tensor([ids[:start + redo]])).logits[0, start:].float()
    assert lm.length == start + redo
    assert torch.allclose(got, full, atol=1e-5), float((got - full).abs().max())


def test_extend_returns_all_positions_in_one_pass(small_pair, forward_path):
    target, _ = small_pair
    with torch.inference_mode():
        lm = CachedLM(target, forward_path)
        lm.prefill([1, 2, 3])
        logits = lm.extend([4, 5, 6, 7])
    assert logits.shape == (4, 40) and lm.passes == 2


def test_rollback_bounds(small_pair):
    lm = CachedLM(small_pair[0])
    with pytest.raises(ValueError):
        lm.rollback(1)
