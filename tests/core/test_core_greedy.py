"""Greedy speculative decoding returns token-for-token what greedy target decoding returns."""
import pytest
import torch

from specdec_core import GREEDY, NgramDrafter, autoregressive_generate, speculative_generate

GAMMAS = [1, 2, 3, 4, 6, 8]


def prompts(n: int, vocab: int = 40):
    g = torch.Generator().manual_seed(123)
    out = [torch.randint(0, vocab, (int(torch.randint(1, 12, (1,), generator=g)),), generator=g).tolist()
           for _ in range(n)]
    return out + [[5, 6, 7, 5, 6, 7, 5, 6]]  # self-repeating, where the n-gram drafter has matches


@pytest.mark.parametrize("gamma", GAMMAS)
def test_greedy_identity_model_and_ngram_drafters(small_pair, gamma):
    target, draft = small_pair
    for prompt in prompts(8):
        plain = autoregressive_generate(target, prompt, max_new_tokens=40, sampling=GREEDY).tokens
        for drafter in (draft, NgramDrafter()):
            spec = speculative_generate(target, drafter, prompt, gamma=gamma, max_new_tokens=40, sampling=GREEDY)
            assert spec.tokens == plain, f"gamma={gamma} prompt={prompt} drafter={drafter}"
            assert spec.target_passes <= len(plain)


def test_drafter_identical_to_target_accepts_everything(small_pair):
    target, _ = small_pair
    res = speculative_generate(target, target, [1, 2, 3], gamma=4, max_new_tokens=30, sampling=GREEDY)
    assert res.acceptance_rate == 1.0
    assert res.target_passes == 6  # 30 tokens, 5 per round
    assert res.token_kinds[:5] == ["accepted"] * 4 + ["bonus"]


def test_eos_stops_generation(small_pair):
    target, draft = small_pair
    plain = autoregressive_generate(target, [1, 2, 3], max_new_tokens=30, sampling=GREEDY, eos_token_id=None).tokens
    eos = plain[5]
    for gamma in (1, 3, 8):
        spec = speculative_generate(target, draft, [1, 2, 3], gamma=gamma, max_new_tokens=30, sampling=GREEDY,
                                    eos_token_id=eos)
        assert spec.tokens == plain[:plain.index(eos) + 1]
        assert spec.stop_reason == "eos"
