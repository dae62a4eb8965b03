"""The half-precision option: a converted copy (the shared fp32 model is never cast), the lean pass
runs in bf16 and hands back float32 logits, and the default stays fp32."""
import pytest
import torch

from specdec_core import GREEDY, ModelDrafter, autoregressive_generate, speculative_generate
from specdec_core.model import CachedLM
from specdec_core.pairs import ModelPair, model_at_precision
from tests.conftest import tiny_gpt2


def test_bf16_is_a_copy_and_fp32_is_the_model_itself():
    model = tiny_gpt2(3, vocab=40, n_embd=16)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    half = model_at_precision(model, "bf16")
    assert half is not model and next(half.parameters()).dtype == torch.bfloat16
    assert next(model.parameters()).dtype == torch.float32
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert model_at_precision(model, "fp32") is model
    with pytest.raises(ValueError, match="precision"):
        model_at_precision(model, "int4")


def test_bf16_lean_pass_returns_float32_logits_near_the_fp32_ones():
    model = tiny_gpt2(3, vocab=40, n_layer=2, n_embd=32, n_positions=64, spread=0.3)
    half = model_at_precision(model, "bf16")
    fast, full = CachedLM(half), CachedLM(model)
    assert fast.cache is None  # the lean pass, not transformers' forward
    with torch.inference_mode():
        for tokens in ([1, 2, 3, 4], [5], [6, 7, 8]):
            a, b = fast.extend(tokens), full.extend(tokens)
            assert a.dtype == torch.float32
            assert float((a - b).abs().max()) < 0.1 * float(b.abs().max())


def test_a_pair_at_bf16_keeps_its_drafter_mapping_and_generates(small_pair):
    target, draft = small_pair
    pair = ModelPair("t", target, draft, None, "t", "d", "", "cpu", {"d": draft})
    half = pair.at_precision("bf16")
    assert half.precision == "bf16" and pair.precision == "fp32" and pair.at_precision("fp32") is pair
    assert half.drafts["d"] is half.draft and next(half.target.parameters()).dtype == torch.bfloat16
    plain = autoregressive_generate(half.target, [1, 5, 7], 12, GREEDY).tokens
    spec = speculative_generate(half.target, ModelDrafter(half.draft), [1, 5, 7], gamma=3, max_new_tokens=12,
                                sampling=GREEDY).tokens
    assert len(plain) == len(spec) == 12
