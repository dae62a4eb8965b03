"""The model room: everything that runs a model. The rest of the core sees this interface only:

    CachedLM(model, forward, rows=1)
                                  rows over their own KV cache, each with its own length (one row is a
                                  batch of one): feed({row: tokens}) in ONE pass, extend / prefill (one
                                  row), rollback(n, row), retire(rows), extend_tree / keep_path (a tree)
    TransformersForward, with_forward, FORWARDS
                                  which forward a model takes (the benchmark compares them)
    context_length, vocab_size    what the config says
    batch_invariant(model)        whether its passes over several positions give its one-token passes' bits
    PackedLinear, CompiledBlock, block_kernel_available
                                  the kernel for a layer outside a GPT-2 model (the EAGLE drafters' layer)

Inside, one file a job:
    cached_lm.py                  the cache's bookkeeping: rows, their lengths, a tree
    pass_choice.py                which pass runs a model, and the calls every pass answers
    python_pass.py                the GPT-2 block in Python: the reference (transformers' ops and bits)
    gpt2_pass.cpp, kernel.py      its C++ twin, batch-invariant, built once per machine; kernel.py builds,
                                  loads and feeds it (weights packed once per model)
    compiled_pass.py              the pass that calls it (the default where it is built)
    block_kernel.py               its products and one block alone, over given inputs
    transformers_pass.py          any other causal LM through its own transformers forward
    forward_choice.py, config.py  the forward a model is marked for; its window and vocabulary

    python -m specdec_core.model  builds the kernel (make does, before the app or the tests start)
"""
from .block_kernel import CompiledBlock, PackedLinear, block_kernel_available
from .cached_lm import KEEP, CachedLM
from .config import context_length, vocab_size
from .forward_choice import ALL_FORWARDS, FORWARDS, TransformersForward, check_forward, with_forward
from .pass_choice import batch_invariant

__all__ = ["KEEP", "FORWARDS", "ALL_FORWARDS", "CachedLM", "CompiledBlock", "PackedLinear", "TransformersForward",
           "batch_invariant", "block_kernel_available", "check_forward", "context_length", "vocab_size", "with_forward"]
