"""Drafters: whatever proposes the next few tokens, and the distribution q it drew them from.

A `Drafter` is shared and stateless (it may wrap a cached model); `start()` gives a per-generation
`DraftSession` that may keep state such as a KV cache. Each round the sampler calls
`session.propose(context, gamma, sampling, generator)` with every token so far (prompt + output),
adding `keep_drafting=test` when the draft-length policy may end a round early: before each draft
but the first, a drafter that supports it calls `test(drafts_so_far, raw_logits, generator)` with
the raw logits (V,) it would draw the next draft from, and stops when it returns False (see
specdec_core.policies).

For token trees (specdec_core.tree) the session drafts a whole tree, `propose_tree(context, shape,
sampling, generator, node_budget, max_depth) -> DraftTree`, and after the verdict is told which path
was accepted, `keep_tree_path(tree, path)`, so that it can keep that path in its own state; a drafter
that can says so (`drafts_trees = True`). Every drafter here drafts trees: a model grows one from its
distributions (`tree_draft.draft_tree`), n-gram lookup drafts a chain-shaped tree (one-hot q: one
child per node).

A drafter that reads the target (Medusa, EAGLE) declares `reads_target = True`; its session's
`observe_target(features)` then receives the target's final hidden states (k, E) of newly committed
tokens, in order (or, for a drafter naming `target_layers`, those layers' states side by side,
(k, len(target_layers) E): EAGLE-3's low, middle and top features), so that it has seen every
committed token but the last (the generation skeleton, specdec_core.bookkeeping, keeps this invariant
for chains and trees alike).
"""
from array import array
from dataclasses import dataclass, field

import torch
from transformers import PreTrainedModel

from .model import CachedLM, TransformersForward, context_length, vocab_size
from .sampling_config import SamplingConfig, sample, to_probs
from .tree_draft import DraftTree, draft_tree


@dataclass
class Proposal:
    tokens: list[int]  # x_1..x_n, n <= gamma (a model-free drafter may propose fewer, even none)
    q: torch.Tensor  # (n, V) the distributions x_i were drawn from, after the sampling transform
    logits: torch.Tensor | None = None  # (n, V) raw drafter logits, when the drafter is a model
    pass_s: list[float] = field(default_factory=list)  # wall time of each drafter forward pass


class DraftSession:
    """A drafter's state for one generation. Subclasses implement `propose`; the rest is optional and
    declared here with its default, which the core reads instead of probing."""
    passes: int = 0  # forward passes made so far (model-free drafters: always 0)
    # For the trace: the session's cache lengths (at the call, after the rollback to what the context
    # shares, after drafting) of the latest proposal; None for a session without a cache.
    cache_log: tuple[int, int, int] | None = None

    def propose(self, context: list[int], gamma: int, sampling: SamplingConfig,
                generator: torch.Generator, keep_drafting=None) -> Proposal:
        raise NotImplementedError(f"{type(self).__name__} must implement propose")

    def propose_tree(self, context: list[int], shape: tuple[int, ...], sampling: SamplingConfig,
                     generator: torch.Generator, node_budget: int | None = None,
                     max_depth: int | None = None) -> DraftTree:
        """A tree of drafts below the context (only sessions of a drafter whose drafts_trees is True)."""
        raise ValueError(f"{type(self).__name__} cannot draft token trees")

    def keep_tree_path(self, tree: DraftTree, path: list[int]) -> None:
        """The target accepted `path` (nodes from the context down): keep it, drop the rest (default:
        nothing to keep, as for a session that reads everything from the context)."""

    def observe_target(self, features: torch.Tensor) -> None:
        """The target's final hidden states (k, E) of newly committed tokens, in order (its `target_layers`
        side by side where the drafter names them): called only on sessions of a drafter whose
        reads_target is True."""
        raise NotImplementedError(f"{type(self).__name__} reads the target but has no observe_target")


class Drafter:
    """Shared and stateless; `start` gives each generation its own DraftSession. Subclasses set
    `name` and implement `start`; the optional capabilities are declared here with their defaults,
    and a drafter that has one says so on its class (as transformers' `requires_model_outputs`)."""
    name: str = "drafter"
    vocab_size: int | None = None  # None: adapts to any vocabulary
    context_length: int | None = None  # None: unbounded
    reads_target: bool = False  # True: its sessions get observe_target(features) of committed tokens
    target_layers: tuple[int, ...] = ()  # the target's hidden states it reads (model.config.hidden_layers'
    # numbering), side by side; () the final one
    drafts_trees: bool = False  # True: its sessions implement propose_tree and keep_tree_path

    def start(self, vocab: int) -> DraftSession:
        raise NotImplementedError(f"{type(self).__name__} must implement start")

    def check_target(self, target) -> None:
        """Raise ValueError if this drafter cannot draft for `target` (heads trained on another
        model refuse it); the default drafts for any target that shares its vocabulary."""

    def start_batch(self, vocab: int, rows: int) -> "DraftSession | PerRowDraftSessions":
        """A session drafting for `rows` rows at once (specdec_core.batch), answering
        `propose_rows(wants, sampling, generators)` and `retire(rows)`: by default one ordinary session
        per row (a batch of one: its ordinary session, which `propose`s for its one row); a model drafter's
        is one cache of `rows` rows, one pass per draft position."""
        return self.start(vocab) if rows == 1 else PerRowDraftSessions(self, vocab, rows)


class PerRowDraftSessions:
    """A batch's drafts from one ordinary session per row (model-free drafters make no passes to share)."""

    def __init__(self, drafter: Drafter, vocab: int, rows: int):
        self.sessions = [drafter.start(vocab) for _ in range(rows)]

    @property
    def passes(self) -> int:
        return sum(s.passes for s in self.sessions)

    def propose_rows(self, wants: dict[int, tuple[list[int], int]], sampling: SamplingConfig,
                     generators: dict[int, torch.Generator]) -> dict[int, Proposal]:
        """wants: row -> (context, n drafts wanted, n >= 1); each row draws with its own generator."""
        return {r: self.sessions[r].propose(context, n, sampling, generators[r]) for r, (context, n) in wants.items()}

    def retire(self, rows: list[int]) -> None:
        pass


def reads_target(drafter: Drafter) -> bool:
    """Whether the drafter's sessions read the target's hidden states (`observe_target`)."""
    return drafter.reads_target


def target_states(drafter: Drafter | None) -> bool | tuple[int, ...]:
    """The `hidden` argument of the target's passes for this drafter: False (it reads none), True (the
    final hidden state) or the layers it names (`target_layers`)."""
    if drafter is None or not drafter.reads_target:
        return False
    return tuple(drafter.target_layers) or True


def one_hot(tokens: list[int], vocab: int) -> torch.Tensor:
    """(n, V) the greedy q of drafts x_1..x_n: one-hot rows on the drafted tokens."""
    return torch.zeros(len(tokens), vocab).scatter_(-1, torch.tensor(tokens, dtype=torch.long).view(-1, 1), 1.0)


def shared_prefix(fed: list[int], context: list[int]) -> int:
    """How many leading tokens a drafter's cache (`fed`) shares with `context`, leaving at least the
    context's last token to feed (the next draft needs the logits after it)."""
    n = min(len(fed), len(context) - 1)
    if fed[:n] == context[:n]:  # the usual case, settled by one list comparison in C
        return n
    return next(i for i in range(n) if fed[i] != context[i])


# --- a small causal LM as drafter -------------------------------------------------------------------

class ModelDrafter(Drafter):
    """Drafts with any causal LM that shares the target's vocabulary (e.g. a smaller GPT-2)."""
    drafts_trees = True

    def __init__(self, model: PreTrainedModel, name: str = "draft model"):
        self.model = model  # a model wrapped in model.TransformersForward drafts through its own forward
        self.name = name
        self.vocab_size = vocab_size(model)
        self.context_length = context_length(model)

    def start(self, vocab: int) -> "_ModelDraftSession":
        return _ModelDraftSession(CachedLM(self.model))

    def start_batch(self, vocab: int, rows: int) -> "_ModelDraftSession":
        return _ModelDraftSession(CachedLM(self.model, rows=rows))


class _ModelDraftSession(DraftSession):
    """A model drafter's cache: one generation's (row 0: `propose`, trees), or a batch's rows
    (`propose_rows`, one drafter pass per draft position over the rows still drafting)."""

    def __init__(self, lm: CachedLM):
        self.lm = lm
        self.fed: list[list[int]] = [[] for _ in lm.lengths]  # per row: the tokens in the draft model's cache
        # (at the call, after the rollback to what the context shares, after drafting): for the trace
        self.cache_log: tuple[int, int, int] | None = None
        self._slot: dict[int, int] = {}  # this round's tree node -> its number in the cache's tree

    @property
    def passes(self) -> int:
        return self.lm.passes

    def _sync(self, context: list[int], row: int = 0) -> list[int]:
        """Roll the row's cache back to the longest prefix it shares with `context` (keeping at least one
        token to feed, since we need logits after the last one); return the tokens still to feed."""
        fed = self.fed[row]
        common = shared_prefix(fed, context)
        self.lm.rollback(len(fed) - common, row)
        del fed[common:]
        return context[common:]

    def propose(self, context, gamma, sampling, generator, keep_drafting=None) -> Proposal:
        before, kept = len(self.fed[0]), shared_prefix(self.fed[0], context)
        proposal = self.propose_rows({0: (context, gamma)}, sampling, {0: generator}, keep_drafting)[0]
        self.cache_log = (before, kept, len(self.fed[0]))
        return proposal

    def propose_rows(self, wants: dict[int, tuple[list[int], int]], sampling: SamplingConfig,
                     generators: dict[int, torch.Generator], keep_drafting=None) -> dict[int, Proposal]:
        """wants: row -> (context, n drafts wanted, n >= 1); each row draws with its own generator, all
        rows still drafting fed in one pass per draft position. `keep_drafting(drafts, raw logits,
        generator)`, asked before each draft but the first, ends a row's drafting when it says False."""
        feeds = {r: self._sync(context, r) for r, (context, _) in wants.items()}
        tokens = {r: [] for r in wants}
        logit_rows = {r: [] for r in wants}
        q_rows = {r: [] for r in wants}
        fed_passes = dict.fromkeys(wants, 0)
        pass_s: list[float] = []
        going = [r for r, (_, n) in wants.items() if n > 0]
        while going:
            logits = self.lm.feed({r: feeds[r] for r in going}, keep="last")
            pass_s.append(self.lm.last_pass_s)
            still = []
            for r in going:
                self.fed[r] += feeds[r]
                fed_passes[r] += 1
                row = logits[r][0]  # (V,) raw logits for the row's next draft
                if tokens[r] and keep_drafting is not None and not keep_drafting(tokens[r], row, generators[r]):
                    continue  # the policy declines to draft from this distribution (its pass is spent)
                if sampling.greedy:  # q is one-hot on the argmax: built once for all drafts below
                    x = int(row.argmax())
                else:
                    q_rows[r].append(to_probs(row, sampling))
                    x = sample(q_rows[r][-1], generators[r])
                tokens[r].append(x)
                logit_rows[r].append(row)
                feeds[r] = [x]
                if len(tokens[r]) < wants[r][1]:
                    still.append(r)
            going = still
        out = {}
        for r in wants:
            logits = torch.stack(logit_rows[r])  # (n, V), 1 <= n <= wanted
            # q: exactly the rows each x_i was drawn from (greedy: one-hot on each argmax x_i)
            q = one_hot(tokens[r], logits.shape[-1]) if sampling.greedy else torch.stack(q_rows[r])
            out[r] = Proposal(tokens[r], q, logits, pass_s[:fed_passes[r]])
        return out

    def retire(self, rows: list[int]) -> None:
        """A batch's finished rows: never fed again."""
        self.lm.retire(rows)

    def propose_tree(self, context, shape, sampling, generator, node_budget=None, max_depth=None) -> DraftTree:
        """One pass over the context, then one tree pass per level over its new nodes."""
        self._slot, pass_s = {}, []

        def logits_at(tree: DraftTree, nodes: list[int]) -> torch.Tensor:
            if nodes == [-1]:
                feed = self._sync(context)
                logits = self.lm.extend(feed, logits_to_keep=1)  # (1, V)
                self.fed[0] += feed
            else:
                parents = [self._slot[tree.parents[n]] if tree.parents[n] >= 0 else -1 for n in nodes]
                for n in nodes:
                    self._slot[n] = len(self._slot)
                logits = self.lm.extend_tree([tree.tokens[n] for n in nodes], parents)  # (len(nodes), V)
            pass_s.append(self.lm.last_pass_s)
            return logits

        tree = draft_tree(logits_at, shape, sampling, generator, node_budget, max_depth)
        tree.pass_s = pass_s
        return tree

    def keep_tree_path(self, tree: DraftTree, path: list[int]) -> None:
        """Keep the accepted nodes this cache has seen (a prefix of the path)."""
        seen = [n for n in path if n in self._slot]
        if self.lm.tree_start is not None:
            self.lm.keep_path([self._slot[n] for n in seen])
        self.fed[0] += [tree.tokens[n] for n in seen]
        self._slot = {}


# --- model-free drafters ----------------------------------------------------------------------------

class NgramDrafter(Drafter):
    """Prompt lookup: find the latest earlier occurrence of the context's last n tokens (n from
    max_n down to 1) and propose the tokens that followed it. q is one-hot, so the exact rule
    accepts x with probability p(x) and, on rejection, resamples from p with x removed."""
    drafts_trees = True

    def __init__(self, max_n: int = 3, name: str = "n-gram lookup"):
        if max_n < 1:
            raise ValueError(f"max_n must be >= 1, got {max_n}")
        self.max_n = max_n
        self.name = name
        self.vocab_size = None
        self.context_length = None

    def start(self, vocab: int) -> "_NgramSession":
        return _NgramSession(self.max_n, vocab)


@dataclass
class _NgramSession(DraftSession):
    max_n: int
    vocab: int
    passes: int = 0  # model-free: never a forward pass

    def lookup(self, context: list[int], gamma: int) -> list[int]:
        """Up to gamma tokens that followed the most recent earlier match of the context's suffix."""
        # The search runs in C: the context as bytes (4 per token), bytes.rfind for the suffix. A hit
        # at an offset that is not a multiple of 4 straddles two tokens and is skipped.
        hay = array("i", context).tobytes() if max(context, default=0) < 2**31 else None
        for n in range(min(self.max_n, len(context) - 1), 0, -1):
            if hay is None:  # ids too large for 4 bytes: the plain scan
                start = next((s for s in range(len(context) - n - 1, -1, -1)
                              if context[s:s + n] == context[-n:]), None)
            else:
                start, end, needle = None, 4 * (len(context) - 1), hay[-4 * n:]
                while (at := hay.rfind(needle, 0, end)) >= 0:  # the match must leave a token after it
                    if at % 4 == 0:
                        start = at // 4
                        break
                    end = at + 4 * n - 1
            if start is not None:
                return context[start + n:start + n + gamma]
        return []

    def propose(self, context, gamma, sampling, generator, keep_drafting=None) -> Proposal:
        # keep_drafting is not consulted: a lookup has no distribution, so no confidence to lose
        tokens = self.lookup(context, gamma)
        return Proposal(tokens, one_hot(tokens, self.vocab))

    def propose_tree(self, context, shape, sampling, generator, node_budget=None, max_depth=None) -> DraftTree:
        """A lookup has one continuation: a chain-shaped tree, each node's q one-hot on its token."""
        depth = min(len(shape), max_depth if max_depth is not None else len(shape), node_budget or len(shape))
        return chain_tree(self.lookup(context, depth), self.vocab)


class UnigramDrafter(Drafter):
    """A deliberately weak baseline: draws each token from the context's own token frequencies."""
    drafts_trees = True

    def __init__(self, name: str = "unigram (context counts)"):
        self.name = name
        self.vocab_size = None
        self.context_length = None

    def start(self, vocab: int) -> "_UnigramSession":
        return _UnigramSession(vocab)


@dataclass
class _UnigramSession(DraftSession):
    vocab: int
    passes: int = 0

    def propose(self, context, gamma, sampling, generator, keep_drafting=None) -> Proposal:
        counts = torch.bincount(torch.tensor(context, dtype=torch.long), minlength=self.vocab).float()
        # Counts act as logits-free probabilities; the sampling transform needs logits, so use log-counts.
        row = torch.log(counts)  # (V,), -inf where unseen
        q_row = to_probs(row, sampling)
        tokens = []
        for i in range(gamma):
            if i > 0 and keep_drafting is not None and not keep_drafting(tokens, row, generator):
                break
            tokens.append(int(q_row.argmax()) if sampling.greedy else sample(q_row, generator))
        n = len(tokens)
        return Proposal(tokens, q_row.expand(n, -1), row.expand(n, -1))

    def propose_tree(self, context, shape, sampling, generator, node_budget=None, max_depth=None) -> DraftTree:
        """A tree grown from the counts of the context and the path down to each node."""
        def logits_at(tree: DraftTree, nodes: list[int]) -> torch.Tensor:
            return torch.stack([torch.log(torch.bincount(torch.tensor(context + tree.path_tokens(n), dtype=torch.long),
                                                         minlength=self.vocab).float()) for n in nodes])

        return draft_tree(logits_at, shape, sampling, generator, node_budget, max_depth)


def chain_tree(tokens: list[int], vocab: int) -> DraftTree:
    """A chain of drafts as a tree (node i the child of node i - 1), each drawn from a one-hot q: for
    drafters without a distribution, whose tree has one branch."""
    tree = DraftTree()
    for i, x in enumerate(tokens):
        tree.q[i - 1] = one_hot([x], vocab)[0]
        tree.add(i - 1, x, 1.0)
    return tree


def as_drafter(drafter) -> Drafter:
    """Accept a Drafter, or a plain transformers causal LM (wrapped as a ModelDrafter; so is one wrapped
    in model.TransformersForward)."""
    if isinstance(drafter, (PreTrainedModel, TransformersForward)):
        return ModelDrafter(drafter)
    if isinstance(drafter, Drafter):
        return drafter
    raise TypeError(f"drafter must be a transformers causal LM or a Drafter (a subclass of "
                    f"specdec_core.drafters.Drafter), got {type(drafter).__name__}")
