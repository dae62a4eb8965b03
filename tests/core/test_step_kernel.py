"""The compiled pass (specdec_core/model/kernel.py): it builds here, it keeps both bundled models' logits within
1e-5 of transformers' one-token passes on every held-out prompt (a bar a lossy head does not pass),
nearer float64 arithmetic than transformers' own pass over a whole prompt, and a machine that cannot
build it falls back to the Python reference pass with a reason."""
import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers import DynamicCache

from specdec_core.model import CachedLM, kernel

ROOT = Path(__file__).resolve().parents[2]
BAR = 1e-5


def held_out(tokenizer) -> list[list[int]]:
    prompts = json.loads((ROOT / "assets/bench_prompts.json").read_text(encoding="utf-8"))["prompts"]
    return [tokenizer.encode(p["text"]) for p in prompts if p["kind"] == "open"]


def transformers_steps(model, ids: list[int]) -> torch.Tensor:
    """transformers' logits (len(ids), V), fed one token at a time over its own cache."""
    cache = DynamicCache(config=model.config)
    return torch.cat([model(torch.tensor([[t]]), past_key_values=cache, use_cache=True).logits[0] for t in ids])


@pytest.mark.skipif(shutil.which(os.environ.get("CXX", "c++")) is None, reason="no C++ compiler on this machine")
def test_it_builds_on_a_machine_with_a_compiler():
    assert kernel.load() is not None, kernel.reason()


@pytest.mark.parametrize("role", ["draft", "target"])
@torch.inference_mode()
def test_compiled_pass_within_the_bar_on_held_out_prompts(pair, role):
    """Each logit of the compiled pass, fed one token at a time or a whole prompt in one pass (the
    same bits: test_batch_invariance.py), within 1e-5 of transformers' one-token passes. Against
    transformers' pass over the whole prompt no float32 pass in another order could keep that bar:
    transformers' own one-token passes are 2e-5 from it. So the second check holds both to float64
    arithmetic: the compiled pass is nearer it than transformers' whole-prompt pass."""
    if kernel.load() is None:
        pytest.skip(f"no compiled pass: {kernel.reason()}")
    model = getattr(pair, role)
    truth = copy.deepcopy(model).double()
    worst, differs, ours_off, theirs_off = 0.0, False, 0.0, 0.0
    for ids in held_out(pair.tokenizer):
        lm = CachedLM(model)
        ours = torch.cat([lm.extend([t], 1) for t in ids])
        theirs = transformers_steps(model, ids)
        worst = max(worst, float((ours - theirs).abs().max()))
        differs |= not torch.equal(ours, theirs)
        whole, exact = model(torch.tensor([ids])).logits[0], truth(torch.tensor([ids])).logits[0]
        ours_off = max(ours_off, float((CachedLM(model).extend(ids).double() - exact).abs().max()))
        theirs_off = max(theirs_off, float((whole.double() - exact).abs().max()))
    assert worst <= BAR
    assert differs  # the compiled pass ran: its sums are not MKL's
    assert ours_off < theirs_off


@torch.inference_mode()
def test_the_bar_catches_a_lossy_head(pair):
    """The 1e-5 bar is not loose: the draft's head read in bfloat16 (half the bytes, the shortcut the
    kernel does not take) is far outside it on the first held-out prompt."""
    ids = held_out(pair.tokenizer)[0]
    theirs = transformers_steps(pair.draft, ids)
    hidden = pair.draft(torch.tensor([ids]), output_hidden_states=True).hidden_states[-1][0]  # after ln_f
    lossy = hidden @ pair.draft.lm_head.weight.bfloat16().float().T
    assert (lossy - theirs).abs().max() > 100 * BAR


def test_no_compiler_falls_back_to_the_python_step(tmp_path):
    """A fresh extension cache and no compiler: the build fails, `load` gives None and the reason, and a
    generation still runs, through the Python reference pass, with the same greedy tokens as transformers'."""
    code = """
from specdec_core import GREEDY, GenerationRequest, autoregressive_generate
from specdec_core.model import with_forward
from specdec_core.pairs import load_pair
from specdec_core.model import kernel
pair = load_pair("shakespeare", device="cpu")
assert kernel.load() is None
print("REASON", kernel.reason())
request = GenerationRequest(pair.tokenizer.encode("ROMEO: But soft"), 12, GREEDY).fixed_length()
a = autoregressive_generate(pair.draft, request).tokens
b = autoregressive_generate(with_forward(pair.draft, "transformers"), request).tokens
assert a == b, (a, b)
print("SAME")
"""
    env = {**os.environ, "TORCH_EXTENSIONS_DIR": str(tmp_path), "CXX": str(tmp_path / "no-such-compiler"),
           "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "could not be built" in out.stdout and "SAME" in out.stdout
    assert "could not be built" in out.stderr  # said once, as a warning in the log
