"""The skeleton: what every decoder here does around its own drafting and verification (the decoding
loops that drive it are speculative.py and tree.py; the logits -> distribution transform is sampling_config.py).

nanoGPT's `generate` is one short loop that every sampling variant goes through; ours is this
bookkeeping, which plain decoding, speculative chains (speculative.py), token trees (tree.py), the
exactness lab's replay and batched decoding all drive. It owns the input checks, the prompt's
prefill, the round record, the end of a round (eos, max_new_tokens, max_rounds) and the result; each
decoder keeps only its drafting and its verification, the paper's two steps:

    g = begin(target, request, drafter=...)
    while g.running:
        ...draft, then one target pass: logits = g.score([g.context[-1]] + drafts)...
        ...judge: n accepted drafts, then a corrective or bonus token...
        g.keep(list(range(n + 1)))            # the cache keeps the last token and the accepted drafts
        new, hit_eos = g.commit(drafts[:n], token, kind)
        g.end_round(RoundTrace(...), hit_eos, on_round)
    return g.result(...)

Invariant: the target's cache holds every committed token but the last, which the next pass feeds.
A drafter that reads the target (`reads_target`) has seen the target's features of exactly those
tokens: after the prefill, and after each `commit`.
"""
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from transformers import PreTrainedModel

from .drafters import Drafter, DraftSession, as_drafter, target_states
from .model import CachedLM, TransformersForward, context_length, vocab_size
from .request import GenerationRequest
from .sampling_config import SamplingConfig
from .trace import GenerationResult, RoundTrace

STOP_MAX_NEW_TOKENS, STOP_EOS, STOP_MAX_ROUNDS = "max_new_tokens", "eos", "max_rounds"  # GenerationResult.stop_reason


# --- inputs -----------------------------------------------------------------------------------------

def as_model(model, role: str) -> PreTrainedModel:
    """The model itself (or a model wrapped in model.TransformersForward), or TypeError naming its
    role ("target")."""
    if not isinstance(model, (PreTrainedModel, TransformersForward)):
        raise TypeError(f"{role} must be a transformers causal LM, got {type(model).__name__}")
    return model


def make_generator(seed: int | None) -> tuple[torch.Generator, int]:
    """A private generator for one call (never the global RNG: many sessions share this process)."""
    if seed is None:
        seed = int.from_bytes(os.urandom(7), "little")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise ValueError(f"seed must be an integer in [0, 2**63), got {seed!r}")
    return torch.Generator().manual_seed(seed), seed


def check_inputs(target, prompt_ids, max_new_tokens: int, sampling, drafter: Drafter | None = None,
                 max_rounds: int | None = None) -> list[int]:
    """Validate the arguments every generation shares; return the prompt as a list of ints."""
    if isinstance(prompt_ids, torch.Tensor):
        if prompt_ids.dim() != 1:
            raise ValueError(f"prompt_ids must be 1-D, got shape {tuple(prompt_ids.shape)}")
        prompt_ids = prompt_ids.tolist()
    prompt = [int(t) for t in prompt_ids]
    if not prompt:
        raise ValueError("prompt_ids is empty: pass at least one token (e.g. [tokenizer.bos_token_id] on purpose)")
    vocab = vocab_size(target)
    if min(prompt) < 0 or max(prompt) >= vocab:
        raise ValueError(f"prompt_ids must lie in [0, {vocab}), got values {min(prompt)}..{max(prompt)}")
    if drafter is not None and drafter.vocab_size is not None and drafter.vocab_size != vocab:
        raise ValueError(f"drafter vocabulary ({drafter.vocab_size}) differs from the target's ({vocab}): "
                         "the drafter must share the target's tokenizer")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be an integer >= 1, got {max_new_tokens!r}")
    window = context_length(target)
    if drafter is not None and drafter.context_length is not None:
        window = min(window, drafter.context_length)
    if len(prompt) + max_new_tokens > window:
        raise ValueError(f"prompt ({len(prompt)} tokens) + max_new_tokens ({max_new_tokens}) exceeds the "
                         f"context window of {window} tokens: shorten the prompt or ask for fewer tokens")
    if not isinstance(sampling, SamplingConfig):
        raise ValueError(f"sampling must be a SamplingConfig, got {type(sampling).__name__}")
    if max_rounds is not None and (isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1):
        raise ValueError(f"max_rounds must be an integer >= 1 or None, got {max_rounds!r}")
    return prompt


# --- the bookkeeping --------------------------------------------------------------------------------

@dataclass
class Generation:
    """One generation's state between rounds. `begin` makes one around the target's cache; a batch makes
    one per row of one shared cache (`row`), each counting its share of the batched drafter's passes in
    `draft_passes`, no session needed; one made with lm=None is bookkeeping alone, as the lab's replay
    uses."""
    prompt: list[int]
    max_new_tokens: int
    generator: torch.Generator | None = None
    seed: int | None = None
    eos: int | None = None
    max_rounds: int | None = None
    lm: CachedLM | None = None  # the target, with every committed token but the last in its cache
    drafter: Drafter | None = None
    session: DraftSession | None = None  # the drafter's state for this generation
    start: float = field(default_factory=time.perf_counter)  # when the target began reading the prompt
    prefill_s: float = 0.0
    draft_passes: int = 0  # bookkeeping alone: the draft passes made for it (a session counts its own)
    row: int = 0  # its row of `lm` (a batch's generations share one CachedLM, a row each)
    context: list[int] = field(init=False)  # prompt + tokens
    tokens: list[int] = field(default_factory=list)  # the new tokens
    kinds: list[str] = field(default_factory=list)  # per new token: "target", "accepted", "corrective", "bonus"
    rounds: list[RoundTrace] = field(default_factory=list)
    pass_s: list[float] = field(default_factory=list)  # wall time of every decoding target pass
    stop: str = STOP_MAX_NEW_TOKENS
    scored: int = 0  # tokens fed by the latest scored pass
    features: torch.Tensor | None = field(default=None, repr=False)  # (scored, E) when the drafter reads the target

    def __post_init__(self):
        self.context = list(self.prompt)

    @property
    def tokens_left(self) -> int:
        return self.max_new_tokens - len(self.tokens)

    @property
    def running(self) -> bool:
        """Tokens still wanted, rounds still allowed, and no eos yet."""
        return (self.stop != STOP_EOS and self.tokens_left > 0
                and (self.max_rounds is None or len(self.rounds) < self.max_rounds))

    def room(self, planned: int) -> int:
        """How many drafts this round may make: never so many that the round overshoots max_new_tokens
        (a round adds its accepted drafts and one more token)."""
        return max(0, min(planned, self.tokens_left - 1))

    # One verification pass of the target, and what its cache keeps of it.
    def score(self, tokens: list[int], parents: list[int] | None = None) -> torch.Tensor:
        """ONE target pass over `tokens` (the last committed token, then drafts) -> logits (k, V). With
        `parents` the tokens are a tree (lm.extend_tree: token 0 is the root, parents[0] = -1)."""
        if parents is None:
            return score_together([self], [tokens])[0]
        hidden = self.session is not None and target_states(self.drafter)
        out = self.lm.extend_tree(tokens, parents, hidden=hidden)
        logits, self.features = out if hidden else (out, None)
        self.scored = len(tokens)
        self.pass_s.append(self.lm.last_pass_s)
        return logits

    def keep(self, rows: list[int]) -> None:
        """Keep in the target's cache only `rows` of the latest pass: a prefix for a chain (the last
        committed token and the accepted drafts), the root-to-node path for a tree. A drafter that reads
        the target sees these rows' features at `commit`: the committed tokens the cache now holds."""
        if self.lm.tree_start is not None:
            self.lm.keep_path(rows)
        else:
            if rows != list(range(len(rows))):
                raise ValueError(f"a chain keeps a prefix of its rows, got {rows}")
            self.lm.rollback(self.scored - len(rows), self.row)  # forget the rejected drafts' keys and values
        if self.features is not None:
            self.features = self.features[rows]

    def commit(self, accepted: list[int], next_token: int, next_kind: str) -> tuple[list[int], bool]:
        """Append a round's tokens (its accepted drafts and the token after them; plain decoding: no
        drafts, kind "target"), cut after an eos. Returns the tokens added and whether eos came."""
        new = accepted + [next_token]
        hit_eos = self.eos is not None and self.eos in new
        if hit_eos:
            new = new[:new.index(self.eos) + 1]
            self.stop = STOP_EOS
        self.tokens += new
        self.kinds += (["accepted"] * len(accepted) + [next_kind])[:len(new)]
        self.context += new
        if self.features is not None:  # the last committed token before the round, and the new ones but the last
            self.session.observe_target(self.features[:len(new)])
            self.features = None
        return new, hit_eos

    def round_record(self, new: list[int], drafts: list[int], n_accepted: int, verdict, q_draft, p_draft,
                     accept_prob, uniforms, draft_pass_s: list[float], draft_passes: int, target_pass_s: float,
                     **more) -> RoundTrace:
        """The round's record, built here for chains, trees and batches alike, after `commit` added the
        round's tokens `new`: where it sits in the generation, the drafts and how each was judged (q_i(x_i),
        p_i(x_i), acceptance chances, uniforms or None: tensors or lists), the verdict's next token, and
        the passes. `more` adds what only the decoder knows (gamma, draft_stop, caches, the tree)."""
        floats = lambda xs: xs.tolist() if isinstance(xs, torch.Tensor) else list(xs)
        return RoundTrace(
            index=len(self.rounds), position=len(self.tokens) - len(new), draft_tokens=list(drafts),
            n_accepted=n_accepted, next_token=verdict.next_token, next_kind=verdict.next_kind, emitted=new,
            q_draft=floats(q_draft), p_draft=floats(p_draft), accept_prob=floats(accept_prob),
            uniforms=None if uniforms is None else floats(uniforms), draft_pass_s=draft_pass_s,
            target_pass_s=target_pass_s, draft_passes=draft_passes, next_prob=verdict.next_prob, **more)

    def end_round(self, round_trace: RoundTrace | None, hit_eos: bool, on_round: Callable | None = None) -> None:
        """Record a round (None: plain decoding keeps no rounds) and tell the caller's callback."""
        if round_trace is not None:
            self.rounds.append(round_trace)
            if on_round is not None:
                on_round(round_trace)
        if hit_eos:
            self.stop = STOP_EOS

    def result(self, **fields) -> GenerationResult:
        """The GenerationResult; `fields` adds what only the caller knows (gamma, policy, tree, ...)."""
        if self.stop != STOP_EOS and self.tokens_left > 0:
            self.stop = STOP_MAX_ROUNDS
        fields.setdefault("drafter", self.drafter.name if self.drafter is not None else None)
        drafted = self.session.passes if self.session is not None else self.draft_passes
        return GenerationResult(self.tokens, len(self.pass_s), drafted,
                                self.rounds, self.kinds, self.pass_s, self.prefill_s,
                                time.perf_counter() - self.start, self.stop, self.seed,
                                prompt_len=len(self.prompt), **fields)


def score_together(gens: list[Generation], feeds: list[list[int]]) -> list[torch.Tensor]:
    """ONE target pass for generations that share one cache, each fed its own tokens in its own row (the
    last committed token, then drafts) -> logits (k, V) per generation. One generation is a batch of one;
    a drafter that reads the target gets the fed tokens' features (a generation of its own only)."""
    lm = gens[0].lm
    hidden = len(gens) == 1 and gens[0].session is not None and target_states(gens[0].drafter)
    out = lm.feed({g.row: f for g, f in zip(gens, feeds)}, "all", hidden)
    logits = []
    for g, f in zip(gens, feeds):
        row, g.features = out[g.row] if hidden else (out.get(g.row), None)
        g.scored = len(f)
        g.pass_s.append(lm.last_pass_s)
        logits.append(row)
    return logits


def begin(target, request: GenerationRequest, *, drafter=None, max_rounds: int | None = None) -> Generation:
    """Check the arguments, make the seeded generator, start the drafter's session, and let the target
    read the prompt (all of it but the last token, which the first pass feeds). `eos_token_id="model"`
    takes the target's own. A drafter that reads the target sees the prompt's features."""
    target = as_model(target, "target")
    drafter = as_drafter(drafter) if drafter is not None else None
    if drafter is not None:
        drafter.check_target(target)  # heads trained on one target refuse another
    max_new_tokens = request.max_new_tokens
    prompt = check_inputs(target, request.prompt_ids, max_new_tokens, request.sampling, drafter, max_rounds)
    generator, seed = make_generator(request.seed)
    eos = target.config.eos_token_id if request.eos_token_id == "model" else request.eos_token_id
    session = drafter.start(vocab_size(target)) if drafter is not None else None
    start = time.perf_counter()
    lm = CachedLM(target)
    features = lm.prefill(prompt[:-1], hidden=session is not None and target_states(drafter))
    prefill_s = time.perf_counter() - start
    if features is not None:
        session.observe_target(features)
    return Generation(prompt, max_new_tokens, generator, seed, eos, max_rounds, lm, drafter, session, start, prefill_s)
