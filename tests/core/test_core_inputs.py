"""Bad input gets a ValueError that names the parameter."""
import math

import pytest
import torch

from specdec_core import GREEDY, SamplingConfig, autoregressive_generate, speculative_generate
from tests.conftest import tiny_gpt2


@pytest.mark.parametrize("kwargs,word", [
    (dict(prompt_ids=[]), "prompt_ids"),
    (dict(prompt_ids=torch.zeros(2, 2, dtype=torch.long)), "prompt_ids"),
    (dict(prompt_ids=[1, 99]), "prompt_ids"),
    (dict(prompt_ids=[-1]), "prompt_ids"),
    (dict(max_new_tokens=0), "max_new_tokens"),
    (dict(max_new_tokens=10**9), "context window"),
    (dict(prompt_ids=list(range(40)) * 3, max_new_tokens=20), "context window"),
    (dict(gamma=0), "gamma"),
    (dict(gamma=10**6), "gamma"),
    (dict(gamma=2.5), "gamma"),
    (dict(seed=-1), "seed"),
    (dict(seed=2**80), "seed"),
    (dict(sampling="greedy"), "sampling"),
])
def test_speculative_bad_inputs(small_pair, kwargs, word):
    target, draft = small_pair
    args = dict(prompt_ids=[1, 2, 3], gamma=4, max_new_tokens=5, sampling=GREEDY, seed=0) | kwargs
    with pytest.raises(ValueError, match=word):
        speculative_generate(target, draft, **args)


@pytest.mark.parametrize("kwargs,word", [
    (dict(temperature=-1), "temperature"), (dict(temperature=math.nan), "temperature"),
    (dict(temperature=math.inf), "temperature"), (dict(top_p=0), "top_p"), (dict(top_p=1.5), "top_p"),
    (dict(top_k=0), "top_k"), (dict(top_k=2.5), "top_k"),
])
def test_sampling_config_bad_inputs(kwargs, word):
    with pytest.raises(ValueError, match=word):
        SamplingConfig(**kwargs)


def test_mismatched_vocabularies(small_pair):
    target, _ = small_pair
    with pytest.raises(ValueError, match="vocabulary"):
        speculative_generate(target, tiny_gpt2(3, vocab=41), [1, 2], gamma=2, max_new_tokens=3)


def test_autoregressive_bad_inputs(small_pair):
    target, _ = small_pair
    with pytest.raises(ValueError, match="prompt_ids"):
        autoregressive_generate(target, [], max_new_tokens=3)
    with pytest.raises(ValueError, match="context window"):
        autoregressive_generate(target, [1], max_new_tokens=500)


def test_a_bos_prompt_on_purpose_works(small_pair):
    target, draft = small_pair
    assert len(speculative_generate(target, draft, [0], gamma=2, max_new_tokens=4, seed=1).tokens) == 4
