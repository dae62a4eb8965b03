"""Which pass runs a model, and the calls every pass answers.

- compiled_pass.CompiledGPT2Pass: a plain GPT-2 through the compiled, batch-invariant kernel (the default
  where it is built);
- python_pass.GPT2Pass: the same model through the Python reference block, transformers' own ops and bits
  (forward="exact", and where the kernel cannot be built);
- transformers_pass.TransformersPass: any other causal LM (or a model wrapped in
  forward_choice.TransformersForward) through its own forward.

Why a lean pass at all: for models this small, transformers' forward spends more time in Python
(config lookups, mask builders, output dataclasses, a fresh concatenation of the whole cache per
layer) than in arithmetic (docs/benchmarks.md).

All three answer the same calls, which cached_lm.CachedLM makes, whatever the number of rows:
  run(feeds, lengths, keep, hidden)   one pass: row r fed feeds[r] after its lengths[r] cached tokens;
                                      returns ({row: logits of its last keep[r] positions},
                                      {row: final hidden states} or None)
  rollback(row, n), retire(rows)     forget a row's last n tokens; drop finished rows
  tree(tokens, positions, past, mask, hidden), keep(row, start, slots)
                                      a token tree fed to a one-row cache, and its accepted path
A pass object serves `rows` rows; one row is a batch of one.
"""
from transformers import PreTrainedModel

from . import kernel
from .compiled_pass import CompiledGPT2Pass
from .config import lean_gpt2
from .forward_choice import TransformersForward
from .python_pass import GPT2Pass
from .transformers_pass import TransformersPass


def model_pass(model: PreTrainedModel, rows: int = 1, forward: str = "core"):
    """The pass for `model`: the lean GPT-2 pass where forward is "core" or "exact" and the model allows
    it ("exact": never the small compiled kernel, so every logit keeps transformers' bits), else the
    model's own forward (always for a model wrapped in forward_choice.TransformersForward); for `rows` rows."""
    if isinstance(model, TransformersForward):
        model, forward = model.model, "transformers"
    if forward in ("core", "exact") and lean_gpt2(model):
        if forward == "core" and kernel.runs_compiled(model):
            return CompiledGPT2Pass(model, rows)
        return GPT2Pass(model, rows)
    return TransformersPass(model, rows)


def batch_invariant(model: PreTrainedModel, forward: str = "core") -> bool:
    """Whether `model`'s passes run the compiled pass, whose rows of a pass over several positions are
    bit for bit its one-token passes (so greedy speculative decoding cannot flip a near-tie that plain
    decoding decides); False for the Python reference, transformers' forward, another precision."""
    return not isinstance(model, TransformersForward) and forward == "core" and lean_gpt2(model) \
        and kernel.runs_compiled(model)
