"""The one-token pass of the lean pass (every draft step and every plain decoding pass) on the bundled
pair: the Python reference pass (forward="exact", and "core" where the compiled pass is not built)
keeps transformers' bits; the compiled pass (the default "core") is within the 1e-5 bar of
transformers' one-token passes; and no greedy output on the held-out prompts changes."""
import json
import random
from pathlib import Path

import pytest
import torch

from specdec_core import GREEDY, GenerationRequest, ModelDrafter, autoregressive_generate, speculative_generate
from specdec_core.model import CachedLM, kernel, with_forward

PROMPTS = Path(__file__).resolve().parents[2] / "assets/bench_prompts.json"


def held_out(tokenizer) -> list[list[int]]:
    prompts = json.loads(PROMPTS.read_text(encoding="utf-8"))["prompts"]
    return [tokenizer.encode(p["text"]) for p in prompts if p["kind"] == "open"]


@pytest.mark.parametrize("forward", ["exact", "core", "python step"])
@pytest.mark.parametrize("role", ["draft", "target"])
def test_one_token_steps_match_transformers(pair, role, forward, monkeypatch):
    """"python step": as on a machine where the compiled pass cannot be built."""
    if forward == "python step":
        monkeypatch.setattr(kernel, "load", lambda: None)
    model = getattr(pair, role)
    bitwise = forward != "core" or kernel.load() is None
    rng = random.Random(1)
    ids = held_out(pair.tokenizer)[0]
    fast, slow = CachedLM(model, "core" if forward == "python step" else forward), CachedLM(model, forward="transformers")
    with torch.inference_mode():
        for lm in (fast, slow):
            lm.prefill(ids[:-1])
        token = ids[-1]
        for _ in range(40):
            a, b = fast.extend([token], 1), slow.extend([token], 1)  # (1, V) each
            assert (a - b).abs().max() <= 1e-5
            if bitwise:
                assert torch.equal(a, b)  # the step keeps transformers' bits, not only the 1e-5 bar
            if rng.random() < 0.3:  # a rejected draft: forget it and feed another
                fast.rollback(1)
                slow.rollback(1)
                token = rng.randrange(a.shape[-1])
            else:
                token = int(a.argmax())


def test_step_outside_inference_mode_and_bad_tokens(pair):
    lm = CachedLM(pair.draft)
    lm.prefill([1, 2, 3])
    assert lm.extend([4], 1).shape == (1, pair.draft.config.vocab_size)  # enters inference mode itself
    with pytest.raises(IndexError):
        lm.extend([pair.draft.config.vocab_size], 1)


def test_greedy_outputs_on_held_out_prompts_unchanged(pair):
    """Speculative greedy through the lean pass (draft steps and verify passes) against plain greedy
    through transformers' own forward: the same tokens on every held-out prompt."""
    slow_target = with_forward(pair.target, "transformers")
    core, reference = ModelDrafter(pair.draft), ModelDrafter(with_forward(pair.draft, "transformers"))
    for ids in held_out(pair.tokenizer):
        request = GenerationRequest(ids, 32, GREEDY).fixed_length()
        plain = autoregressive_generate(slow_target, request)
        for gamma in (5, 6):
            spec = speculative_generate(pair.target, core, request, gamma=gamma, trace=False)
            assert spec.tokens == plain.tokens
        slow = speculative_generate(slow_target, reference, request, gamma=5, trace=False)
        assert slow.tokens == plain.tokens


def test_draft_greedy_unchanged_by_the_compiled_pass(pair):
    """The draft's own greedy text, and every draft it proposes in speculative rounds, are the same
    through the core (the compiled pass) as through transformers' forward, on every held-out prompt."""
    slow_draft = with_forward(pair.draft, "transformers")
    core, reference = ModelDrafter(pair.draft), ModelDrafter(slow_draft)
    for ids in held_out(pair.tokenizer):
        own = autoregressive_generate(pair.draft, GenerationRequest(ids, 64, GREEDY).fixed_length())
        assert own.tokens == autoregressive_generate(slow_draft, GenerationRequest(ids, 64, GREEDY).fixed_length()).tokens
        request = GenerationRequest(ids, 48, GREEDY).fixed_length()
        drafts = [[r.draft_tokens for r in speculative_generate(pair.target, drafter, request, gamma=5).rounds]
                  for drafter in (core, reference)]
        assert drafts[0] == drafts[1]
