"""Medusa heads, the EAGLE drafter and the EAGLE-3 drafter (a reduced draft vocabulary): exact whatever
their weights (greedy identity, chi-square over three tokens, chains and trees), broken controls that
the same test catches, refusal of a target they were not trained on, and a pair that stays usable when
their files are missing or corrupt."""
import copy
import dataclasses
import warnings

import pytest
import torch

from specdec_core import SamplingConfig, autoregressive_generate, speculative_generate, tree_generate
from specdec_core.drafters import Drafter, Proposal
from specdec_core.pairs import PAIRS, load_pair
from specdec_core.sampling_config import GREEDY
from specdec_core.self_drafters import KINDS as STORED_KINDS
from specdec_core.self_drafters import HeadsMismatch, for_target, load_self_drafters
from specdec_core.self_drafters.eagle_step import new_steps
from specdec_core.self_drafters.files import save_heads
from specdec_core.self_drafters.nets import Eagle3Net, EagleNet, HeadsConfig, MedusaHeads, target_fingerprint, target_readout
from tests.conftest import tiny_gpt2
from tests.core.exactness import chi_square_pvalue, exact_distribution

KINDS = ("medusa", "eagle", "eagle3", "eagle3-fused")
DRAFT_VOCAB = [4, 1, 2]  # eagle3 on the tiny target: it never drafts tokens 0, 3 or 5
FUSED = (1, 0, 2)  # eagle3-fused reads the tiny target's states after block 1, its embeddings and its final state


def random_heads(target, kind: str, folder, seed: int = 0):
    """Heads with random weights (exactness never depends on what they learned), saved and loaded
    back through the same files as the bundled ones."""
    lm_head, _ = target_readout(target)
    width, vocab = lm_head.shape[1], lm_head.shape[0]
    torch.manual_seed(seed)  # test-only: weights, not sampling
    if kind == "medusa":
        net = MedusaHeads(width, 3)
    elif kind.startswith("eagle3"):
        net = Eagle3Net(width, target.config.n_head, len(FUSED) if kind == "eagle3-fused" else 1, len(DRAFT_VOCAB))
        net.d2t.copy_(torch.tensor(DRAFT_VOCAB))
    else:
        net = EagleNet(width, target.config.n_head)
    for p in net.parameters():
        torch.nn.init.normal_(p, std=0.5)
    fused = kind == "eagle3-fused"
    config = HeadsConfig(kind.removesuffix("-fused"), width, vocab, target_fingerprint(target), n_heads=3,
                         n_head=target.config.n_head, target_name="tiny target",
                         draft_vocab=len(DRAFT_VOCAB) if kind.startswith("eagle3") else 0,
                         fused_layers=len(FUSED) if fused else 1, target_layers=FUSED if fused else ())
    save_heads(folder / kind, net, config)
    return for_target(target, folder / kind)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A tiny target (vocab 6, enumerable over three tokens) and both drafters on it."""
    target = tiny_gpt2(20, vocab=6, n_layer=2, n_embd=16, n_positions=64, spread=0.5)
    folder = tmp_path_factory.mktemp("heads")
    return target, {kind: random_heads(target, kind, folder) for kind in KINDS}, folder


PROMPTS = ([3], [1, 2, 3, 1, 2, 0, 4])


def through_torch(drafter):
    """The same drafter with its layer run by torch's ops, as where the kernel is not built."""
    other = copy.copy(drafter)
    other.packed = None
    return other


@pytest.mark.parametrize("layer", ("kernel", "torch"))
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("prompt", PROMPTS, ids=("one-token prompt", "seven-token prompt"))
def test_greedy_identity_chain_and_tree(small, kind, prompt, layer):
    target, drafters, _ = small
    drafter = drafters[kind]
    if layer == "torch":
        if kind == "medusa":
            pytest.skip("Medusa heads have no layer to compile")
        drafter = through_torch(drafter)
    plain = autoregressive_generate(target, prompt, 24, GREEDY, seed=0).tokens
    for gamma in (1, 2, 5):
        res = speculative_generate(target, drafter, prompt, gamma=gamma, max_new_tokens=24, sampling=GREEDY)
        assert res.tokens == plain, f"{kind} chain, gamma {gamma}"
    for shape, budget in (((2, 2, 1), None), ((3, 1), None), ((1, 1, 1, 1), 6)):
        res = tree_generate(target, drafter, prompt, shape=shape, node_budget=budget, max_new_tokens=24,
                            sampling=GREEDY)
        assert res.tokens == plain, f"{kind} tree {shape}, budget {budget}"


@pytest.mark.parametrize("kind", ("eagle", "eagle3", "eagle3-fused"))
@torch.inference_mode()  # as generation runs (the tiny target's LM head is not frozen)
def test_the_compiled_layer_computes_torchs_layer(small, kind):
    """The EAGLE layer through the kernel (its block_pass and packed products) gives torch's step and
    readout (and EAGLE-3's fusion fc) within float rounding: a catch-up, a chain step after it, and a tree
    level over the same slots with a mask; the proposals of the two paths agree token for token."""
    target, drafters, _ = small
    drafter = drafters[kind]
    assert drafter.packed is not None, "the kernel is built here: the drafter must use it"
    kernel_steps, torch_steps = new_steps(drafter.net, drafter.packed), new_steps(drafter.net, None)
    assert type(kernel_steps) is not type(torch_steps)
    g = torch.Generator().manual_seed(1)
    feats, embeds = torch.randn(9, 16, generator=g), torch.randn(9, 16, generator=g)
    tree_mask = torch.ones(3, 8, dtype=torch.bool)
    tree_mask[:, 5:] = torch.tensor([[1, 0, 0], [1, 1, 0], [1, 0, 1]], dtype=torch.bool)
    for first, k, visible in ((0, 5, None), (5, 1, None), (5, 3, tree_mask)):
        a = kernel_steps.run(feats[first:first + k], embeds[first:first + k], first, visible)
        b = torch_steps.run(feats[first:first + k], embeds[first:first + k], first, visible)
        torch.testing.assert_close(a, b, atol=2e-5, rtol=2e-5)
    torch.testing.assert_close(drafter.readout(a), through_torch(drafter).readout(a), atol=2e-5, rtol=2e-5)
    session, torch_session = drafter.start(6), through_torch(drafter).start(6)
    rows = torch.randn(len(PROMPTS[1]) - 1, 16 * max(1, len(drafter.target_layers)), generator=g)
    torch.testing.assert_close(drafter.fuse(rows), through_torch(drafter).fuse(rows), atol=2e-5, rtol=2e-5)
    for s in (session, torch_session):
        s.observe_target(rows)
    propose = lambda s: s.propose(PROMPTS[1], 4, GREEDY, torch.Generator()).tokens
    assert propose(session) == propose(torch_session)


def test_the_drafters_draft_and_the_target_accepts_some(small):
    """Not a vacuous identity: the drafters propose tokens, and the rounds carry them."""
    target, drafters, _ = small
    for kind in KINDS:
        res = speculative_generate(target, drafters[kind], PROMPTS[1], gamma=3, max_new_tokens=24, sampling=GREEDY)
        assert sum(len(r.draft_tokens) for r in res.rounds) > 0


@pytest.mark.parametrize("kind", ("eagle3", "eagle3-fused"))
def test_eagle3_drafts_only_its_vocabulary_and_the_target_supplies_the_rest(small, kind):
    """Its q is zero outside the draft vocabulary; a token outside it comes from the target's own
    residual or bonus draw, so the output still holds tokens the drafter can never propose."""
    target, drafters, _ = small
    outside = set(range(6)) - set(DRAFT_VOCAB)
    emitted = set()
    for seed in range(20):
        res = speculative_generate(target, drafters[kind], PROMPTS[1], gamma=3, max_new_tokens=12,
                                   sampling=SAMPLING, seed=seed)
        for r in res.rounds:
            assert set(r.draft_tokens) <= set(DRAFT_VOCAB)
        emitted |= set(res.tokens)
    assert emitted & outside, "the target never got to emit a token outside the draft vocabulary"
    session = drafters[kind].start(6)
    session.observe_target(torch.randn(len(PROMPTS[1]) - 1, 16 * len(drafters[kind].target_layers or (0,))))
    proposal = session.propose(PROMPTS[1], 3, SAMPLING, torch.Generator().manual_seed(0))
    assert torch.all(proposal.q[:, sorted(outside)] == 0) and torch.allclose(proposal.q.sum(-1), torch.ones(3))


def test_a_fusing_drafter_reads_the_layers_it_names(small):
    """EAGLE-3's fusion live: the passes hand the fused drafter its three states of every committed
    token (not the final one three times), and what it drafts depends on them."""
    target, drafters, _ = small
    fused = drafters["eagle3-fused"]
    assert fused.target_layers == FUSED and drafters["eagle3"].target_layers == ()
    seen = []
    start = fused.start
    fused.start = lambda vocab: seen.append(start(vocab)) or seen[-1]
    try:
        res = speculative_generate(target, fused, PROMPTS[1], gamma=3, max_new_tokens=12, sampling=GREEDY)
    finally:
        del fused.start
    rows = seen[0].log.rows  # (committed tokens but the last, 3 E)
    committed = PROMPTS[1] + res.tokens
    with torch.no_grad():
        states = target(torch.tensor([committed[:-1]]), output_hidden_states=True).hidden_states
    torch.testing.assert_close(rows, torch.cat([states[i][0] for i in FUSED], -1), atol=1e-4, rtol=1e-4)
    session = fused.start(6)  # the same features with the low layers zeroed draft otherwise
    session.observe_target(rows[:len(PROMPTS[1]) - 1])
    blind = fused.start(6)
    blind.observe_target(torch.cat([torch.zeros_like(rows[:len(PROMPTS[1]) - 1, :32]),
                                    rows[:len(PROMPTS[1]) - 1, 32:]], -1))
    logits = lambda s: s.propose(PROMPTS[1], 1, GREEDY, torch.Generator()).logits
    assert not torch.equal(logits(session), logits(blind))


def test_a_drafter_fusing_layers_it_does_not_name_is_refused(small, tmp_path):
    target, _, _ = small
    net = Eagle3Net(16, target.config.n_head, 3, len(DRAFT_VOCAB))
    config = HeadsConfig("eagle3", 16, 6, target_fingerprint(target), n_head=target.config.n_head,
                         draft_vocab=len(DRAFT_VOCAB), fused_layers=3)
    save_heads(tmp_path / "fused", net, config)
    with pytest.raises(ValueError, match="fuses 3 target layers but its config names"):
        for_target(target, tmp_path / "fused")


# --- sampling: chi-square over whole three-token continuations --------------------------------------

# N is sized by the broken control below (a q that is not the draw), which the same test must catch at p < 1e-6:
# measured on 2,000 fresh-seed draws X2 = 3141 (df = 32), w2 = (X2 - df) / n = 1.55; at n = 2,000 the bar is
# X2 > 85.2 and lam = n * w2 = 3100, so a miss has probability < 1e-300. At 2,000 the test catches with power
# 0.999 any error as large as w2 = 0.058. The honest drafters' false alarm is their bar, p <= 1e-3. Was 6,000.
PROMPT, LENGTH, N = [1, 2, 3, 1, 2], 3, 2000
SAMPLING = SamplingConfig(1.0)


def draws(target, drafter, tree: bool) -> list[tuple]:
    if tree:
        return [tuple(tree_generate(target, drafter, PROMPT, shape=(2, 1), max_new_tokens=LENGTH, sampling=SAMPLING,
                                    seed=i, trace=False).tokens) for i in range(N)]
    return [tuple(speculative_generate(target, drafter, PROMPT, gamma=2, max_new_tokens=LENGTH, sampling=SAMPLING,
                                       seed=i, trace=False).tokens) for i in range(N)]


@pytest.fixture(scope="module")
def exact(small):
    return exact_distribution(small[0], PROMPT, LENGTH, SAMPLING)


@pytest.mark.slow
@pytest.mark.parametrize("tree", (False, True), ids=("chain", "tree"))
@pytest.mark.parametrize("kind", KINDS)
def test_samples_follow_the_target(small, exact, kind, tree):
    target, drafters, _ = small
    p_value = chi_square_pvalue(draws(target, drafters[kind], tree), exact)
    assert p_value > 1e-3, f"{kind} {'tree' if tree else 'chain'}: chi-square p = {p_value:.2e}"


class ClaimsUniformQ(Drafter):
    """A broken control: drafts as the Medusa heads do but reports a uniform q, not the distribution
    its drafts were drawn from."""

    def __init__(self, inner):
        self.inner, self.reads_target = inner, True
        self.name, self.vocab_size, self.context_length = "broken", inner.vocab_size, inner.context_length

    def start(self, vocab):
        session = self.inner.start(vocab)
        propose = session.propose

        def wrong(*args, **kwargs) -> Proposal:
            p = propose(*args, **kwargs)
            return dataclasses.replace(p, q=torch.full_like(p.q, 1.0 / vocab))

        session.propose = wrong
        return session


@pytest.mark.slow
def test_a_drafter_whose_q_is_not_its_draw_fails_the_same_test(small, exact):
    target, drafters, _ = small
    p_value = chi_square_pvalue(draws(target, ClaimsUniformQ(drafters["medusa"]), tree=False), exact)
    assert p_value < 1e-6, f"the broken control passed (p = {p_value:.2e})"


class ClaimsFullVocabularyQ(ClaimsUniformQ):
    """A broken control for a reduced vocabulary: drafts from its draft vocabulary but reports a q
    with mass on every token (its q mixed half and half with uniform), as a drafter would that
    reported a full-vocabulary softmax while sampling from the reduced one."""

    def start(self, vocab):
        session = self.inner.start(vocab)
        propose = session.propose

        def wrong(*args, **kwargs) -> Proposal:
            p = propose(*args, **kwargs)
            return dataclasses.replace(p, q=0.5 * p.q + 0.5 / vocab)

        session.propose = wrong
        return session


@pytest.mark.slow
def test_eagle3_reporting_mass_outside_its_vocabulary_fails_the_same_test(small, exact):
    target, drafters, _ = small
    p_value = chi_square_pvalue(draws(target, ClaimsFullVocabularyQ(drafters["eagle3"]), tree=False), exact)
    assert p_value < 1e-6, f"the broken control passed (p = {p_value:.2e})"


# --- which target, and missing files ----------------------------------------------------------------

def test_heads_refuse_a_target_they_were_not_trained_on(small):
    target, _, folder = small
    others = {"other weights": tiny_gpt2(21, vocab=6, n_layer=2, n_embd=16, n_positions=64, spread=0.5),
              "another width": tiny_gpt2(20, vocab=6, n_layer=2, n_embd=8, n_positions=64, spread=0.5),
              "another vocabulary": tiny_gpt2(20, vocab=7, n_layer=2, n_embd=16, n_positions=64, spread=0.5)}
    for what, other in others.items():
        for kind in KINDS:
            with pytest.raises(ValueError, match="trained on tiny target"):
                for_target(other, folder / kind)
        drafters, notes = load_self_drafters(other, folder)
        assert drafters == {} and len(notes) == len(STORED_KINDS), what  # eagle3-fused is no folder it reads
    with pytest.raises(HeadsMismatch):
        for_target(others["other weights"], folder / "eagle")


def test_heads_refuse_at_generation_a_target_they_were_not_trained_on(small):
    target, drafters, _ = small
    narrower = tiny_gpt2(20, vocab=6, n_layer=2, n_embd=8, n_positions=64, spread=0.5)
    other = tiny_gpt2(21, vocab=6, n_layer=2, n_embd=16, n_positions=64, spread=0.5)
    for kind in KINDS:
        with pytest.raises(ValueError, match="width"):
            speculative_generate(narrower, drafters[kind], PROMPTS[1], gamma=3, max_new_tokens=5, sampling=GREEDY)
        with pytest.raises(ValueError, match="other weights"):
            tree_generate(other, drafters[kind], PROMPTS[1], shape=(2, 1), max_new_tokens=5, sampling=GREEDY)


def test_missing_or_corrupt_files_leave_the_pair_usable(tmp_path, monkeypatch):
    (tmp_path / "medusa").mkdir()
    (tmp_path / "medusa" / "config.json").write_text("{not json")
    monkeypatch.setitem(PAIRS, "shakespeare", dataclasses.replace(PAIRS["shakespeare"], heads=str(tmp_path)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pair = load_pair("shakespeare")
    assert pair.self_drafters == {}
    assert len(pair.notes) == 3 and any("Medusa" in n for n in pair.notes) and any("EAGLE-3" in n for n in pair.notes)
    assert len(caught) >= 3
    ids = pair.tokenizer.encode("ROMEO:")
    assert len(speculative_generate(pair.target, pair.draft, ids, gamma=3, max_new_tokens=5).tokens) == 5


def test_hub_pairs_carry_no_heads():
    assert all(spec.heads is None for name, spec in PAIRS.items() if name != "shakespeare")


def test_bundled_pair_has_both_drafters_and_they_are_exact(pair, prompt_ids):
    assert set(pair.self_drafters) == {"medusa", "eagle", "eagle3"} and not pair.notes
    plain = autoregressive_generate(pair.target, prompt_ids, 30, GREEDY).tokens
    for kind, drafter in pair.self_drafters.items():
        chain = speculative_generate(pair.target, drafter, prompt_ids, gamma=5, max_new_tokens=30, sampling=GREEDY)
        tree = tree_generate(pair.target, drafter, prompt_ids, shape=(2, 2, 1, 1), max_new_tokens=30, sampling=GREEDY)
        assert chain.tokens == plain and tree.tokens == plain, kind
        assert chain.accepted > 0, f"the trained {kind} drafter never got a draft accepted"


@pytest.mark.slow
def test_train_heads_runs_end_to_end_and_its_heads_load(tmp_path, pair, prompt_ids):
    """`specdec train heads --tiny`: features of the frozen bundled target, a few steps, exported heads
    that load for that target and draft exactly."""
    from specdec_core.tools.train.heads import main
    main(["--tiny", "--run", str(tmp_path / "run"), "--out", str(tmp_path / "out")])
    drafters, notes = load_self_drafters(pair.target, tmp_path / "out")
    assert set(drafters) == {"medusa", "eagle"}  # the EAGLE-3 drafter has its own command (`train eagle3`)
    assert len(notes) == 1 and "EAGLE-3" in notes[0]
    assert drafters["eagle"].training["steps"] == 4
    plain = autoregressive_generate(pair.target, prompt_ids, 12, GREEDY).tokens
    assert speculative_generate(pair.target, drafters["medusa"], prompt_ids, gamma=3, max_new_tokens=12,
                                sampling=GREEDY).tokens == plain


@pytest.mark.slow
def test_train_eagle3_runs_end_to_end_and_its_drafter_loads(tmp_path, pair, prompt_ids):
    """`specdec train eagle3 --tiny`: layer features of the frozen bundled target, a few training-time-test
    steps from the bundled EAGLE drafter, an exported drafter over a reduced vocabulary that loads for
    that target and drafts exactly."""
    from specdec_core.tools.train.eagle3 import main
    main(["--tiny", "--variant", "vocab", "--features", str(tmp_path / "features.pt"), "--out", str(tmp_path / "eagle3")])
    drafter = for_target(pair.target, tmp_path / "eagle3")
    assert drafter.training["steps"] == 3 and len(drafter.d2t) == 64
    plain = autoregressive_generate(pair.target, prompt_ids, 12, GREEDY).tokens
    assert speculative_generate(pair.target, drafter, prompt_ids, gamma=3, max_new_tokens=12,
                                sampling=GREEDY).tokens == plain


def test_vocabulary_coverage_is_the_target_mass_inside_the_draft_vocabulary(small):
    from specdec_core.analysis.self_draft import vocabulary_coverage
    target, _, _ = small
    texts = [PROMPTS[1], [0, 5, 3]]
    whole = vocabulary_coverage(target, torch.arange(6), texts)
    assert whole["mass"] == pytest.approx(1.0) and whole["top"] == 1.0 and whole["positions"] == 10
    parts = [vocabulary_coverage(target, torch.tensor([t]), texts)["mass"] for t in range(6)]
    assert sum(parts) == pytest.approx(1.0)
    some = vocabulary_coverage(target, torch.tensor(DRAFT_VOCAB), texts)
    assert some["mass"] == pytest.approx(sum(parts[t] for t in DRAFT_VOCAB)) and some["mass"] < 1
