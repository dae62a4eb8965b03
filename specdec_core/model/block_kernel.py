"""The compiled kernel for layers outside a GPT-2 model (the EAGLE drafters' decoder layer): a product with a
packed weight (`PackedLinear`, the kernel's `affine_rows`), and one pre-LayerNorm GPT-2 block over given
inputs with its keys and values in slots (`CompiledBlock`, the kernel's `block_pass`: the target's own block
code, without the embedding and the final norm)."""
import math

import torch

from . import kernel
from .python_pass import GELU_C

NO_BIAS = torch.empty(0)


def block_kernel_available() -> bool:
    """Whether the compiled kernel is built here (else callers keep to torch's ops)."""
    return kernel.load() is not None


class PackedLinear:
    """bias + x W for a weight (out, in) and bias (out,) or None, W packed once into the kernel's panels."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None):
        with torch.inference_mode(False), torch.no_grad():
            self.compiled = kernel.load()
            self.panels = self.compiled.pack(weight.detach().float().t().contiguous())
            self.bias = NO_BIAS if bias is None else bias.detach().float().contiguous()
        self.n_in, self.n_out = weight.shape[1], weight.shape[0]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """(..., in) -> (..., out)."""
        rows = x.reshape(-1, self.n_in).float().contiguous()
        return self.compiled.affine_rows(rows, self.panels, self.bias, self.n_out).reshape(*x.shape[:-1], self.n_out)


class CompiledBlock:
    """x + attn(ln_1(x)), then + mlp(ln_2(x)) with gelu_new (GPT-2's pre-LayerNorm block), for the linear
    layers qkv (E -> 3E), proj, up (E -> 4E), down and LayerNorms ln_1, ln_2 (torch modules, read once)."""

    def __init__(self, ln_1, qkv, proj, ln_2, up, down, n_head: int):
        if ln_1.eps != ln_2.eps:
            raise ValueError("the kernel's block takes one LayerNorm epsilon")
        self.compiled = kernel.load()
        qkv_, proj_, up_, down_ = (PackedLinear(m.weight, m.bias) for m in (qkv, proj, up, down))
        self.blocks = [ln_1.weight.detach(), ln_1.bias.detach(), qkv_.panels, qkv_.bias, proj_.panels, proj_.bias,
                       ln_2.weight.detach(), ln_2.bias.detach(), up_.panels, up_.bias, down_.panels, down_.bias]
        self.width, self.n_head, self.eps = qkv.weight.shape[1], n_head, ln_1.eps
        self.scales = [1 / math.sqrt(self.width // n_head)]

    def new_cache(self) -> torch.Tensor:
        """An empty cache of slots (1 layer, 1 stream, 0 slots, 2E) for `run`."""
        return torch.zeros(1, 1, 0, 2 * self.width)

    def run(self, x: torch.Tensor, cache: torch.Tensor, first: int, visible: torch.Tensor | None = None):
        """The block over inputs x (k, E) at slots first .. first + k - 1 of `cache` (grown by doubling as
        needed): each row attends to slots 0..its own, or to those its row of visible (k, first + k) marks.
        Returns (outputs (k, E), the cache)."""
        k = x.shape[0]
        cache = kernel.with_slots(cache, first + k)
        mask = kernel.NO_MASK if visible is None else visible.cpu().contiguous()
        out = self.compiled.block_pass(x.float().contiguous(), [0] * k, list(range(first, first + k)), mask, cache,
                                       self.blocks, self.scales, self.n_head, self.eps, GELU_C)
        return out, cache
