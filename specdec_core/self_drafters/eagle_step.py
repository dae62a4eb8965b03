"""The EAGLE drafter's decoder layer, pair by pair, and its readout: through the compiled kernel where it
is built (the model room's CompiledBlock, the target's own block code, and PackedLinear for fc, the
fusion's fc and the LM head's rows), else through torch's ops (`EagleNet.step`).

Why the kernel: torch runs a draft step as a dozen separate ops, each a library call of its own; on the
project's machine (an AMD EPYC, 7 December 2026) the EAGLE-3 drafter's step cost 1.07 ms through torch,
and a GPT-2 pass of the same size (one 384-wide block, a 2,048-row head) 0.19 ms through the kernel.

Both keep the layer's keys and values in slots: slot t holds pair t, the committed pairs first, then a
round's drafts or tree nodes, which the next round's catch-up overwrites. A pair attends to slots
0..its own, or to those its row of `visible` marks (a tree).
"""
import torch
import torch.nn.functional as F

from ..model import CompiledBlock, PackedLinear, block_kernel_available
from .nets import EagleNet


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
    """An EAGLE net and its head rows as the kernel reads them, made once per drafter (`pack_eagle`)."""

    def __init__(self, net: EagleNet, head: torch.Tensor):
        self.fc = PackedLinear(net.fc.weight, net.fc.bias)
        self.block = CompiledBlock(net.ln_1, net.qkv, net.proj, net.ln_2, net.mlp[0], net.mlp[2], net.n_head)
        self.head = PackedLinear(head, None)  # (draft vocab, E): logits over the draft vocabulary
        fuse = getattr(net, "fuse", None)  # EAGLE-3's fc over several target layers
        self.fuse = None if fuse is None else PackedLinear(fuse.weight, fuse.bias)


def pack_eagle(net: EagleNet, head: torch.Tensor) -> PackedEagle | None:
    """The net and its head rows (draft vocab, E) packed for the kernel, or None where the kernel cannot
    run them (not built; tensors not float32 on the CPU; a layer the kernel's block does not compute)."""
    tensors = [*net.parameters(), head]
    if not all(t.device.type == "cpu" and t.dtype == torch.float32 for t in tensors) or \
            net.ln_1.eps != net.ln_2.eps or not isinstance(net.mlp[1], torch.nn.GELU) or \
            net.mlp[1].approximate != "tanh" or not block_kernel_available():
        return None
    return PackedEagle(net, head)


class CompiledSteps:
    """The layer through the compiled kernel, keys and values in its cache of slots."""

    def __init__(self, weights: PackedEagle):
        self.w = weights
        self.cache = weights.block.new_cache()

    def run(self, feats: torch.Tensor, embeds: torch.Tensor, first: int, visible: torch.Tensor | None = None):
        """As TorchSteps.run."""
        x = self.w.fc(torch.cat([embeds, feats], dim=-1))
        out, self.cache = self.w.block.run(x, self.cache, first, visible)
        return out


def new_steps(net: EagleNet, weights: PackedEagle | None):
    """A session's layer: compiled where `weights` were packed, else torch's."""
    return CompiledSteps(weights) if weights is not None else TorchSteps(net)


def head_logits(weights: PackedEagle | None, head: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
    """Logits over the head's rows (..., rows) for predicted features (..., E)."""
    return F.linear(features, head) if weights is None else weights.head(features)
