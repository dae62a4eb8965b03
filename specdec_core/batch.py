"""Batched decoding: many prompts, ONE target pass per round for the whole batch.

Each row is its own generation (the skeleton's `generation.Generation`, bookkeeping alone: its prompt,
tokens, generator, rounds and stop); what rows share is
the target's forward pass (specdec_core.model.BatchLM: padding, attention masks, per-row
positions and per-row rollback) and, with a model drafter, the drafter's passes. A round:
  1. every running row asks for min(gamma, tokens left - 1) drafts; the drafter drafts all rows
     together, one pass per draft position over the rows still drafting;
  2. the target scores every row's last committed token and its drafts in one pass;
  3. each row's drafts are judged by `sampler.verify`, the one exact rule, with the row's own
     generator; each row rolls back its own rejected drafts and commits its own tokens;
  4. rows that reach end of text or max_new_tokens leave the batch.
With `drafter=None` each round is plain decoding: one token per row per pass.

Seeds: row i draws with its own generator seeded `seed + i`, the same draws in the same order as
`speculative_generate(..., seed=seed + i)` (drafts, then the uniforms, then the corrective or bonus
token), so row i is distributed as that single call, and identical to it wherever the batched pass
gives the same probabilities (greedy rows always compare equal by test).
"""
import time
from dataclasses import dataclass, field

import torch

from .checks import MAX_GAMMA
from .drafters import Drafter, ModelDrafter, Proposal, as_drafter, reads_target, shared_prefix
from .generation import Generation, as_model, check_inputs, make_generator
from .model import BatchLM, vocab_size
from .sampler import verify
from .sampling import SamplingConfig, sample, to_probs
from .trace import GenerationResult

MAX_BATCH = 64  # rows per batch: a bound for a shared server (the pass's memory grows with it)


@dataclass
class BatchResult:
    results: list[GenerationResult]  # one per prompt, in the given order
    target_passes: int  # target passes while decoding, for the whole batch (the prefill not counted)
    draft_passes: int  # drafter passes for the whole batch (its reading of the prompts included)
    seconds: float  # wall time of the whole batch, prefill included
    prefill_s: float  # the target's pass over every prompt
    first_token_s: float  # from the start until every row holds its first new token
    rounds: int
    draft_prefill_s: float = 0.0  # the drafter's first pass, which reads every prompt (0 without a model drafter)
    target_pass_s: list[float] = field(default_factory=list)  # every decoding target pass

    @property
    def total_s(self) -> float:
        """The batch's wall time, named as a GenerationResult names it (stats.decode_seconds reads it)."""
        return self.seconds

    @property
    def tokens(self) -> int:
        return sum(len(r.tokens) for r in self.results)

    @property
    def tokens_per_s(self) -> float:
        """New tokens of all rows per second of the whole batch."""
        return self.tokens / self.seconds if self.seconds > 0 else float("nan")


# --- inputs --------------------------------------------------------------------------------------------

def check_batch(target, drafter, prompts, gamma, max_new_tokens, sampling, seed) -> list[list[int]]:
    """Every argument checked before any pass, each prompt by the skeleton's own checks, a bad one named
    by its index ("prompt 2: ..."). Returns the prompts as lists of ints."""
    if isinstance(prompts, torch.Tensor) or not isinstance(prompts, (list, tuple)):
        raise ValueError(f"prompts must be a list of token-id lists, got {type(prompts).__name__}")
    if not prompts:
        raise ValueError("prompts is empty: pass at least one prompt")
    if len(prompts) > MAX_BATCH:
        raise ValueError(f"{len(prompts)} prompts exceed the batch bound of {MAX_BATCH}")
    if isinstance(gamma, bool) or not isinstance(gamma, int) or not 1 <= gamma <= MAX_GAMMA:
        raise ValueError(f"gamma must be an integer in [1, {MAX_GAMMA}], got {gamma!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= 2**63 - len(prompts):
        raise ValueError(f"seed must be an integer in [0, 2**63 - {len(prompts)}] (row i uses seed + i), got {seed!r}")
    if drafter is not None and reads_target(drafter):  # the batched pass returns no hidden states yet
        raise ValueError(f"{drafter.name} reads the target's hidden states, which batched decoding does not "
                         "hand over yet: use speculative_generate or tree_generate for it")
    out = []
    for i, prompt in enumerate(prompts):
        try:
            out.append(check_inputs(target, prompt, max_new_tokens, sampling, drafter))
        except (TypeError, ValueError) as err:
            raise ValueError(f"prompt {i}: {err}") from None
    return out


# --- the drafter, batched -------------------------------------------------------------------------------

class BatchModelDraftSession:
    """A model drafter for all rows at once: one drafter pass per draft position over the rows still
    drafting, each row's cache synced to its own context first (as a single session's, by `drafters.shared_prefix`)."""

    def __init__(self, drafter: ModelDrafter, rows: int):
        self.lm = BatchLM(drafter.model, rows)
        self.fed: list[list[int]] = [[] for _ in range(rows)]

    @property
    def passes(self) -> int:
        return self.lm.passes

    def _sync(self, row: int, context: list[int]) -> list[int]:
        fed = self.fed[row]
        common = shared_prefix(fed, context)
        self.lm.rollback(row, len(fed) - common)
        del fed[common:]
        return context[common:]

    def propose(self, wants: dict[int, tuple[list[int], int]], sampling: SamplingConfig,
                generators: dict[int, torch.Generator]) -> dict[int, Proposal]:
        """wants: row -> (context, n drafts wanted, n >= 1). Each row draws with its own generator."""
        feeds = {r: self._sync(r, context) for r, (context, _) in wants.items()}
        tokens = {r: [] for r in wants}
        q_rows = {r: [] for r in wants}
        logit_rows = {r: [] for r in wants}
        pass_s: list[float] = []
        for step in range(max(n for _, n in wants.values())):
            going = {r: feeds[r] for r, (_, n) in wants.items() if step < n}
            logits = self.lm.extend(going, keep="last")
            pass_s.append(self.lm.last_pass_s)
            for r, feed in going.items():
                self.fed[r] += feed
                row = logits[r][0]  # (V,)
                if sampling.greedy:
                    x = int(row.argmax())
                else:
                    q_rows[r].append(to_probs(row, sampling))
                    x = sample(q_rows[r][-1], generators[r])
                tokens[r].append(x)
                logit_rows[r].append(row)
                feeds[r] = [x]
        out = {}
        for r in wants:
            logits = torch.stack(logit_rows[r])  # (n, V)
            q = (torch.zeros_like(logits).scatter_(-1, torch.tensor(tokens[r]).view(-1, 1), 1.0) if sampling.greedy
                 else torch.stack(q_rows[r]))
            out[r] = Proposal(tokens[r], q, logits, pass_s[:len(tokens[r])])
        return out

    def retire(self, rows: list[int]) -> None:
        self.lm.retire(rows)


def start_batch(drafter: Drafter, vocab: int, rows: int):
    """The drafter's batched session: the batched model session (one pass for all rows) for a model
    drafter, else the drafter's own `start_batch` (by default one ordinary session per row)."""
    if isinstance(drafter, ModelDrafter):
        return BatchModelDraftSession(drafter, rows)
    return drafter.start_batch(vocab, rows)


# --- the loop -------------------------------------------------------------------------------------------

@torch.inference_mode()
def batch_generate(target, drafter, prompts, gamma: int = 4, max_new_tokens: int = 40,
                   sampling: SamplingConfig = SamplingConfig(), seed: int = 0,
                   eos_token_id: int | None | str = "model") -> BatchResult:
    """Decode every prompt, one target pass per round for the whole batch; `drafter=None` is batched
    plain decoding, else speculative decoding with draft length `gamma`. Every row is distributed as
    its prompt's own decoding (token-identical when greedy), whatever its neighbours."""
    target = as_model(target, "target")
    drafter = None if drafter is None else as_drafter(drafter)
    prompts = check_batch(target, drafter, prompts, gamma, max_new_tokens, sampling, seed)
    eos = target.config.eos_token_id if eos_token_id == "model" else eos_token_id
    vocab, B = vocab_size(target), len(prompts)

    start = time.perf_counter()
    rows = [Generation(p, max_new_tokens, *make_generator(seed + i), eos, drafter=drafter,
                       start=start)
            for i, p in enumerate(prompts)]
    lm = BatchLM(target, B)
    lm.extend({i: p[:-1] for i, p in enumerate(prompts)}, keep=None)  # the cache holds all but the last token
    prefill_passes, prefill_s = lm.passes, time.perf_counter() - start
    session = start_batch(drafter, vocab, B) if drafter is not None else None
    results: list[GenerationResult | None] = [None] * B
    first_token_s, n_rounds, pass_s, draft_prefill_s = None, 0, [], 0.0

    while running := [i for i, g in enumerate(rows) if results[i] is None]:
        wants = {i: (rows[i].context, rows[i].room(gamma)) for i in running} if session else {}
        wants = {i: w for i, w in wants.items() if w[1] > 0}
        proposals = session.propose(wants, sampling, {i: rows[i].generator for i in wants}) if wants else {}
        if not n_rounds and proposals:
            draft_prefill_s = (next(iter(proposals.values())).pass_s or [0.0])[0]  # its first pass reads the prompts
        drafts = {i: proposals[i].tokens[:wants[i][1]] if i in proposals else [] for i in running}
        logits = lm.extend({i: [rows[i].context[-1]] + drafts[i] for i in running}, keep="all")  # ONE pass
        pass_s.append(lm.last_pass_s)
        for i in running:
            g, x = rows[i], drafts[i]
            g.pass_s.append(lm.last_pass_s)
            p = to_probs(logits[i], sampling)  # (n + 1, V)
            if session is None:
                token = int(p[0].argmax()) if sampling.greedy else sample(p[0], g.generator)
                g.end_round(None, g.commit([], token, "target")[1])
            else:
                q = proposals[i].q[:len(x)] if x else torch.zeros(0, vocab)
                v = verify(p, q, x, sampling, g.generator, target_logits=logits[i])
                lm.rollback(i, len(x) - v.n_accepted)  # this row's rejected drafts only
                new, hit_eos = g.commit(x[:v.n_accepted], v.next_token, v.next_kind)
                drafted = len(proposals[i].pass_s) if i in proposals else 0
                g.draft_passes += drafted
                g.end_round(g.round_record(
                    new, x, v.n_accepted, v, v.q_x, v.p_x, v.accept_prob, v.uniforms,
                    proposals[i].pass_s if i in proposals else [], drafted, lm.last_pass_s, gamma=gamma), hit_eos)
            if not g.running:
                g.prefill_s = prefill_s
                results[i] = g.result(gamma=gamma if drafter is not None else None)
        done = [i for i in running if results[i] is not None]
        lm.retire(done)
        if session is not None:
            session.retire(done)
        n_rounds += 1
        if first_token_s is None:
            first_token_s = time.perf_counter() - start

    return BatchResult(results, lm.passes - prefill_passes, session.passes if session else 0,
                       time.perf_counter() - start, prefill_s, first_token_s, n_rounds, target_pass_s=pass_s,
                       draft_prefill_s=draft_prefill_s)
