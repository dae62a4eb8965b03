"""The compiled pass's bits do not depend on the vector width it was built for: an AVX2 build (16-column
panels, 256-bit vectors) gives the same logits and hidden states as the AVX-512 build `make` makes,
because every element takes the same operations in the same order whichever lane computes it. A build
whose weight products are summed in chunks of 32 inputs instead of 64 gives other bits: the comparison
can fail. (Compiler flags that reorder or fuse, -ffast-math or -ffp-contract=fast, changed no bit on
the bundled pair: the sums the compiler could touch run in double and are rounded to float.)"""
from pathlib import Path

import pytest
import torch
from torch.utils.cpp_extension import load as build_and_load

from specdec_core.model import kernel

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(kernel.load() is None, reason="the compiled pass is not built here")]

AVX512 = "avx512f" in Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else False


def build(name: str, flags: list[str]):
    return build_and_load(f"{kernel.module_name()}_{name}", [str(kernel.SOURCE)], extra_cflags=flags, verbose=False)


def outputs(compiled, model, context: int = 90, k: int = 7):
    """Logits and hidden states of a prefill of `context` tokens, then of a k-row pass after it."""
    weights = kernel.PackedGPT2(model, compiled)
    cache = torch.zeros(model.config.n_layer, 1, 256, 2 * model.config.n_embd)
    g = torch.Generator().manual_seed(3)
    tokens = torch.randint(0, model.config.vocab_size, (context + k,), generator=g).tolist()
    first = kernel.pass_rows(weights, tokens[:context], list(range(context)), [0] * context, list(range(context)),
                             None, cache, list(range(context)), True)
    rows = list(range(context, context + k))
    second = kernel.pass_rows(weights, tokens[context:], rows, [0] * k, rows, None, cache, list(range(k)), True)
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
    chunk32 = build_and_load(f"{kernel.module_name()}_chunk32", [str(other)], extra_cflags=kernel.FLAGS, verbose=False)
    assert not same(outputs(chunk32, pair.target), outputs(kernel.load(), pair.target))
