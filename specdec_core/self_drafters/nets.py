"""The small networks that draft from the target's own features, and the fingerprint of that target.

Both read the target's final hidden state (after GPT-2's ln_f: the vector its LM head turns into
logits) and both are read out by the target's frozen LM head, so all they learn is a map from
features to features.

- `MedusaHeads` (Medusa-1, Cai et al. 2024): K residual blocks h + SiLU(W h) on the feature of
  position t; block k's output, through the LM head, predicts the token k + 1 positions after the
  one the target itself predicts there (token t + k + 1). Medusa's code (FasterDecoding/Medusa,
  medusa/model/medusa_model.py, `ResBlock`) gives each head its own LM head initialised from the
  target's; here the K heads share the target's frozen LM head, which keeps the bundled files small
  (4096 x 384 per head saved).
- `EagleNet` (EAGLE, Li et al. 2024): fc over concat(embedding(token t + 1), feature t), then one
  decoder layer (here a GPT-2 block) with causal attention over the pairs so far, predicting the
  feature at t + 1. EAGLE's code (SafeAILab/EAGLE, eagle/model/cnets1.py `Model.forward`) concatenates
  (inputs_embeds, hidden_states) in that order, through fc, then its decoder layer; the embedding
  is the target's, frozen. The attention here has no position signal of its own: the target's
  features already carry their positions.
- `Eagle3Net` (EAGLE-3, Li et al. 2025): the same layer, trained by training-time test to read its
  own earlier outputs (`unroll_step`), read out over a reduced draft vocabulary: d2t maps a draft
  index to the target's token (as the EAGLE-3 release's d2t), the readout is those rows of the
  target's frozen LM head. With fused_layers > 1, `fuse` maps the concatenated low, middle and top
  target features to the width first (EAGLE-3's fc over three layers).
"""
import hashlib
import math
import weakref
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass(frozen=True)
class HeadsConfig:
    """What a set of heads is and which target it belongs to (stored beside the weights)."""
    kind: str  # "medusa", "eagle" or "eagle3"
    width: int  # the target's feature width (n_embd)
    vocab: int  # the target's vocabulary size
    target_sha256: str  # `target_fingerprint` of the target they were trained on
    n_heads: int = 0  # medusa: K heads (head k drafts the k-th token of a round)
    n_head: int = 0  # eagle, eagle3: attention heads of its decoder layer
    draft_vocab: int = 0  # eagle3: tokens it drafts over (its d2t map into the target's vocabulary)
    fused_layers: int = 1  # eagle3: target layers its fc fuses (1: the top feature only)
    target_layers: tuple[int, ...] = ()  # eagle3, fused: the target's hidden states it reads (transformers' numbering)
    target_name: str = ""  # for messages only

    def to_dict(self) -> dict:
        return asdict(self)


_FINGERPRINTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # model -> its fingerprint


def target_fingerprint(model) -> str:
    """sha256 over the target's parameter names, shapes and float32 values: heads trained on one
    target are refused by any other (other weights, another vocabulary or width). Computed once per
    model object (models are read-only once loaded)."""
    if model in _FINGERPRINTS:
        return _FINGERPRINTS[model]
    digest = hashlib.sha256()
    with torch.no_grad():
        for name, tensor in sorted(model.state_dict().items()):
            digest.update(f"{name}:{tuple(tensor.shape)};".encode())
            digest.update(tensor.detach().float().cpu().contiguous().numpy().tobytes())
    _FINGERPRINTS[model] = digest.hexdigest()
    return _FINGERPRINTS[model]


def target_readout(model) -> tuple[torch.Tensor, torch.Tensor]:
    """The target's frozen (LM head weight (V, E), token embedding (V, E)), shared, never trained."""
    return model.get_output_embeddings().weight, model.get_input_embeddings().weight


class ResBlock(nn.Module):
    """h + SiLU(W h + b), W initialised to zero so that an untrained head starts as the target's
    own next-token prediction (as Medusa's ResBlock does)."""

    def __init__(self, width: int):
        super().__init__()
        self.linear = nn.Linear(width, width)
        nn.init.zeros_(self.linear.weight)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + F.silu(self.linear(h))


class MedusaHeads(nn.Module):
    def __init__(self, width: int, n_heads: int):
        super().__init__()
        self.blocks = nn.ModuleList(ResBlock(width) for _ in range(n_heads))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """(..., E) target features -> (K, ..., E) one feature per head, for the LM head to read."""
        return torch.stack([block(features) for block in self.blocks])


class EagleNet(nn.Module):
    """fc + one pre-LayerNorm GPT-2 block; the caller keeps its keys and values (`step`)."""

    def __init__(self, width: int, n_head: int):
        super().__init__()
        self.n_head, self.width = n_head, width
        self.fc = nn.Linear(2 * width, width)
        self.ln_1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln_2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(approximate="tanh"), nn.Linear(4 * width, width))

    def step(self, features: torch.Tensor, embeds: torch.Tensor, keys: torch.Tensor | None,
             values: torch.Tensor | None, mask: torch.Tensor | None = None):
        """k new pairs (features (k, E), embeddings of the next tokens (k, E)) after the cached
        keys/values (H, past, D); mask (k, past + k) bool says what each new pair may attend to
        (None: causal). Returns the predicted next features (k, E) and the new keys and values (H, k, D)."""
        k, E, H = features.shape[0], self.width, self.n_head
        x = self.fc(torch.cat([embeds, features], dim=-1))  # (k, E)
        q, key, value = self.qkv(self.ln_1(x)).view(k, 3, H, E // H).permute(1, 2, 0, 3)  # (H, k, D) each
        all_k = key if keys is None else torch.cat([keys, key], dim=1)
        all_v = value if values is None else torch.cat([values, value], dim=1)
        if mask is None:
            past = all_k.shape[1] - k
            mask = torch.ones(k, past + k, dtype=torch.bool, device=x.device).tril(past)
        att = F.scaled_dot_product_attention(q, all_k, all_v, attn_mask=mask, scale=1 / math.sqrt(E // H))
        x = x + self.proj(att.transpose(0, 1).reshape(k, E))
        x = x + self.mlp(self.ln_2(x))
        return x, key, value

    def forward(self, features: torch.Tensor, embeds: torch.Tensor) -> torch.Tensor:
        """Training: (B, T, E) features and next-token embeddings -> (B, T, E) predicted next
        features, causal over T."""
        B, T, E = features.shape
        H = self.n_head
        x = self.fc(torch.cat([embeds, features], dim=-1))
        q, key, value = self.qkv(self.ln_1(x)).view(B, T, 3, H, E // H).permute(2, 0, 3, 1, 4)  # (B, H, T, D)
        att = F.scaled_dot_product_attention(q, key, value, is_causal=True, scale=1 / math.sqrt(E // H))
        x = x + self.proj(att.transpose(1, 2).reshape(B, T, E))
        return x + self.mlp(self.ln_2(x))


class Eagle3Net(EagleNet):
    """EagleNet + an optional fusion fc over several target layers + the draft vocabulary (d2t)."""

    def __init__(self, width: int, n_head: int, fused_layers: int, draft_vocab: int):
        super().__init__(width, n_head)
        self.n_fused = fused_layers
        self.fuse = nn.Linear(fused_layers * width, width) if fused_layers > 1 else None
        self.register_buffer("d2t", torch.arange(draft_vocab))  # draft index -> the target's token

    def fuse_features(self, features: torch.Tensor, product=None) -> torch.Tensor:
        """(..., fused_layers * E) concatenated target layers, the top one last -> (..., E) the layer's
        input feature. The lower layers are the target's raw residual stream, whose scale grows with
        depth: each is RMS-normalised first (the top one is already after ln_f). `product` computes fc
        in its place (the compiled kernel's, eagle_step)."""
        if self.fuse is None:
            return features
        parts = features.unflatten(-1, (self.n_fused, self.width))
        lower = F.rms_norm(parts[..., :-1, :], (self.width,))
        return (product or self.fuse)(torch.cat([lower, parts[..., -1:, :]], dim=-2).flatten(-2))

    def unroll_step(self, features: torch.Tensor, embeds: torch.Tensor, keys: list, values: list):
        """One training-time-test step over (B, n, E) pairs: step j = len(keys) attends causally to
        step 0's keys (the target's pairs) and, at its own position only, to steps 1 .. j (the round's
        earlier drafts). Returns (outputs (B, n, E), this step's keys, values (B, H, n, D))."""
        B, n, E = features.shape
        H, j = self.n_head, len(keys)
        x = self.fc(torch.cat([embeds, features], dim=-1))
        q, key, value = self.qkv(self.ln_1(x)).view(B, n, 3, H, E // H).permute(2, 0, 3, 1, 4)
        mask = torch.cat([torch.ones(n, n, dtype=torch.bool).tril()] + [torch.eye(n, dtype=torch.bool)] * j, dim=1)
        att = F.scaled_dot_product_attention(q, torch.cat(keys + [key], 2), torch.cat(values + [value], 2),
                                             attn_mask=mask, scale=1 / math.sqrt(E // H))
        x = x + self.proj(att.transpose(1, 2).reshape(B, n, E))
        return x + self.mlp(self.ln_2(x)), key, value
