"""Medusa-1 drafting: K heads read the target's feature of the latest token it has scored and
propose the next K tokens at once, one head per position (Cai et al. 2024).

Which feature: the target's cache holds every committed token but the last, so the newest feature
is that of the token before the last; the target's own LM head on it predicts the last committed
token (already known), and head k (0-based) predicts the token k + 1 places after that: head 0 the
first draft, head 1 the second, and so on. Drafts of one round come from ONE pass of the heads, and
no head sees the drafts before it: q_i is head i's distribution, whatever was drawn at 1..i-1, so
x_i ~ q_i and the sampler's rule stays exact. A tree takes each depth's children from that depth's
head (Medusa's tree of top candidates per head).
"""
import time

import torch
import torch.nn.functional as F

from ..drafters import Drafter, DraftSession, Proposal, one_hot
from ..sampling_config import SamplingConfig, sample, to_probs
from ..tree_draft import DraftTree, draft_tree
from .files import check_target
from .nets import HeadsConfig, MedusaHeads, target_fingerprint
from .observe import FeatureLog


class MedusaDrafter(Drafter):
    """Drafts up to K tokens a round from the target's last feature; `reads_target` asks the
    generation loop to hand the target's features to each session (`observe_target`)."""

    reads_target = True
    drafts_trees = True

    def __init__(self, heads: MedusaHeads, lm_head: torch.Tensor, config: HeadsConfig, context_length: int,
                 name: str = "Medusa heads"):
        check_target(config, lm_head.shape[1], lm_head.shape[0], None)
        self.net, self.lm_head, self.config = heads, lm_head, config  # shared, read-only
        self.training: dict = {}  # the training summary stored beside the weights
        self.name = name
        self.vocab_size = config.vocab
        self.context_length = context_length
        self.n_heads = config.n_heads

    def check_target(self, target) -> None:
        """HeadsMismatch (a ValueError) unless `target` is the model these heads were trained on."""
        lm_head = target.get_output_embeddings().weight
        if lm_head is not self.lm_head:  # not the very model they were loaded for: compare the weights
            check_target(self.config, lm_head.shape[1], lm_head.shape[0], target_fingerprint(target))

    def start(self, vocab: int) -> "MedusaSession":
        return MedusaSession(self)


class MedusaSession(DraftSession):
    def __init__(self, drafter: MedusaDrafter):
        self.drafter = drafter
        self.log = FeatureLog(drafter.config.width, drafter.config.kind, drafter.lm_head.device)
        self.passes = 0

    def observe_target(self, features: torch.Tensor) -> None:
        """Features (k, E) of the newly committed tokens, in order."""
        self.log.add(features)

    def _logits(self, context: list[int]) -> tuple[torch.Tensor | None, float]:
        """(K, V) raw logits of the heads on the newest feature (None before any), and the pass's time."""
        self.log.check(context)
        if not self.log.count:
            return None, 0.0
        start = time.perf_counter()
        logits = F.linear(self.drafter.net(self.log.last()), self.drafter.lm_head)  # (K, V)
        self.passes += 1
        return logits, time.perf_counter() - start

    def propose(self, context: list[int], gamma: int, sampling: SamplingConfig, generator: torch.Generator,
                keep_drafting=None) -> Proposal:
        logits, seconds = self._logits(context)
        vocab = self.drafter.vocab_size
        if logits is None:  # no feature yet (a one-token prompt): nothing to draft from this round
            return Proposal([], torch.zeros(0, vocab))
        tokens, q_rows = [], []
        for i in range(min(gamma, len(logits))):
            if i > 0 and keep_drafting is not None and not keep_drafting(tokens, logits[i], generator):
                break
            if sampling.greedy:
                tokens.append(int(logits[i].argmax()))
            else:
                q_rows.append(to_probs(logits[i], sampling))
                tokens.append(sample(q_rows[-1], generator))
        n = len(tokens)
        q = one_hot(tokens, vocab) if sampling.greedy else torch.stack(q_rows)
        return Proposal(tokens, q, logits[:n], [seconds])

    def propose_tree(self, context: list[int], shape: tuple[int, ...], sampling: SamplingConfig,
                     generator: torch.Generator, node_budget: int | None = None,
                     max_depth: int | None = None) -> DraftTree:
        """Children at depth d + 1 come from head d: each head's top candidates (greedy) or draws
        without replacement from its q; the tree is at most K deep."""
        logits, seconds = self._logits(context)
        if logits is None:
            return DraftTree()
        self.pass_s = [seconds]
        depth = min(len(shape) if max_depth is None else max_depth, len(logits))

        def logits_at(tree: DraftTree, nodes: list[int]) -> torch.Tensor:  # the head of the children's depth
            return torch.stack([logits[tree.depth[n] if n >= 0 else 0] for n in nodes])

        return draft_tree(logits_at, shape, sampling, generator, node_budget, depth)

    def keep_tree_path(self, tree: DraftTree, path: list[int]) -> None:
        """Nothing to keep: the heads hold no state but the target's features."""
