"""Batched decoding: many prompts, ONE target pass per round for the whole batch.

Each row is its own generation (a `bookkeeping.Generation`: its prompt, tokens, generator, rounds and
stop), on its own row of one shared target cache (a specdec_core.model.CachedLM of B rows, each with
its own length and rollback), as a chain's generation is on the one row of its own. The loop is
`speculative.rounds`, the one `speculative_generate` runs over a batch of one; here over B rows with a
constant gamma. A round:
  1. every running row asks for min(gamma, tokens left - 1) drafts; the drafter drafts all rows
     together (a model drafter: one pass per draft position over the rows still drafting);
  2. the target scores every row's last committed token and its drafts in one pass
     (`bookkeeping.score_together`, which scores a chain's one row too);
  3. each row's drafts are judged by `speculative.judge`, the chain's own steps 3 and 4 (the one exact
     rule, with the row's own generator), and recorded as a chain's round is (without the top entries);
     each row rolls back its own rejected drafts and commits its own tokens;
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

from .bookkeeping import Generation, as_model, check_inputs, make_generator
from .checks import MAX_GAMMA
from .drafters import as_drafter, reads_target
from .model import CachedLM, vocab_size
from .policies import Constant
from .sampling_config import SamplingConfig
from .speculative import rounds
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
    lm = CachedLM(target, rows=B)
    rows = [Generation(p, max_new_tokens, *make_generator(seed + i), eos, lm=lm, drafter=drafter, start=start, row=i)
            for i, p in enumerate(prompts)]
    lm.feed({i: p[:-1] for i, p in enumerate(prompts)}, keep=None)  # the cache holds all but the last token
    prefill_passes, prefill_s = lm.passes, time.perf_counter() - start
    session = drafter.start_batch(vocab, B) if drafter is not None else None
    results: list[GenerationResult | None] = [None] * B
    first_token_s, pass_s = None, []

    for stopped in rounds(rows, session, Constant(gamma), sampling):  # ONE target pass per round
        pass_s.append(lm.last_pass_s)
        for g in stopped:
            g.prefill_s = prefill_s
            results[g.row] = g.result(gamma=gamma if drafter is not None else None)
        if first_token_s is None:
            first_token_s = time.perf_counter() - start

    # the drafter's first pass reads the prompts: the first pass of round 0
    draft_prefill_s = next((g.rounds[0].draft_pass_s[0] for g in rows if g.rounds and g.rounds[0].draft_pass_s), 0.0)
    return BatchResult(results, lm.passes - prefill_passes, session.passes if session else 0,
                       time.perf_counter() - start, prefill_s, first_token_s, len(pass_s), target_pass_s=pass_s,
                       draft_prefill_s=draft_prefill_s)
