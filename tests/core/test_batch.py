"""Batched decoding is exact per row: greedy rows are token-identical to their prompt's own greedy
decoding whatever the neighbours; sampled rows follow the target's exact distribution over three
tokens (chi-square) with other prompts in the batch; a batch whose rows share one rollback fails
both; seeds reproduce; bad input is refused before any pass, naming the prompt at fault."""
import pytest
import torch

from specdec_core import (
    GREEDY,
    MAX_BATCH,
    ModelDrafter,
    NgramDrafter,
    SamplingConfig,
    autoregressive_generate,
    batch_generate,
    speculative_generate,
)
from specdec_core import batch as batch_module
from specdec_core.model import CachedLM, with_forward
from tests.conftest import tiny_gpt2
from tests.core.exactness import chi_square_pvalue, exact_distribution

PROMPTS = [[1, 2, 3], [5], [7, 8, 9, 10, 11, 12, 13], [4, 4], [30, 2, 30, 2, 30]]  # ragged


@pytest.fixture(scope="module")
def lean_pair():
    """Plain (not memoized) GPT-2s, so that both the lean batched pass and transformers' forward run."""
    return (tiny_gpt2(10, vocab=40, n_layer=2, n_embd=32, n_positions=128, spread=0.3),
            tiny_gpt2(11, vocab=40, n_embd=16, n_positions=128, spread=0.3))


class SharedRollbackLM(CachedLM):
    """Broken on purpose: the batch keeps one rollback for all rows, the largest any row asked for
    (as a batch whose rows share one cache length would crop them all to the shortest)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.pending: list[int] = []

    def rollback(self, n, row=0):
        self.pending.append(row)
        self.shared = max(n, getattr(self, "shared", 0)) if len(self.pending) > 1 else n

    def feed(self, feeds, keep="all", hidden=False):
        for row in self.pending:
            if self.live[row]:
                super().rollback(min(self.shared, self.lengths[row]), row)
        self.pending = []
        return super().feed(feeds, keep, hidden)


@pytest.fixture
def shared_rollback(monkeypatch):
    monkeypatch.setattr(batch_module, "CachedLM", SharedRollbackLM)


# --- the batched pass ----------------------------------------------------------------------------------

@pytest.mark.parametrize("forward", ["core", "transformers"])
def test_batched_pass_gives_each_rows_own_logits(lean_pair, forward):
    target, _ = lean_pair
    lm = CachedLM(target, forward, rows=len(PROMPTS))
    lm.feed({i: p[:-1] for i, p in enumerate(PROMPTS)}, keep=None)
    feeds = {0: [3, 9, 9], 1: [5], 2: [13, 1], 4: [30, 7, 7, 7]}  # row 3 sits this pass out
    got = lm.feed(feeds, keep="all")
    lm.rollback(2, 4)  # row 4 keeps [30, 7]
    again = lm.feed({4: [8], 3: [4]}, keep="last")
    for i, feed in feeds.items():
        one = CachedLM(target)
        one.prefill(PROMPTS[i][:-1])
        torch.testing.assert_close(got[i], one.extend(feed), atol=1e-5, rtol=1e-4)
    one = CachedLM(target)
    one.prefill(PROMPTS[4][:-1] + [30, 7])
    torch.testing.assert_close(again[4], one.extend([8])[-1:], atol=1e-5, rtol=1e-4)
    one = CachedLM(target)
    one.prefill(PROMPTS[3][:-1])
    torch.testing.assert_close(again[3], one.extend([4])[-1:], atol=1e-5, rtol=1e-4)


# --- greedy: token-identical per row --------------------------------------------------------------------

@pytest.mark.parametrize("forward", ["core", "transformers"])
@pytest.mark.parametrize("drafter", ["plain", "model", "ngram", "target as drafter"])
@pytest.mark.parametrize("eos", [None, 3])
def test_greedy_rows_match_their_own_decoding(lean_pair, forward, drafter, eos):
    target, draft = lean_pair
    on = with_forward(target, forward)
    d = {"plain": None, "model": ModelDrafter(with_forward(draft, forward)), "ngram": NgramDrafter(),
         "target as drafter": ModelDrafter(on)}[drafter]
    batch = batch_generate(on, d, PROMPTS, gamma=3, max_new_tokens=24, sampling=GREEDY, eos_token_id=eos)
    for prompt, row in zip(PROMPTS, batch.results, strict=True):
        alone = autoregressive_generate(target, prompt, 24, GREEDY, eos_token_id=eos)
        assert row.tokens == alone.tokens
        assert row.stop_reason == alone.stop_reason
    if eos is not None:  # rows finish on their own: one row stops at end of text, the others run on
        assert {r.stop_reason for r in batch.results} == {"eos", "max_new_tokens"}
    # ONE target pass per round for the whole batch; a model drafter drafts all rows in each of its passes
    assert batch.target_passes == batch.rounds == max(r.target_passes for r in batch.results)
    if drafter in ("model", "target as drafter"):
        assert 0 < batch.draft_passes <= 3 * batch.rounds < sum(r.draft_passes for r in batch.results)
    if drafter == "target as drafter":  # every draft accepted: gamma + 1 tokens a pass
        assert batch.target_passes == -(-24 // 4)


def test_a_row_alone_and_in_a_batch_agree(lean_pair):
    target, draft = lean_pair
    alone = batch_generate(target, draft, [PROMPTS[2]], gamma=4, max_new_tokens=30, sampling=GREEDY)
    crowd = batch_generate(target, draft, PROMPTS, gamma=4, max_new_tokens=30, sampling=GREEDY)
    assert alone.results[0].tokens == crowd.results[2].tokens


def test_shared_rollback_breaks_greedy_identity(lean_pair, shared_rollback):
    target, _ = lean_pair
    batch = batch_generate(target, NgramDrafter(), PROMPTS, gamma=4, max_new_tokens=24, sampling=GREEDY)
    differ = [row.tokens != autoregressive_generate(target, p, 24, GREEDY).tokens
              for p, row in zip(PROMPTS, batch.results)]
    assert any(differ)


# --- sampling: distributed as the target, per row -------------------------------------------------------

PROMPT = [1, 2, 3, 1, 2]
NEIGHBOURS = [[4], [5, 6, 7, 0, 1, 2, 3], [2, 2]]  # other prompts in the same batch
LENGTH = 3  # with gamma = 2 a round can accept, reject or earn a bonus
N_BATCHES = 700  # x 3 rows of PROMPT per batch


@pytest.fixture(scope="module")
def vocab8_pair():
    # a one-layer target: its next token depends on the whole context, so a wrong cache shows
    return tiny_gpt2(0), tiny_gpt2(1)


def batched_samples(target, drafter, sampling) -> list[tuple]:
    prompts = [PROMPT, NEIGHBOURS[0], PROMPT, NEIGHBOURS[1], PROMPT, NEIGHBOURS[2]]
    out = []
    for b in range(N_BATCHES):
        batch = batch_generate(target, drafter, prompts, gamma=2, max_new_tokens=LENGTH, sampling=sampling,
                               seed=len(prompts) * b)
        out += [tuple(batch.results[i].tokens) for i in (0, 2, 4)]
    return out


SAMPLINGS = {"temperature 1": SamplingConfig(1.0), "temperature 0.7, top-k 4": SamplingConfig(0.7, top_k=4)}


@pytest.mark.slow  # 2100 samples from 700 batches a test
@pytest.mark.parametrize("name", SAMPLINGS)
def test_speculative_rows_follow_the_target(vocab8_pair, name):
    target, draft = vocab8_pair
    sampling = SAMPLINGS[name]
    p_value = chi_square_pvalue(batched_samples(target, draft, sampling), exact_distribution(target, PROMPT, LENGTH, sampling))
    assert p_value > 1e-3, f"{name}: chi-square p = {p_value:.2e}"


@pytest.mark.slow
def test_plain_rows_follow_the_target(vocab8_pair):
    target, _ = vocab8_pair
    sampling = SamplingConfig(1.0)
    p_value = chi_square_pvalue(batched_samples(target, None, sampling), exact_distribution(target, PROMPT, LENGTH, sampling))
    assert p_value > 1e-3, f"chi-square p = {p_value:.2e}"


@pytest.mark.slow
def test_shared_rollback_fails_the_chi_square(vocab8_pair, shared_rollback):
    target, draft = vocab8_pair
    sampling = SamplingConfig(1.0)
    p_value = chi_square_pvalue(batched_samples(target, draft, sampling), exact_distribution(target, PROMPT, LENGTH, sampling))
    assert p_value < 1e-3, f"the broken batch passed: chi-square p = {p_value:.2e}"


# --- seeds ----------------------------------------------------------------------------------------------

def test_seeds_reproduce_and_row_i_draws_as_seed_plus_i(lean_pair):
    target, draft = lean_pair
    sampling = SamplingConfig(1.0)
    a = batch_generate(target, draft, PROMPTS, gamma=3, max_new_tokens=16, sampling=sampling, seed=7)
    b = batch_generate(target, draft, PROMPTS, gamma=3, max_new_tokens=16, sampling=sampling, seed=7)
    c = batch_generate(target, draft, PROMPTS, gamma=3, max_new_tokens=16, sampling=sampling, seed=8)
    assert [r.tokens for r in a.results] == [r.tokens for r in b.results]
    assert [r.tokens for r in a.results] != [r.tokens for r in c.results]
    assert [r.seed for r in a.results] == [7 + i for i in range(len(PROMPTS))]
    # the documented scheme: row i draws what a single call with seed + i draws
    for i, (prompt, row) in enumerate(zip(PROMPTS, a.results)):
        assert row.tokens == speculative_generate(target, draft, prompt, 3, 16, sampling, seed=7 + i).tokens
    plain = batch_generate(target, None, PROMPTS, max_new_tokens=16, sampling=sampling, seed=7)
    for i, (prompt, row) in enumerate(zip(PROMPTS, plain.results)):
        assert row.tokens == autoregressive_generate(target, prompt, 16, sampling, seed=7 + i).tokens


# --- bad input: refused before any pass, naming the prompt ----------------------------------------------

@pytest.mark.parametrize("prompts, message", [
    ([], "prompts is empty"),
    ([[1, 2], []], "prompt 1: prompt_ids is empty"),
    ([[1, 2], [3], [1, 40]], "prompt 2: prompt_ids must lie in [0, 40)"),
    ([[1, 2], [-1]], "prompt 1: prompt_ids must lie in [0, 40)"),
    ([[1]] * (MAX_BATCH + 1), "exceed the batch bound"),
    ([[1], [2] * 100], "prompt 1: prompt (100 tokens) + max_new_tokens (40) exceeds the context window of 128"),
    ("1 2 3", "prompts must be a list"),
])
def test_bad_input_is_refused_before_any_pass(lean_pair, monkeypatch, prompts, message):
    target, draft = lean_pair

    def no_pass(*args, **kwargs):
        raise AssertionError("a pass ran before the input was checked")

    monkeypatch.setattr(CachedLM, "feed", no_pass)
    for d in (None, draft):
        with pytest.raises(ValueError) as err:
            batch_generate(target, d, prompts)
        assert message in str(err.value)


@pytest.mark.parametrize("kwargs, message", [
    ({"gamma": 0}, "gamma must be"), ({"max_new_tokens": 0}, "max_new_tokens must be"),
    ({"seed": -1}, "seed must be"), ({"sampling": 1.0}, "sampling must be"),
])
def test_bad_settings_are_refused(lean_pair, kwargs, message):
    target, draft = lean_pair
    with pytest.raises(ValueError, match=message):
        batch_generate(target, draft, PROMPTS, **kwargs)


def test_drafter_window_counts(lean_pair):
    target, _ = lean_pair
    short = tiny_gpt2(11, vocab=40, n_embd=16, n_positions=32, spread=0.3)
    with pytest.raises(ValueError, match="prompt 0: .* context window of 32"):
        batch_generate(target, short, [[1] * 20], max_new_tokens=20)


def test_a_drafter_reading_the_target_is_refused_even_with_a_batched_session(lean_pair):
    """The batched pass hands no features over, so a drafter that needs them must not run blind."""
    target, draft = lean_pair

    class ReadsTarget(NgramDrafter):
        reads_target = True

    class ReadsTargetBatched(ModelDrafter):
        reads_target = True

    with pytest.raises(ValueError, match="reads the target's hidden states"):
        batch_generate(target, ReadsTarget(), PROMPTS)
    with pytest.raises(ValueError, match="reads the target's hidden states"):
        batch_generate(target, ReadsTargetBatched(draft), PROMPTS)


@pytest.mark.parametrize("forward", ["core", "transformers"])
def test_rows_run_to_the_windows_last_position(lean_pair, forward):
    """A long row ends at the window's last position while a short one beside it pads its feeds."""
    target, draft = lean_pair
    prompts = [[(7 * i) % 40 for i in range(100)], [3, 1]]
    batch = batch_generate(with_forward(target, forward), with_forward(draft, forward), prompts, gamma=5,
                           max_new_tokens=28, sampling=GREEDY)
    for prompt, row in zip(prompts, batch.results):
        assert row.tokens == autoregressive_generate(target, prompt, 28, GREEDY).tokens
    assert len(prompts[0]) + len(batch.results[0].tokens) == 128
