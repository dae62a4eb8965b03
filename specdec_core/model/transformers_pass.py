"""Any causal LM through its own transformers forward and a DynamicCache: the fallback for models the
lean passes do not reproduce, and for a GPT-2 wrapped in forward_choice.TransformersForward (the benchmark
compares the two)."""
import torch
from transformers import DynamicCache, PreTrainedModel
from transformers.cache_utils import DynamicLayer

from .config import context_length, hidden_layers


class TransformersPass:
    """Any causal LM through its own forward and one transformers DynamicCache.

    One row (a batch of one): the model's plain call (its logits are transformers' own, the reference the lean pass is
    held to); a rollback crops the cache; a tree goes in with a custom 4D mask. Many rows: the cache's
    slots only grow, and `seen` (rows, slots) says which slots hold a row's committed tokens, so a
    rollback is a mask edit."""

    def __init__(self, model: PreTrainedModel, rows: int = 1):
        self.model, self.device = model, next(model.parameters()).device
        self.cache = DynamicCache(config=model.config)
        self.batched = rows > 1
        if self.batched:
            self._check_masks("batched decoding")
            self.seen = torch.zeros(rows, 0, dtype=torch.bool)  # (rows, slots)

    def _check_masks(self, what: str) -> None:
        impl = getattr(self.model.config, "_attn_implementation", None)
        if impl not in ("sdpa", "eager"):
            raise ValueError(f"{what} through {type(self.model).__name__}'s forward needs a custom 4D attention "
                             f"mask, which {impl!r} attention does not take: load it with attn_implementation='sdpa'")

    def _additive(self, visible: torch.Tensor) -> torch.Tensor:
        """A boolean mask as the additive float mask the model's attention takes."""
        dtype = next(self.model.parameters()).dtype
        return torch.zeros(visible.shape, dtype=dtype).masked_fill(~visible, torch.finfo(dtype).min)

    # --- the calls every pass answers -----------------------------------------------------------------

    def run(self, feeds: dict[int, list[int]], lengths: list[int], keep: dict[int, int], hidden: bool = False):
        """Feed every row of `feeds` its tokens after its `lengths[row]` cached ones, in one pass: the
        logits of each row's last keep[row] positions, and with `hidden` the hidden states of every fed
        token (config.hidden_layers: True the final ones (k, E); one row only)."""
        if not self.batched:
            (row, tokens), = feeds.items()
            ids = torch.tensor([tokens], dtype=torch.long, device=self.device)
            more = {"output_hidden_states": True} if hidden else {}
            # logits_to_keep=0 would keep them all: keep one, return none
            out = self.model(input_ids=ids, past_key_values=self.cache, use_cache=True,
                             logits_to_keep=keep[row] or 1, **more)
            self.cache = out.past_key_values
            logits = out.logits[0] if keep[row] else out.logits[0, :0]
            return {row: logits}, ({row: self._states(out, hidden)} if hidden else None)
        if hidden:
            raise ValueError("hidden states of many rows need the compiled pass")
        return self._extend_many(feeds, lengths, keep), None

    @torch.inference_mode()
    def rollback(self, row: int, n: int) -> None:
        """Forget the row's last n cached tokens: one row crops the cache (transformers 5.x: crop(-n)
        removes n tokens); many rows unsee the row's last n committed slots."""
        if not n:
            return
        if not self.batched:
            self.cache.crop(-n)
            return
        slots = self.seen[row].nonzero().view(-1)[-n:]
        self.seen[row, slots] = False

    def retire(self, rows: list[int]) -> None:
        pass  # the slots stay; a retired row is never fed again

    # --- a token tree, fed to the one row ----------------------------------------------------------------

    def tree(self, tokens: list[int], positions: list[int], past: int, mask: torch.Tensor, hidden: bool = False):
        """A tree pass with a custom 4D attention mask (k, cache + k)."""
        self._check_masks("tree verification")
        out = self.model(input_ids=torch.tensor([tokens], dtype=torch.long, device=self.device),
                         attention_mask=self._additive(mask)[None, None].to(self.device),  # (1, 1, k, cache + k)
                         position_ids=torch.tensor([positions], dtype=torch.long, device=self.device),
                         past_key_values=self.cache, use_cache=True, output_hidden_states=bool(hidden))
        self.cache = out.past_key_values
        return (out.logits[0], self._states(out, hidden)) if hidden else out.logits[0]

    @staticmethod
    def _states(out, hidden) -> torch.Tensor:
        """The one row's hidden states `hidden` asks for (config.hidden_layers), side by side: (k, n E)."""
        layers = hidden_layers(hidden, len(out.hidden_states) - 1)
        return torch.cat([out.hidden_states[i][0] for i in layers], dim=-1)

    def keep(self, row: int, start: int, slots: list[int]) -> None:
        """Keep the first `start` cached positions, then `slots` in order (a tree's accepted path)."""
        index = torch.tensor(list(range(start)) + slots, dtype=torch.long, device=self.device)
        for layer in self.cache.layers:
            if type(layer) is not DynamicLayer:
                raise ValueError(f"cannot keep a tree path in a {type(layer).__name__} cache")
            if not layer.is_initialized:
                continue  # a layer this model never wrote to
            layer.keys, layer.values = layer.keys.index_select(-2, index), layer.values.index_select(-2, index)

    # --- many rows -------------------------------------------------------------------------------------

    @torch.inference_mode()
    def _extend_many(self, feeds: dict[int, list[int]], lengths: list[int], keep: dict[int, int]):
        rows = list(feeds)
        B, K = self.seen.shape[0], max(len(feeds[r]) for r in rows)
        ids = torch.zeros(B, K, dtype=torch.long)
        fed = torch.zeros(B, K, dtype=torch.bool)
        for r in rows:
            ids[r, :len(feeds[r])] = torch.tensor(feeds[r], dtype=torch.long)
            fed[r, :len(feeds[r])] = True
        positions = torch.tensor(lengths)[:, None] + torch.arange(K)  # (B, K)
        # New slot j of row b is visible to query i of row b when j <= i and slot j is really fed;
        # a padding query sees itself, so no row of the mask is empty.
        causal = torch.ones(K, K, dtype=torch.bool).tril()
        new = (causal[None] & fed[:, None, :]) | torch.eye(K, dtype=torch.bool)[None]  # (B, K, K)
        visible = torch.cat([self.seen[:, None, :].expand(B, K, -1), new], dim=2)  # (B, K, slots + K)
        out = self.model(input_ids=ids.to(self.device), attention_mask=self._additive(visible)[:, None].to(self.device),
                         position_ids=positions.clamp(max=context_length(self.model) - 1).to(self.device),
                         past_key_values=self.cache, use_cache=True)
        self.cache = out.past_key_values
        self.seen = torch.cat([self.seen, fed], dim=1)
        return {r: out.logits[r, len(feeds[r]) - keep[r]:len(feeds[r])] for r in rows}
