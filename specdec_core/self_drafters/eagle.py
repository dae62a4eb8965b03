"""EAGLE-style drafting (Li et al. 2024): autoregressive in the target's feature space.

The drafter's decoder layer reads pairs (feature t, token t + 1) and predicts feature t + 1; the
target's frozen LM head turns a feature into the next token's logits. Its own KV cache holds the
pairs of committed tokens, built from the TARGET's features: after a round, the generation loop hands
over the features of the tokens it committed (`observe_target`), and the next round first feeds
those pairs (catch-up), so a rejected draft never lingers in the cache. Within a round the drafts
run on the drafter's own predicted features, in pairs (predicted feature, drafted token), as EAGLE's
`topK_genrate` does. A tree feeds a whole level in one pass with a tree mask; EAGLE-2's best-first
growth by the drafter's confidence is `draft_tree` with a node budget.

The EAGLE-3 drafter (kind "eagle3") is this drafter with EAGLE-3's input and readout. A fusing one
(config target_layers, e.g. the target's states after blocks 2 and 4 and its final one) asks the
target's passes for those states of every token (Drafter.target_layers) and maps them through its fc
to one feature before they enter its cache; its own predicted features need no fusing. Its readout:
logits over its reduced draft vocabulary (the rows d2t of the target's frozen LM head), scattered
into a full-vocabulary row that is -inf outside it, so its q is exactly zero there. The verification rule needs nothing
more: min(1, p/q) is only ever taken at a drafted token (q > 0), and the residual norm(max(0, p - q))
equals p outside the draft vocabulary, so a token outside it still comes with its target
probability, from the residual or the bonus token.
"""
import time

import torch
import torch.nn.functional as F

from ..drafters import Drafter, DraftSession, Proposal, one_hot
from ..sampling_config import SamplingConfig, sample, to_probs
from ..tree_draft import DraftTree, draft_tree
from .eagle_step import head_logits, new_steps, pack_eagle
from .files import check_target
from .nets import EagleNet, HeadsConfig, target_fingerprint
from .observe import FeatureLog


class EagleDrafter(Drafter):
    """One decoder layer over the target's features; `reads_target` asks the generation loop to hand
    them to each session (`observe_target`)."""

    reads_target = True
    drafts_trees = True

    def __init__(self, net: EagleNet, lm_head: torch.Tensor, embedding: torch.Tensor, config: HeadsConfig,
                 context_length: int, name: str = "EAGLE drafter"):
        check_target(config, lm_head.shape[1], lm_head.shape[0], None)
        self.net, self.lm_head, self.embedding, self.config = net, lm_head, embedding, config  # shared, read-only
        self.name = name
        self.training: dict = {}  # the training summary stored beside the weights
        self.vocab_size = config.vocab
        self.context_length = context_length
        d2t = getattr(net, "d2t", None)  # eagle3: draft index -> the target's token
        fused = getattr(net, "n_fused", 1)
        if fused > 1 and len(config.target_layers) != fused:
            raise ValueError(f"this drafter fuses {fused} target layers but its config names {config.target_layers!r}")
        self.target_layers = tuple(config.target_layers) if fused > 1 else ()  # what the target's passes hand over
        self.d2t = d2t if d2t is not None and len(d2t) < config.vocab else None
        self.head = lm_head if self.d2t is None else lm_head[self.d2t].contiguous()  # (draft vocab, E)
        self.packed = pack_eagle(net, self.head)  # the layer and head for the compiled kernel (None: torch's ops)

    def fuse(self, rows: torch.Tensor) -> torch.Tensor:
        """The target's features as the layer reads them: EAGLE-3's several layers through its fc to one."""
        if getattr(self.net, "fuse", None) is None:
            return rows
        return self.net.fuse_features(rows, self.packed.fuse if self.packed is not None else None)

    def readout(self, features: torch.Tensor) -> torch.Tensor:
        """Logits (..., V) over the target's vocabulary for predicted features (..., E); a reduced draft
        vocabulary leaves -inf outside it (q = 0 there)."""
        logits = head_logits(self.packed, self.head, features)
        if self.d2t is None:
            return logits
        full = logits.new_full((*logits.shape[:-1], self.vocab_size), float("-inf"))
        full[..., self.d2t] = logits
        return full

    def check_target(self, target) -> None:
        """HeadsMismatch (a ValueError) unless `target` is the model these heads were trained on."""
        lm_head = target.get_output_embeddings().weight
        if lm_head is not self.lm_head:  # not the very model they were loaded for: compare the weights
            check_target(self.config, lm_head.shape[1], lm_head.shape[0], target_fingerprint(target))

    def start(self, vocab: int) -> "EagleSession":
        return EagleSession(self)


class EagleSession(DraftSession):
    def __init__(self, drafter: EagleDrafter):
        self.d = drafter
        self.log = FeatureLog(drafter.config.width * max(1, len(drafter.target_layers)), drafter.config.kind,
                              drafter.lm_head.device)
        self.steps = new_steps(drafter.net, drafter.packed)  # its slots 0 .. pairs - 1: the committed pairs
        self.pairs = 0
        self.root: torch.Tensor | None = None  # (E,) predicted feature of the last committed token
        self.passes = 0
        self.pass_s: list[float] = []

    def observe_target(self, features: torch.Tensor) -> None:
        """Features (k, E) of the newly committed tokens, in order ((k, layers E) for a fusing drafter)."""
        self.log.add(features)

    def _step(self, feats, tokens: list[int], first: int, visible=None):
        """Pairs (feats (k, E), tokens) into the layer's slots first .. first + k - 1 (eagle_step): the
        predicted next features (k, E)."""
        start = time.perf_counter()
        embeds = F.embedding(torch.tensor(tokens, dtype=torch.long, device=feats.device), self.d.embedding)
        out = self.steps.run(feats, embeds, first, visible)
        self.passes += 1
        self.pass_s.append(time.perf_counter() - start)
        return out

    def _readout(self, features: torch.Tensor) -> torch.Tensor:
        """The drafter's logits for predicted features, timed as part of the pass that made them: the
        readout (a 4,096-row LM head, or the draft vocabulary's rows) is much of what a draft step costs."""
        start = time.perf_counter()
        logits = self.d.readout(features)
        if self.pass_s:
            self.pass_s[-1] += time.perf_counter() - start
        return logits

    def _catch_up(self, context: list[int]) -> bool:
        """Feed the pairs of the tokens committed since the last round (one pass); False before any feature."""
        self.log.check(context)
        m = self.log.count
        if m > self.pairs:  # pairs (feature t, token t + 1) for t = pairs .. m - 1
            feats = self.d.fuse(self.log.rows[self.pairs:m])  # EAGLE-3: several layers through fc to one feature
            out = self._step(feats, context[self.pairs + 1:m + 1], self.pairs)
            self.pairs, self.root = m, out[-1]
        return self.root is not None

    def propose(self, context: list[int], gamma: int, sampling: SamplingConfig, generator: torch.Generator,
                keep_drafting=None) -> Proposal:
        self.pass_s = []
        vocab = self.d.vocab_size
        if not self._catch_up(context):  # no feature yet (a one-token prompt)
            return Proposal([], torch.zeros(0, vocab))
        feat = self.root
        tokens, logits_rows, q_rows = [], [], []
        for i in range(gamma):
            if i > 0:  # the pair (predicted feature, last draft) -> the next predicted feature, after the round's
                feat = self._step(feat[None], [tokens[-1]], self.pairs + i - 1)[0]  # earlier drafts' slots
            logits = self._readout(feat)  # (V,) raw logits for draft i + 1
            if i > 0 and keep_drafting is not None and not keep_drafting(tokens, logits, generator):
                break
            if sampling.greedy:
                tokens.append(int(logits.argmax()))
            else:
                q_rows.append(to_probs(logits, sampling))
                tokens.append(sample(q_rows[-1], generator))
            logits_rows.append(logits)
        q = one_hot(tokens, vocab) if sampling.greedy else torch.stack(q_rows)
        return Proposal(tokens, q, torch.stack(logits_rows), list(self.pass_s))

    def propose_tree(self, context: list[int], shape: tuple[int, ...], sampling: SamplingConfig,
                     generator: torch.Generator, node_budget: int | None = None,
                     max_depth: int | None = None) -> DraftTree:
        """A tree grown one level per pass; a node attends to the committed pairs, its ancestors and itself."""
        self.pass_s = []
        if not self._catch_up(context):
            return DraftTree()
        feat_of: dict[int, torch.Tensor] = {-1: self.root}  # node -> its predicted feature
        slot: dict[int, int] = {}  # node -> its slot after the committed pairs

        def logits_at(tree: DraftTree, nodes: list[int]) -> torch.Tensor:
            if nodes == [-1]:
                return self._readout(self.root)[None]
            old, k = len(slot), len(nodes)
            seen = torch.zeros(k, self.pairs + old + k, dtype=torch.bool)
            seen[:, :self.pairs] = True
            for i, n in enumerate(nodes):
                seen[i, self.pairs + old + i] = True
                parent = tree.parents[n]
                while parent >= 0:
                    seen[i, self.pairs + slot[parent]] = True
                    parent = tree.parents[parent]
            for i, n in enumerate(nodes):
                slot[n] = old + i
            feats = torch.stack([feat_of[tree.parents[n]] for n in nodes])
            out = self._step(feats, [tree.tokens[n] for n in nodes], self.pairs + old, seen.to(feats.device))
            for i, n in enumerate(nodes):
                feat_of[n] = out[i]
            return self._readout(out)  # (k, V)

        return draft_tree(logits_at, shape, sampling, generator, node_budget, max_depth)

    def keep_tree_path(self, tree: DraftTree, path: list[int]) -> None:
        """Nothing to keep: the next round's catch-up feeds the accepted tokens with the target's own features."""
