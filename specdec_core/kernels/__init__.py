"""The lean GPT-2 pass's one-row passes compiled (gpt2_step.cpp), built once on this machine.

Why: a one-token pass of the bundled draft (1 layer, d = 128) was mostly the cost of calling some 25
small ops from Python and of MKL's setup for products of one row, not arithmetic (docs/benchmarks.md,
"One draft step against one target pass"). Every draft step and every plain-decoding pass is one.

Two kernels (`compiled_passes` gives a pass its own):
- exact_pass: the Python pass's ATen ops called from C++, in its order, so the same bits as
  transformers': every pass over k tokens (a verify pass, a prefill), and the one-token passes of
  every model the lean pass runs, unless it is small.
- small_step: plain loops the compiler vectorises, for a model of width at most SMALL_WIDTH (the
  bundled draft), whose products are too small for MKL's setup to pay. Its sums run in another order,
  so its logits are within 1e-5 of transformers', not the same bits (tests/core/test_step_kernel.py).
  A drafter's logits only shape its guesses, and a plain run of such a model changes no greedy output
  on the held-out prompts. forward="exact" keeps a small model on the exact kernel.

torch's own extension builder (torch.utils.cpp_extension, with ninja and the C++ compiler) builds it
once per machine into torch's extension cache; `make` builds it ahead (`python -m specdec_core.kernels`),
so no visitor waits for it. Where it cannot be built (no compiler), `load` says why once and returns
None, and the passes run in Python (the same results). SPECDEC_KERNELS=off never loads it (the
Python passes everywhere), for comparisons.
"""
import hashlib
import logging
import math
import os
import platform
import sysconfig
import threading
from pathlib import Path

import torch

SOURCE = Path(__file__).with_name("gpt2_step.cpp")
FLAGS = ["-O3", "-march=native", "-fopenmp-simd"]  # built on the machine that runs it, for its processor
SMALL_WIDTH = 256  # the small kernel for models this wide or narrower (measured: d = 128 wins, d = 384 loses)
GELU_C = math.sqrt(2.0 / math.pi)  # as passes.GELU_C

log = logging.getLogger(__name__)
_lock = threading.Lock()
_loaded: dict[str, object] = {}  # "module" -> the built module, or "reason" -> why there is none


def _cpu() -> str:
    """What the build is for: -march=native code must not run on another processor."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor()
    return "".join(next((line for line in lines if line.startswith(key)), "") for key in ("model name", "flags"))


def module_name() -> str:
    """The extension's name: the source, the flags and the processor in a hash, so a change to any of
    them builds anew instead of loading a stale or foreign build."""
    key = SOURCE.read_bytes() + " ".join(FLAGS).encode() + _cpu().encode()
    return "specdec_gpt2_step_" + hashlib.sha256(key).hexdigest()[:12]


def load():
    """The compiled module (built first if this machine has no build yet), or None with the reason
    logged once (`reason()`); thread-safe, built at most once per process."""
    with _lock:
        if not _loaded:
            _loaded.update(_build())
        return _loaded.get("module")


def reason() -> str | None:
    """Why the compiled passes are not in use (None when they are, or before `load` ran)."""
    return _loaded.get("reason")


def _build() -> dict:
    if os.environ.get("SPECDEC_KERNELS", "").lower() in ("off", "0", "no"):
        return {"reason": "switched off by SPECDEC_KERNELS"}
    scripts = sysconfig.get_path("scripts")  # ninja from requirements.txt, where the venv is not activated
    if scripts and scripts not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = scripts + os.pathsep + os.environ.get("PATH", "")
    try:
        from torch.utils.cpp_extension import load as build_and_load
        module = build_and_load(module_name(), [str(SOURCE)], extra_cflags=FLAGS, verbose=False)
    except Exception as exc:  # no compiler, no ninja, a failed build: the Python passes still work
        why = f"the compiled passes could not be built ({type(exc).__name__}: {str(exc)[:300]}); " \
              "the passes run in Python"
        log.warning(why)
        return {"reason": why}
    return {"module": module}


class CompiledPasses:
    """The compiled passes of one one-row `passes.GPT2Pass` (its tensors flattened once; its cache lists
    read at each call, since they grow): `step(token, past)` and `many(tokens, past, keep, causal)`."""

    def __init__(self, gpt2_pass, compiled, exact: bool):
        self.p, self.compiled = gpt2_pass, compiled
        self.blocks = [t for (*first, scale, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, out_w, out_b) in gpt2_pass.blocks
                       for t in (*first, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, out_w, out_b)]
        self.scales = [float(block[4]) for block in gpt2_pass.blocks]
        self.small = not exact and gpt2_pass.embed_dim <= SMALL_WIDTH
        self.no_mask = torch.empty(0, dtype=torch.bool)  # what a one-token pass hands the exact kernel (it reads none)

    def step(self, token: int, past: int) -> torch.Tensor:
        """Logits (1, V) of one token after `past` cached slots: the small kernel or the exact one."""
        p = self.p
        if self.small:
            return self.compiled.small_step(token, past, p.wte, p.wpe, self.blocks, self.scales, p.cache, p.n_head,
                                            *p.ln_f, p.lm_head, p.eps, GELU_C)
        # the exact kernel called here, not through `many`: a decoding step is one Python frame shallower
        return self.compiled.exact_pass([token], past, 1, p.wte, p.wpe, self.blocks, self.scales, p.heads, p.cache,
                                        self.no_mask, *p.ln_f, p.lm_head, p.eps, GELU_C)

    def many(self, tokens: list[int], past: int, keep: int, causal: torch.Tensor) -> torch.Tensor:
        """Logits (keep, V) of the last `keep` of k tokens after `past` cached slots (a verify pass, a
        prefill): the exact kernel; `causal` the pass's lower-triangle mask."""
        p = self.p
        return self.compiled.exact_pass(tokens, past, keep, p.wte, p.wpe, self.blocks, self.scales, p.heads, p.cache,
                                        causal, *p.ln_f, p.lm_head, p.eps, GELU_C)


def compiled_passes(gpt2_pass, exact: bool) -> CompiledPasses | None:
    """The compiled passes for a one-row `passes.GPT2Pass` (its one-token step the small kernel for a
    narrow model unless `exact`), or None where they cannot serve (not built, not on the CPU, not
    float32 or not contiguous)."""
    p = gpt2_pass
    weights = [p.wte, p.wpe, p.lm_head, *p.ln_f] + [t for block in p.blocks for t in block if isinstance(t, torch.Tensor)]
    if not all(t.device.type == "cpu" and t.dtype == torch.float32 and t.is_contiguous() for t in weights):
        return None
    compiled = load()
    return None if compiled is None else CompiledPasses(p, compiled, exact)
