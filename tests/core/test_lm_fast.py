"""CachedLM's own GPT-2 passes against the model's transformers forward, through prefills, extensions,
rollbacks and buffer growth: the Python reference pass (forward="exact") gives the same logits bit for
bit; the compiled pass ("core" where it is built) sums in its own fixed order, as close to float64
arithmetic as transformers' float32 forward is; other models keep transformers' path."""
import copy
import random

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from specdec_core import GREEDY, ModelDrafter, SamplingConfig, autoregressive_generate, speculative_generate
from specdec_core.model import CachedLM, TransformersForward, kernel, vocab_size, with_forward
from specdec_core.model.compiled_pass import CompiledGPT2Pass
from specdec_core.model.pass_choice import model_pass
from specdec_core.model.python_pass import GPT2Pass
from specdec_core.model.transformers_pass import TransformersPass
from tests.conftest import tiny_gpt2


def both(model, forward="core"):
    fast, slow = CachedLM(model, forward), CachedLM(model, forward="transformers")
    assert fast.cache is None and slow.cache is not None  # the two paths really differ
    return fast, slow


@pytest.mark.parametrize("shape", [dict(n_layer=2, n_embd=16), dict(n_layer=3, n_embd=32, vocab=40, n_positions=128),
                                   dict(n_layer=1, n_embd=24, vocab=50, n_positions=200, spread=0.3)])
@pytest.mark.parametrize("forward", ["exact", "core"])
def test_same_logits_as_transformers_forward(shape, forward):
    """Bit for bit, except "core" where the compiled pass runs: there no further from float64 arithmetic
    than transformers' own float32 forward is (random weights of std 1 grow activations to the
    hundreds, so both are 1e-4 off; the bundled pair's absolute bar of 1e-5 is test_step_kernel.py's)."""
    model = tiny_gpt2(3, **shape)
    truth = copy.deepcopy(model).double()
    close_only = forward == "core" and kernel.load() is not None
    vocab, positions = model.config.vocab_size, model.config.n_positions
    rng = random.Random(0)
    ours_off = theirs_off = 0.0
    for _ in range(10):
        fast, slow = both(model, forward)
        exact = CachedLM(truth, forward="transformers")
        with torch.inference_mode():
            for _ in range(15):
                if fast.length and rng.random() < 0.3:
                    n = rng.randrange(fast.length + 1)
                    for lm in (fast, slow, exact):
                        lm.rollback(n)
                k = rng.choice([1, 1, 2, 3, 7, 20])
                if fast.length + k > positions:
                    break
                tokens = [rng.randrange(vocab) for _ in range(k)]
                keep = rng.choice([None, 1])
                a, b, t = fast.extend(tokens, keep), slow.extend(tokens, keep), exact.extend(tokens, keep).double()
                if not close_only:
                    assert torch.equal(a, b), float((a - b).abs().max())
                ours_off, theirs_off = max(ours_off, float((a - t).abs().max())), max(theirs_off, float((b - t).abs().max()))
                assert fast.length == slow.length
    assert ours_off <= max(theirs_off, 1e-5)


def test_generations_identical_on_both_paths(small_pair):
    target, draft = small_pair
    prompt = [1, 5, 7, 2, 9]
    runs = {}
    for forward in ("core", "transformers"):
        on = with_forward(target, forward)
        drafter = ModelDrafter(with_forward(draft, forward))
        runs[forward] = [autoregressive_generate(on, prompt, 30, GREEDY).tokens,
                         speculative_generate(on, drafter, prompt, gamma=3, max_new_tokens=30, sampling=GREEDY).tokens,
                         speculative_generate(on, drafter, prompt, gamma=4, max_new_tokens=30,
                                              sampling=SamplingConfig(0.9, top_k=10), seed=5).tokens]
    assert runs["core"] == runs["transformers"]


def test_a_wrapped_model_runs_through_its_own_forward_and_reads_as_the_model():
    model = tiny_gpt2(1)
    wrapped = with_forward(model, "transformers")
    assert isinstance(wrapped, TransformersForward) and with_forward(model, "core") is model
    assert wrapped.config is model.config and next(wrapped.parameters()) is next(model.parameters())
    assert CachedLM(model).lean and not CachedLM(wrapped).lean and not CachedLM(wrapped, "core").lean
    assert not ModelDrafter(wrapped).start(vocab_size(model)).lm.lean
    assert isinstance(model_pass(wrapped, 2), TransformersPass) and isinstance(model_pass(model, 2), (GPT2Pass, CompiledGPT2Pass))


def test_unknown_forward_is_refused():
    with pytest.raises(ValueError, match="forward"):
        CachedLM(tiny_gpt2(1), forward="fast")
    with pytest.raises(ValueError, match="forward"):
        with_forward(tiny_gpt2(1), "fast")


def test_other_models_keep_the_transformers_path():
    eager = GPT2LMHeadModel(GPT2Config(vocab_size=8, n_positions=16, n_embd=8, n_layer=1, n_head=1,
                                       attn_implementation="eager")).eval()
    assert CachedLM(eager).cache is not None
    training = tiny_gpt2(1).train()
    assert CachedLM(training).cache is not None
    training.eval()
    assert CachedLM(training).cache is None


def test_positions_past_the_window_are_refused():
    lm = CachedLM(tiny_gpt2(2, n_positions=8))
    with torch.inference_mode():
        lm.extend(list(range(8)))
        with pytest.raises(ValueError):
            lm.extend([1])
