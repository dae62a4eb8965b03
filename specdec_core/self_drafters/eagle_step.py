"""The EAGLE drafter's decoder layer, pair by pair, and its readout: through the compiled kernel where it
is built (the same GPT-2 block code as the target's passes: `block_pass` over the layer's inputs, and its
packed products for fc and the LM head's rows), else through torch's ops (`EagleNet.step`).

Why the kernel: torch runs a draft step as a dozen separate ops, each a library call of its own; on the
project's machine (an AMD EPYC, 7 December 2026) the EAGLE-3 drafter's step cost 1.07 ms through torch,
and a GPT-2 pass of the same size (one 384-wide block, a 2,048-row head) 0.19 ms through the kernel.

Both keep the layer's keys and values in slots: slot t holds pair t, the committed pairs first, then a
round's drafts or tree nodes, which the next round's catch-up overwrites. A pair attends to slots
0..its own, or to those its row of `visible` marks (a tree).
"""
import math

import torch
import torch.nn.functional as F

from ..model import kernel
from ..model.python_pass import GELU_C
from .nets import EagleNet

NO_BIAS = torch.empty(0)


class TorchSteps:
    """The layer through torch's ops (EagleNet.step), keys and values (H, slots, D) kept here."""

    def __init__(self, net: EagleNet):
        self.net = net
        self.keys = self.values = None  # (H, capacity, D)

    def run(self, feats: torch.Tensor, embeds: torch.Tensor, first: int, visible: torch.Tensor | None = None):
        """Pairs (features (k, E), next-token embeddings (k, E)) into slots first .. first + k - 1; each
        attends to slots 0..its own, or those its row of visible (k, first + k) marks. Returns the
        predicted next features (k, E)."""
        past = (None, None) if first == 0 else (self.keys[:, :first], self.values[:, :first])
        out, key, value = self.net.step(feats, embeds, *past, visible)
        k = feats.shape[0]
        if self.keys is None or self.keys.shape[1] < first + k:
            grow = lambda t: torch.cat([t, t.new_zeros(t.shape[0], max(first + k, 2 * t.shape[1], 64) - t.shape[1],
                                                       t.shape[2])], dim=1)
            self.keys = grow(key[:, :0] if self.keys is None else self.keys)
            self.values = grow(value[:, :0] if self.values is None else self.values)
        self.keys[:, first:first + k], self.values[:, first:first + k] = key, value
        return out


class PackedEagle:
    """An EAGLE net's tensors as the kernel reads them (made once per drafter, `pack_eagle`): fc, the
    block's four products and the LM head's rows packed into the kernel's panels."""

    def __init__(self, net: EagleNet, head: torch.Tensor, compiled):
        self.compiled = compiled
        pack = lambda linear: compiled.pack(linear.weight.detach().t().contiguous())
        self.width, self.n_head = net.width, net.n_head
        self.fc, self.fc_bias = pack(net.fc), net.fc.bias.detach()
        up, down = net.mlp[0], net.mlp[2]
        self.blocks = [net.ln_1.weight.detach(), net.ln_1.bias.detach(), pack(net.qkv), net.qkv.bias.detach(),
                       pack(net.proj), net.proj.bias.detach(), net.ln_2.weight.detach(), net.ln_2.bias.detach(),
                       pack(up), up.bias.detach(), pack(down), down.bias.detach()]
        self.scales = [1 / math.sqrt(net.width // net.n_head)]
        self.eps = net.ln_1.eps
        self.head, self.head_rows = compiled.pack(head.detach().t().contiguous()), head.shape[0]
        fuse = getattr(net, "fuse", None)  # EAGLE-3's fc over several target layers
        self.fuse = None if fuse is None else (pack(fuse), fuse.bias.detach())

    def fuse_product(self, x: torch.Tensor) -> torch.Tensor:
        """The fusion's fc, bias + x W, through the kernel: (k, layers E) -> (k, E)."""
        return self.compiled.affine_rows(x.float().contiguous(), *self.fuse, self.width)


def pack_eagle(net: EagleNet, head: torch.Tensor) -> PackedEagle | None:
    """The net and its head rows (draft vocab, E) packed for the kernel, or None where the kernel cannot
    run them (not built; tensors not float32 on the CPU; a layer the kernel's block does not compute)."""
    tensors = [*net.parameters(), head]
    if not all(t.device.type == "cpu" and t.dtype == torch.float32 for t in tensors) or \
            net.ln_1.eps != net.ln_2.eps or not isinstance(net.mlp[1], torch.nn.GELU) or \
            net.mlp[1].approximate != "tanh":
        return None
    compiled = kernel.load()
    if compiled is None:
        return None
    with torch.inference_mode(False), torch.no_grad():
        return PackedEagle(net, head, compiled)


class CompiledSteps:
    """The layer through the compiled kernel, keys and values in its cache (1 layer, 1 stream, slots, 2E)."""

    def __init__(self, weights: PackedEagle):
        self.w = weights
        self.cache = torch.zeros(1, 1, 0, 2 * weights.width)

    def run(self, feats: torch.Tensor, embeds: torch.Tensor, first: int, visible: torch.Tensor | None = None):
        """As TorchSteps.run."""
        w, k = self.w, feats.shape[0]
        capacity = self.cache.shape[2]
        if first + k > capacity:
            more = max(first + k, 2 * capacity, 64) - capacity
            self.cache = torch.cat([self.cache, self.cache.new_zeros(1, 1, more, self.cache.shape[3])], dim=2)
        x = w.compiled.affine_rows(torch.cat([embeds, feats], dim=-1).float().contiguous(), w.fc, w.fc_bias, w.width)
        mask = kernel.NO_MASK if visible is None else visible.cpu().contiguous()
        return w.compiled.block_pass(x, [0] * k, list(range(first, first + k)), mask, self.cache, w.blocks, w.scales,
                                     w.n_head, w.eps, GELU_C)


def new_steps(net: EagleNet, weights: PackedEagle | None):
    """A session's layer: compiled where `weights` were packed, else torch's."""
    return CompiledSteps(weights) if weights is not None else TorchSteps(net)


def head_logits(weights: PackedEagle | None, head: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
    """Logits over the head's rows (..., rows) for predicted features (..., E)."""
    if weights is None:
        return F.linear(features, head)
    rows = features.reshape(-1, weights.width).float().contiguous()
    logits = weights.compiled.affine_rows(rows, weights.head, NO_BIAS, weights.head_rows)
    return logits.reshape(*features.shape[:-1], weights.head_rows)
