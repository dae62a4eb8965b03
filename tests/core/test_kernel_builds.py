"""How the compiled pass is built. Its bits do not depend on the vector width it was built for: an AVX2 build (16-column
panels, 256-bit vectors) gives the same logits and hidden states as the AVX-512 build `make` makes,
because every element takes the same operations in the same order whichever lane computes it. A build
whose weight products are summed in chunks of 32 inputs instead of 64 gives other bits: the comparison
can fail. (Compiler flags that reorder or fuse, -ffast-math or -ffp-contract=fast, changed no bit on
the bundled pair: the sums the compiler could touch run in double and are rounded to float.)"""
import os
import shutil
import threading
import time
from pathlib import Path

import pytest
import torch

from specdec_core.model import kernel

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(kernel.load() is None, reason="the compiled pass is not built here")]

AVX512 = "avx512f" in Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else False


def build(name: str, flags: list[str]):
    return kernel.build(f"{kernel.module_name()}_{name}", kernel.SOURCE, flags)


def outputs(compiled, model, context: int = 90, k: int = 7):
    """Logits and every hidden state of a prefill of `context` tokens, then of a k-row pass after it."""
    weights = kernel.PackedGPT2(model, compiled)
    cache = torch.zeros(model.config.n_layer, 1, 256, 2 * model.config.n_embd)
    g = torch.Generator().manual_seed(3)
    tokens = torch.randint(0, model.config.vocab_size, (context + k,), generator=g).tolist()
    every_state = tuple(range(model.config.n_layer + 1))
    first = kernel.pass_rows(weights, tokens[:context], list(range(context)), [0] * context, list(range(context)),
                             None, cache, list(range(context)), every_state)
    rows = list(range(context, context + k))
    second = kernel.pass_rows(weights, tokens[context:], rows, [0] * k, rows, None, cache, list(range(k)), every_state)
    return [*first, *second]


def same(a, b) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.skipif(not AVX512, reason="this processor has no AVX-512: the default build is the AVX2 one")
def test_an_avx2_build_gives_the_bits_of_the_avx512_build(pair):
    avx2 = build("avx2", [f for f in kernel.FLAGS if "vector-width" not in f] + ["-mno-avx512f"])
    assert avx2.PANEL != kernel.load().PANEL  # another panel layout, another vector width
    for model in (pair.draft, pair.target):
        assert same(outputs(avx2, model), outputs(kernel.load(), model))


def test_a_build_that_sums_in_other_chunks_gives_other_bits(pair, tmp_path):
    source, chunk = kernel.SOURCE.read_text(), "constexpr int64_t kChunk = 64;"
    assert chunk in source
    other = tmp_path / "gpt2_pass_chunk32.cpp"
    other.write_text(source.replace(chunk, "constexpr int64_t kChunk = 32;"))
    chunk32 = kernel.build(f"{kernel.module_name()}_chunk32", other, kernel.FLAGS)
    assert not same(outputs(chunk32, pair.target), outputs(kernel.load(), pair.target))


TINY = """#include <pybind11/pybind11.h>
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("one", [] { return 1; }); }
"""


def build_in_thread(name: str, source: Path) -> tuple[threading.Thread, dict]:
    out = {}
    thread = threading.Thread(target=lambda: out.update(module=kernel.build(name, source, [])), daemon=True)
    thread.start()
    return thread, out


def test_a_lock_left_by_a_killed_build_does_not_hang_the_next_one(tmp_path, monkeypatch):
    """torch's builder waits for its lock file with no end; a build killed midway leaves one behind.
    kernel.build removes a lock older than any build. The control: with that age out of reach, the
    same build is still waiting after 20 s."""
    from torch.utils.cpp_extension import _get_build_directory
    source = tmp_path / "tiny.cpp"
    source.write_text(TINY)
    name = f"specdec_lock_test_{os.getpid()}_{int(time.time())}"
    lock = Path(_get_build_directory(name, verbose=False)) / "lock"
    old = time.time() - 2 * kernel.STALE_LOCK_S
    try:
        check_the_lock(name, source, lock, old, monkeypatch)
    finally:
        shutil.rmtree(lock.parent, ignore_errors=True)  # the throwaway extension's build folder


def check_the_lock(name: str, source: Path, lock: Path, old: float, monkeypatch) -> None:

    lock.touch()
    os.utime(lock, (old, old))
    monkeypatch.setattr(kernel, "STALE_LOCK_S", 10 ** 9)  # the control: the lock never counts as stale
    waiting, control = build_in_thread(name, source)
    waiting.join(20)
    assert waiting.is_alive(), "the build did not wait for the lock"
    monkeypatch.undo()  # the control's watcher now sees the lock as stale too, and builds once it is gone
    waiting.join(120)
    assert not waiting.is_alive() and control["module"].one() == 1

    lock.touch()  # a killed build's lock once more, before a build that is already there is loaded
    os.utime(lock, (old, old))
    thread, out = build_in_thread(name, source)
    thread.join(120)
    assert not thread.is_alive() and out["module"].one() == 1
    assert not lock.exists()
