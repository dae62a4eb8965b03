"""Lossy variants of a GPT-2 target, made here with torch: what "everything else" does to a model.

Each variant is a COPY (the cached pair's models are never touched):
  - int8 / 4-bit weights: every Conv1D weight of the blocks rounded to a symmetric per-output-channel
    grid (scale = max |w| of the channel / (2**(bits - 1) - 1)), stored back in float32. GPT-2's
    Conv1D is not nn.Linear, so torch's dynamic quantisation does not apply, and no int8 or int4
    kernel runs on this path: the variant shows the rounding's effect on the outputs, not its speed.
    Embeddings (tied to the head), biases and layer norms stay as they are, as weight-only schemes do.
  - bf16: the whole model cast to bfloat16 and run in it (torch has CPU bf16 kernels: its speed is
    real, and may well be a loss on a CPU without bf16 units). Not fp16: the bundled weights are
    stored in fp16, so an fp16 copy would be the target itself.
  - fewer layers: the first k blocks kept, the final layer norm and the head reused (what early-exit
    and LayerSkip-style self-speculation run as their cheap model).
  - distilled: the bundled drafter alone, a student trained to imitate the target.
"""
import copy
from dataclasses import dataclass

import torch
from transformers import GPT2LMHeadModel, PreTrainedModel
from transformers.pytorch_utils import Conv1D


@dataclass(frozen=True)
class Variant:
    name: str
    kind: str  # "quantised" | "lower precision" | "fewer layers" | "distilled"
    model: PreTrainedModel
    speed_real: bool  # False: simulated here, so a timing would not be the method's speed
    how: str  # one line for tables


def quantise_per_channel(weight: torch.Tensor, bits: int, channel_dim: int = -1) -> torch.Tensor:
    """`weight` rounded to a symmetric grid of 2**bits - 1 levels per output channel (the slices
    along `channel_dim`), returned in its own dtype: w -> round(w / s) * s, s = max|w| / (2**(bits-1) - 1)."""
    if isinstance(bits, bool) or not isinstance(bits, int) or not 2 <= bits <= 16:
        raise ValueError(f"bits must be an integer in [2, 16], got {bits!r}")
    levels = 2 ** (bits - 1) - 1
    reduce = [d for d in range(weight.dim()) if d != channel_dim % weight.dim()]
    scale = weight.abs().amax(dim=reduce, keepdim=True) / levels  # one scale per output channel
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))  # an all-zero channel stays zero
    return torch.clamp(torch.round(weight / scale), -levels, levels) * scale


def _check_gpt2(model) -> GPT2LMHeadModel:
    if not isinstance(model, GPT2LMHeadModel):
        raise TypeError(f"variants are made of GPT-2 models, got {type(model).__name__}")
    return model


def _copy(model: GPT2LMHeadModel) -> GPT2LMHeadModel:
    twin = copy.deepcopy(model)  # a separate copy: the original may be shared by every session
    twin.eval()
    return twin


@torch.no_grad()
def quantised_copy(model, bits: int) -> GPT2LMHeadModel:
    """A copy whose blocks' Conv1D weights are rounded to `bits`-bit per-output-channel grids."""
    twin = _copy(_check_gpt2(model))
    for module in twin.transformer.h.modules():
        if isinstance(module, Conv1D):  # weight (in, out): y = x @ W + b, an output channel is a column
            module.weight.copy_(quantise_per_channel(module.weight, bits, channel_dim=1))
    return twin


def bf16_copy(model) -> GPT2LMHeadModel:
    """A copy cast to bfloat16 (weights and computation)."""
    return _copy(_check_gpt2(model)).to(torch.bfloat16)


def truncated_copy(model, n_layers: int) -> GPT2LMHeadModel:
    """A copy that keeps the first n_layers blocks and reuses the final layer norm and the head."""
    model = _check_gpt2(model)
    total = model.config.n_layer
    if isinstance(n_layers, bool) or not isinstance(n_layers, int) or not 1 <= n_layers <= total:
        raise ValueError(f"n_layers must be an integer in [1, {total}], got {n_layers!r}")
    twin = _copy(model)
    twin.transformer.h = torch.nn.ModuleList(list(twin.transformer.h)[:n_layers])
    twin.config.n_layer = n_layers
    return twin


def build_variants(target, draft=None, layers: tuple[int, ...] = (6, 4)) -> dict[str, Variant]:
    """The lossy variants of `target` (copies), by name, and `draft` alone as the distilled model."""
    n = _check_gpt2(target).config.n_layer
    out = [
        Variant("int8 weights", "quantised", quantised_copy(target, 8), False,
                "weights rounded to 8-bit per-channel grids (simulated: no int8 kernel on this path)"),
        Variant("4-bit weights", "quantised", quantised_copy(target, 4), False,
                "weights rounded to 4-bit per-channel grids (simulated: no int4 kernel on this path)"),
        Variant("bf16", "lower precision", bf16_copy(target), True, "weights and arithmetic in bfloat16"),
    ]
    out += [Variant(f"first {k} of {n} layers", "fewer layers", truncated_copy(target, k), True,
                    f"blocks {k + 1}..{n} dropped, the head reused") for k in layers if k < n]
    if draft is not None:
        out.append(Variant("distilled drafter", "distilled", draft, True,
                           "the bundled drafter alone, trained to imitate the target"))
    return {v.name: v for v in out}
