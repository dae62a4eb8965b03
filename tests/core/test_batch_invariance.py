"""The compiled pass is batch-invariant: row i of a pass over k rows (a verify pass, a prefill, a tree, a
batch) is bit for bit the one-token pass at that position, for every k the app uses, on both models of
the bundled pair. So a speculative run's verify pass hands the rule the very logits a plain run
computes at that position, and a near-tie between two tokens cannot decide differently. The same
checks run on the Python reference pass (MKL's products over k rows) find rows that differ: they are
not checks that cannot fail."""
import copy
import json
import random
from pathlib import Path

import pytest
import torch

from specdec_core import GREEDY, GenerationRequest, autoregressive_generate, speculative_generate
from specdec_core.model import CachedLM, batch_invariant, kernel, with_forward
from ui.state.settings import GAMMA_RANGE

ROOT = Path(__file__).resolve().parents[2]
KS = sorted({*range(1, 10), *(g + 1 for g in range(GAMMA_RANGE[0], GAMMA_RANGE[1] + 1))})  # rows of a pass
CONTEXTS = 12  # the 8 held-out prompts and 4 random contexts of random lengths

pytestmark = pytest.mark.skipif(kernel.load() is None, reason="the compiled pass is not built here")


def contexts(tokenizer) -> list[list[int]]:
    prompts = json.loads((ROOT / "assets/bench_prompts.json").read_text(encoding="utf-8"))["prompts"]
    held_out = [tokenizer.encode(p["text"]) for p in prompts if p["kind"] == "open"]
    rng = random.Random(7)
    randoms = [[rng.randrange(tokenizer.vocab_size) for _ in range(rng.randrange(1, 120))] for _ in range(4)]
    return (held_out + randoms)[:CONTEXTS]


@torch.inference_mode()
def mismatches(model, forward: str, ctxs: list[list[int]], ks: list[int]) -> list[tuple]:
    """(context, k) of every k-row pass whose rows are not bit for bit the one-token passes at their
    positions: after the same prefill, k tokens in one pass against the same tokens one at a time."""
    rng = random.Random(11)
    bad = []
    for c, ctx in enumerate(ctxs):
        fed = [rng.randrange(model.config.vocab_size) for _ in range(max(ks))]
        one = CachedLM(model, forward)
        one.prefill(ctx)
        singles = torch.cat([one.extend([t]) for t in fed])  # (max k, V)
        many = CachedLM(model, forward)
        many.prefill(ctx)
        for k in ks:
            rows = many.extend(fed[:k])
            many.rollback(k)
            if not torch.equal(rows, singles[:k]):
                bad.append((c, k, float((rows - singles[:k]).abs().max())))
    return bad


@pytest.mark.parametrize("which", ["draft", "target"])
def test_every_row_of_a_k_row_pass_is_the_one_token_pass(pair, which):
    model = getattr(pair, which)
    ctxs = contexts(pair.tokenizer)
    assert len(ctxs) == CONTEXTS and KS[-1] == GAMMA_RANGE[1] + 1
    assert mismatches(model, "core", ctxs, KS) == []


@pytest.mark.parametrize("which", ["draft", "target"])
def test_the_check_catches_mkl_products_over_k_rows(pair, which):
    """The broken control: the Python reference pass computes a k-row pass with MKL's products over
    k rows, which round differently from its one-row products; the same check finds it."""
    bad = mismatches(getattr(pair, which), "exact", contexts(pair.tokenizer)[:3], [2, 4, 6, 7])
    assert len(bad) >= 6, bad


@torch.inference_mode()
def test_tree_and_batch_rows_are_the_one_token_passes(pair):
    """A tree's node (siblings fed beside it) and a batch's row (other sequences beside it) get the
    logits of a one-token pass along its own line."""
    target = pair.target
    ctx = contexts(pair.tokenizer)[0]
    line = [40, 41, 42]
    one = CachedLM(target)
    one.prefill(ctx)
    singles = torch.cat([one.extend([t]) for t in line])
    tree = CachedLM(target)
    tree.prefill(ctx)
    # node 0 = 40; its children 41 (node 1) and 7 (node 2); node 3 = 42 under node 1; node 4 = 9 under node 2
    rows = tree.extend_tree([40, 41, 7, 42, 9], [-1, 0, 0, 1, 2])
    assert torch.equal(rows[[0, 1, 3]], singles)
    batch = CachedLM(target, rows=3)
    others = [[5, 6, 7, 8], [9] * 20]
    batch.feed({0: ctx[:-1], 1: others[0], 2: others[1]}, keep=None)
    out = batch.feed({0: [ctx[-1]] + line[:-1], 1: [11, 12], 2: [13]})
    assert torch.equal(out[0][1:], singles[:2])
    solo = CachedLM(target)
    solo.prefill(ctx[:-1])
    assert torch.equal(out[0][:1], solo.extend([ctx[-1]]))


def record_target_rows(monkeypatch, target) -> dict:
    """Patch CachedLM so that every target logit row goes into `log["rows"]` (a dict the caller swaps
    per run), keyed by the tokens it follows: a rejected draft's rows follow other tokens than the
    plain run's and drop out of the comparison by their key."""
    log = {"rows": {}}
    feed, rollback = CachedLM.feed, CachedLM.rollback

    def recording_feed(self, feeds, keep="all", hidden=False):
        out = feed(self, feeds, keep, hidden)
        (row, tokens), = feeds.items()  # one-row runs: row 0
        seq = self.__dict__.setdefault("recorded_tokens", [])
        seq += tokens
        if self.model is target:
            logits = out[row][0] if hidden else out[row]
            for i, logit_row in enumerate(logits):
                log["rows"][tuple(seq[:len(seq) - len(logits) + i + 1])] = logit_row
        return out

    def recording_rollback(self, n, row=0):
        rollback(self, n, row)
        if n:
            del self.__dict__.setdefault("recorded_tokens", [])[-n:]

    monkeypatch.setattr(CachedLM, "feed", recording_feed)
    monkeypatch.setattr(CachedLM, "rollback", recording_rollback)
    return log


def verify_rows_against_plain(monkeypatch, pair, gammas) -> tuple[int, int]:
    """(rows compared, rows that differ): every verify-pass row of greedy speculative runs against the
    plain greedy run's row after the same tokens, on the held-out prompts; and the greedy tokens."""
    log = record_target_rows(monkeypatch, pair.target)
    compared = differ = 0
    for ids in contexts(pair.tokenizer)[:8]:
        request = GenerationRequest(ids, 48, GREEDY).fixed_length()
        plain_rows = log["rows"] = {}
        plain = autoregressive_generate(pair.target, request)
        for gamma in gammas:
            spec_rows = log["rows"] = {}
            spec = speculative_generate(pair.target, pair.draft, request, gamma=gamma, trace=False)
            assert spec.tokens == plain.tokens
            common = plain_rows.keys() & spec_rows.keys()
            assert len(common) >= len(plain.tokens)  # every token the plain run chose, judged by a verify row
            compared += len(common)
            differ += sum(not torch.equal(plain_rows[key], spec_rows[key]) for key in common)
    return compared, differ


def test_a_near_tie_decides_the_same_in_a_verify_pass(monkeypatch, pair):
    """Greedy speculative decoding gives plain greedy decoding's tokens, and more: each verify row the
    rule reads holds the plain run's logits bit for bit, so no near-tie between two tokens can be
    decided differently by a pass over several positions."""
    compared, differ = verify_rows_against_plain(monkeypatch, pair, [1, 4, 5, 8, 16])
    assert compared > 1000 and differ == 0


def test_which_passes_are_batch_invariant(pair):
    """What a page asks before it explains a differing greedy output by a near-tie."""
    assert batch_invariant(pair.target) and batch_invariant(pair.draft)
    assert not batch_invariant(with_forward(pair.target, "transformers"))
    assert not batch_invariant(pair.target, "exact")
    assert not batch_invariant(copy.deepcopy(pair.draft).bfloat16())


def test_the_near_tie_check_fails_on_the_python_reference(monkeypatch, pair):
    """The broken control: with the compiled pass off, the verify rows come from MKL's products over
    k rows and the same comparison finds rows that differ from the plain run's."""
    monkeypatch.setattr(kernel, "runs_compiled", lambda model: False)
    compared, differ = verify_rows_against_plain(monkeypatch, pair, [5])
    assert differ > 0, compared
