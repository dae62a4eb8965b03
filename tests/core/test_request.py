"""One request object: a GenerationRequest is frozen and hashable (a page may cache on it), and
speculative_generate, tree_generate and autoregressive_generate take it in place of the prompt with
the same result as the simple keyword call."""
import dataclasses

import pytest
import torch

from specdec_core import (
    GREEDY,
    GenerationRequest,
    NgramDrafter,
    SamplingConfig,
    autoregressive_generate,
    speculative_generate,
    tree_generate,
)


def test_a_request_is_frozen_hashable_and_stores_the_prompt_as_a_tuple():
    a = GenerationRequest([1, 2, 3], 8, SamplingConfig(0.8, top_k=5), seed=3)
    b = GenerationRequest(torch.tensor([1, 2, 3]), 8, SamplingConfig(0.8, top_k=5), seed=3)
    assert a == b and hash(a) == hash(b) and a.prompt_ids == (1, 2, 3)
    assert {a: "cached"}[b] == "cached"
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.seed = 4
    with pytest.raises(ValueError, match="1-D"):
        GenerationRequest(torch.tensor([[1, 2]]))


@pytest.mark.parametrize("sampling", [GREEDY, SamplingConfig(0.9, top_k=10)], ids=["greedy", "sampling"])
def test_the_generate_functions_take_a_request_with_the_keyword_calls_result(small_pair, sampling):
    target, draft = small_pair
    request = GenerationRequest((1, 5, 7, 2), 12, sampling, seed=4, eos_token_id=None)
    simple = dict(max_new_tokens=12, sampling=sampling, seed=4, eos_token_id=None)
    assert autoregressive_generate(target, request).tokens == autoregressive_generate(target, [1, 5, 7, 2], **simple).tokens
    assert speculative_generate(target, draft, request, gamma=3).tokens == \
        speculative_generate(target, draft, [1, 5, 7, 2], gamma=3, **simple).tokens
    assert tree_generate(target, NgramDrafter(), request).tokens == \
        tree_generate(target, NgramDrafter(), [1, 5, 7, 2], **simple).tokens


def test_values_given_beside_a_request_are_refused(small_pair):
    target, draft = small_pair
    request = GenerationRequest((1, 2), 4)
    with pytest.raises(ValueError, match="max_new_tokens.*GenerationRequest"):
        speculative_generate(target, draft, request, max_new_tokens=8)
    with pytest.raises(ValueError, match="seed"):
        tree_generate(target, NgramDrafter(), request, seed=5)
    with pytest.raises(ValueError, match="sampling"):
        autoregressive_generate(target, request, sampling=GREEDY)


def test_a_fixed_length_request_runs_to_max_new_tokens_whatever_the_end_of_text(small_pair):
    target, _ = small_pair
    free = autoregressive_generate(target, GenerationRequest((1, 2, 3), 10, GREEDY, 0))
    stop = free.tokens[2]  # a token the run makes early: made the end-of-text token, it stops the run there
    stopped = GenerationRequest((1, 2, 3), 10, GREEDY, 0, eos_token_id=stop)
    assert len(autoregressive_generate(target, stopped).tokens) <= 3
    fixed = stopped.fixed_length()
    assert fixed.eos_token_id is None and fixed == dataclasses.replace(stopped, eos_token_id=None)
    assert autoregressive_generate(target, fixed).tokens == free.tokens


def test_a_template_gives_each_prompt_its_own_seed():
    template = GenerationRequest(max_new_tokens=6, sampling=SamplingConfig(0.9), seed=10)
    assert template.prompt_ids == ()
    asked = [template.for_prompt(p, i) for i, p in enumerate([[1, 2], torch.tensor([3])])]
    assert [(r.prompt_ids, r.seed, r.max_new_tokens) for r in asked] == [((1, 2), 10, 6), ((3,), 11, 6)]
    assert GenerationRequest().for_prompt([4], 2).seed == 2  # a template without a seed counts from 0
