"""The lean GPT-2 pass compiled (gpt2_pass.cpp), built once on this machine: the C++ twin of the
Python reference pass (python_pass.GPT2Pass).

One kernel for every pass (one token, a verify pass, a prefill, a tree, a batch's rows), for the draft
and the target: it reads each weight once per pass for all the rows (the weights packed once per
model into the panels it streams, `packed`), and computes every row with the same operations in the
same order whatever the number of rows, so row i of a k-row pass is bit for bit the one-token pass
at its position (tests/core/test_batch_invariance.py). Its blocks also run alone over given inputs
(`block_pass`, the EAGLE drafters' decoder layer, self_drafters/eagle_step.py), and its products alone
(`affine_rows`). Its sums run in its own order, not MKL's: its
logits are within 1e-5 of transformers' one-token passes on the bundled pair, and nearer float64
arithmetic than transformers' pass over a whole prompt (tests/core/test_step_kernel.py).
forward="exact" (the Python reference pass) keeps transformers' bits, for comparisons.

torch's own extension builder (torch.utils.cpp_extension, with ninja and the C++ compiler) builds it
once per machine into torch's extension cache; `make` builds it ahead (`python -m specdec_core.model`),
so no visitor waits for it. Where it cannot be built (no compiler), `load` says why once and returns
None, and the Python reference pass runs: transformers' bits, but not batch-invariant (MKL's products
over k rows round differently from its one-row products: up to 2e-5 on the bundled target). Greedy
outputs stay the target's there too, except where a near-tie falls inside that rounding.
SPECDEC_KERNELS=off never loads it, for comparisons.
"""
import hashlib
import logging
import os
import platform
import sysconfig
import threading
import time
import weakref
from pathlib import Path

import torch

from .python_pass import GELU_C

SOURCE = Path(__file__).with_name("gpt2_pass.cpp")
# Built on the machine that runs it, for its processor, with 512-bit vectors where it has them. No
# contraction into fused multiply-adds is left to the compiler (the kernel writes its own), so every
# element takes the same operations whichever lane or vector width computes it: an AVX2 build gives
# the same bits as an AVX-512 one.
FLAGS = ["-O3", "-march=native", "-mprefer-vector-width=512", "-ffp-contract=off"]

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
    return "specdec_gpt2_pass_" + hashlib.sha256(key).hexdigest()[:12]


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
        module = build(module_name(), SOURCE, FLAGS)
    except Exception as exc:  # no compiler, no ninja, a failed build: the Python passes still work
        why = f"the compiled passes could not be built ({type(exc).__name__}: {str(exc)[:300]}); " \
              "the passes run in Python"
        log.warning(why)
        return {"reason": why}
    return {"module": module}


STALE_LOCK_S = 300  # a build takes under a minute here (two under load): an older lock was left by a killed build


def build(name: str, source: Path, flags: list[str]):
    """torch's extension builder on `source`, as extension `name`, minding its lock. torch waits, with
    no end, for the lock file of a build that was killed midway (Ctrl-C during a first visit, say), then
    loads what that build should have made; so a watcher removes a lock older than any build
    (STALE_LOCK_S), and a load that then finds nothing built builds once more."""
    from torch.utils import cpp_extension
    from torch.utils.cpp_extension import load as build_and_load

    lock = Path(cpp_extension._get_build_directory(name, verbose=False)) / "lock"
    done, removed = threading.Event(), threading.Event()

    def clear_stale_lock() -> None:
        try:
            if time.time() - lock.stat().st_mtime > STALE_LOCK_S:
                log.warning("removing %s, the lock of a build that did not finish", lock)
                lock.unlink(missing_ok=True)
                removed.set()
        except OSError:  # no lock (the usual case), or removed meanwhile
            pass

    def watch() -> None:
        while not done.wait(1.0):
            clear_stale_lock()

    def load():
        return build_and_load(name, [str(source)], extra_cflags=flags, verbose=False)

    clear_stale_lock()
    threading.Thread(target=watch, daemon=True).start()
    try:
        return load()
    except ImportError:  # it waited for a lock that was removed as stale: nothing was built
        if not removed.is_set():
            raise
        cpp_extension.JIT_EXTENSION_VERSIONER.entries.pop(name, None)  # else torch takes it as built
        return load()
    finally:
        done.set()


class PackedGPT2:
    """A GPT-2's tensors as the kernel reads them, made once per model (`packed`): the four weight
    matrices of every block and the LM head (transposed) packed into the panels the kernel streams,
    the rest as they are. The model's own tensors are not written."""

    def __init__(self, model, compiled):
        self.compiled = compiled
        gpt = model.transformer
        pack = lambda w: compiled.pack(w.detach().contiguous())
        self.wte, self.wpe = gpt.wte.weight.detach(), gpt.wpe.weight.detach()
        self.embed_dim, self.n_head, self.eps = gpt.embed_dim, model.config.n_head, gpt.ln_f.eps
        self.blocks = [t.detach() if isinstance(t, torch.Tensor) else t for b in gpt.h for t in (
            b.ln_1.weight, b.ln_1.bias, pack(b.attn.c_attn.weight), b.attn.c_attn.bias, pack(b.attn.c_proj.weight),
            b.attn.c_proj.bias, b.ln_2.weight, b.ln_2.bias, pack(b.mlp.c_fc.weight), b.mlp.c_fc.bias,
            pack(b.mlp.c_proj.weight), b.mlp.c_proj.bias)]
        self.scales = [float(b.attn.scaling) for b in gpt.h]
        self.ln_f = (gpt.ln_f.weight.detach(), gpt.ln_f.bias.detach())
        self.vocab = model.lm_head.weight.shape[0]
        self.head = pack(model.lm_head.weight.t())


_packed: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # model -> its PackedGPT2


def packed(model) -> PackedGPT2:
    """The model's PackedGPT2 (the kernel built first where need be), made at its first pass and kept
    as long as the model lives (a cached model serves every session: its weights are packed once)."""
    compiled = load()
    with _lock:
        if model not in _packed:
            with torch.inference_mode(False), torch.no_grad():
                _packed[model] = PackedGPT2(model, compiled)
        return _packed[model]


def runs_compiled(model) -> bool:
    """Whether the kernel can run `model`'s passes: built, and the model's tensors float32 on the CPU."""
    tensors = list(model.parameters())
    return all(t.device.type == "cpu" and t.dtype == torch.float32 for t in tensors) and load() is not None


def pass_rows(w: PackedGPT2, tokens: list[int], positions: list[int], streams: list[int], slots: list[int],
              visible: torch.Tensor | None, cache: torch.Tensor, logit_rows: list[int], layers: tuple[int, ...] = ()):
    """One compiled pass over n rows (gpt2_pass.cpp): row r, token tokens[r] at positions[r], writes
    its key and value to slot slots[r] of stream streams[r] of `cache` (layers, streams, capacity, 2E)
    and sees that stream's slots 0..slots[r], or those row r of `visible` (n, slots) marks. Returns
    the logits (len(logit_rows), V) of the named rows and the hidden states `layers` (config.hidden_layers'
    numbering) of all rows side by side, (n, len(layers) E), or None for no layers."""
    logits, states = w.compiled.gpt2_pass(tokens, positions, streams, slots, NO_MASK if visible is None else visible,
                                        cache, logit_rows, list(layers), w.wte, w.wpe, w.blocks, w.scales, w.n_head,
                                        *w.ln_f, w.head, w.vocab, w.eps, GELU_C)
    return logits, (states if layers else None)


NO_MASK = torch.empty(0, dtype=torch.bool)


def with_slots(cache: torch.Tensor, n: int, limit: int | None = None) -> torch.Tensor:
    """`cache` (layers, streams, capacity, 2E) with at least n slots: grown by doubling (from 64, up to
    `limit` where more are not needed), what it holds kept."""
    capacity = cache.shape[2]
    if n <= capacity:
        return cache
    doubled = max(2 * capacity, 64) if limit is None else min(limit, max(2 * capacity, 64))
    more = max(n, doubled) - capacity
    return torch.cat([cache, cache.new_zeros(*cache.shape[:2], more, cache.shape[3])], dim=2)
