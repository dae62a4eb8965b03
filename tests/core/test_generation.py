"""The generation skeleton: drafters that read the target see exactly the committed tokens' features,
and trees run to the last position of the context window on both forward paths."""
import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from specdec_core import GREEDY, ModelDrafter, SamplingConfig, autoregressive_generate, speculative_generate, tree_generate
from specdec_core.bookkeeping import Generation
from specdec_core.model import FORWARDS, with_forward

# --- drafters that read the target -------------------------------------------------------------------

class RecordingDrafter(ModelDrafter):
    """A model drafter that also reads the target: its sessions record every feature row they are shown."""
    reads_target = True

    def start(self, vocab):
        session = super().start(vocab)
        session.seen = []
        session.observe_target = session.seen.append
        return session


def run(kind, target, drafter, prompt, forward, sampling, sessions):
    start = drafter.start
    drafter.start = lambda vocab: sessions.append(start(vocab)) or sessions[-1]
    target = with_forward(target, forward)
    if kind == "chain":
        return speculative_generate(target, drafter, prompt, gamma=3, max_new_tokens=25, sampling=sampling, seed=3)
    return tree_generate(target, drafter, prompt, shape=(2, 2, 1), max_new_tokens=25, sampling=sampling, seed=3)


@pytest.mark.parametrize("forward", FORWARDS)
@pytest.mark.parametrize("kind", ["chain", "tree"])
@pytest.mark.parametrize("sampling", [GREEDY, SamplingConfig(1.0)], ids=["greedy", "sampling"])
@pytest.mark.parametrize("layers", [(), (1, 0, 2)], ids=["final state", "layers 1, 0, 2"])
def test_a_drafter_that_reads_the_target_sees_every_committed_token_but_the_last(small_pair, forward, kind, sampling,
                                                                                 layers):
    """The final hidden state by default; the states a drafter names in target_layers (EAGLE-3's fusion),
    side by side in its order, numbered as transformers' hidden_states (0 the embeddings, 2 after ln_f)."""
    target, draft = small_pair
    assert target.config.n_layer == 2
    prompt, sessions = [5, 9, 9, 2, 7, 1], []
    drafter = RecordingDrafter(draft)
    drafter.target_layers = layers
    out = run(kind, target, drafter, prompt, forward, sampling, sessions)
    seen = torch.cat(sessions[0].seen)  # (tokens observed, E per layer), in the order they were shown
    committed = prompt + out.tokens
    assert seen.shape == (len(committed) - 1, target.config.n_embd * max(1, len(layers)))
    with torch.inference_mode():  # the target's own hidden states from one full forward
        states = target(torch.tensor([committed[:-1]]), output_hidden_states=True).hidden_states
    full = torch.cat([states[i][0] for i in layers or (-1,)], dim=-1)
    torch.testing.assert_close(seen, full, atol=1e-4, rtol=1e-4)
    # reading the target changes nothing in what is drafted or emitted
    plain = run(kind, target, ModelDrafter(draft), prompt, forward, sampling, [])
    assert out.tokens == plain.tokens


def test_the_features_stop_at_an_eos(small_pair):
    target, draft = small_pair
    prompt, sessions = [5, 9, 9, 2, 7, 1], []
    reference = autoregressive_generate(target, prompt, 25, GREEDY, eos_token_id=None).tokens
    eos = reference[6]  # a token the greedy output reaches: the run stops there
    drafter = RecordingDrafter(draft)
    start = drafter.start
    drafter.start = lambda vocab: sessions.append(start(vocab)) or sessions[-1]
    out = speculative_generate(target, drafter, prompt, gamma=4, max_new_tokens=25, sampling=GREEDY,
                               eos_token_id=eos)
    assert out.stop_reason == "eos" and out.tokens[-1] == eos
    assert sum(len(f) for f in sessions[0].seen) == len(prompt) + len(out.tokens) - 1


def test_bookkeeping_without_a_model():
    g = Generation([1, 2, 3], max_new_tokens=5, eos=9, max_rounds=3)
    assert g.running and g.room(8) == 4
    assert g.commit([4, 5], 6, "bonus") == ([4, 5, 6], False)
    assert g.kinds == ["accepted", "accepted", "bonus"] and g.context == [1, 2, 3, 4, 5, 6]
    new, hit_eos = g.commit([9, 7], 8, "corrective")
    assert (new, hit_eos, g.running, g.stop) == ([9], True, False, "eos")
    assert g.result().stop_reason == "eos"


# --- trees at the end of the context window ----------------------------------------------------------

@pytest.mark.parametrize("forward", FORWARDS)
def test_a_tree_runs_to_the_last_position_of_the_window(forward):
    torch.manual_seed(1)  # test-only: model construction
    cfg = GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=50, n_positions=16, bos_token_id=None,
                     eos_token_id=None)
    target, draft = (with_forward(GPT2LMHeadModel(cfg).eval(), forward) for _ in range(2))
    reference = autoregressive_generate(target, [1, 2, 3, 4, 5], 11, GREEDY).tokens
    out = tree_generate(target, draft, [1, 2, 3, 4, 5], shape=(2, 2, 1, 1), max_new_tokens=11, sampling=GREEDY)
    assert out.tokens == reference and len(out.tokens) == 11
    sampled = tree_generate(target, draft, [1, 2, 3, 4, 5], shape=(3, 2, 2), node_budget=12, max_new_tokens=11,
                            sampling=SamplingConfig(1.0), seed=0)
    assert len(sampled.tokens) == 11


@pytest.mark.parametrize("forward", FORWARDS)
def test_the_bundled_pair_fills_its_window_with_a_tree(pair, forward):
    window = pair.target.config.n_positions
    prompt = (pair.tokenizer.encode("ROMEO:\nBut soft, what light through yonder window breaks?\n") * 40)[:window - 16]
    target = with_forward(pair.target, forward)
    reference = autoregressive_generate(target, prompt, 16, GREEDY).tokens
    out = tree_generate(target, with_forward(pair.draft, forward), prompt, shape=(2, 2, 1, 1), max_new_tokens=16,
                        sampling=GREEDY)
    assert out.tokens == reference


# --- chains and trees check their inputs alike -------------------------------------------------------

@pytest.mark.parametrize("generate", [
    lambda t, d, **kw: speculative_generate(t, d, [1, 2], gamma=2, max_new_tokens=4, **kw),
    lambda t, d, **kw: tree_generate(t, d, [1, 2], shape=(2, 1), max_new_tokens=4, **kw),
], ids=["chain", "tree"])
def test_chains_and_trees_refuse_the_same_inputs(small_pair, generate):
    from tests.conftest import tiny_gpt2
    target, draft = small_pair
    with pytest.raises(ValueError, match="vocabulary"):
        generate(target, tiny_gpt2(3, vocab=41))
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="max_rounds"):
            generate(target, draft, max_rounds=bad)
    assert generate(target, draft, max_rounds=1, sampling=GREEDY).stop_reason == "max_rounds"


def test_chains_batches_and_trees_record_their_rounds_alike(small_pair):
    """One round record for every decoder (Generation.round_record): a greedy chain, the same chain as a
    batch of one, and a one-branch tree of the same depth record the same rounds."""
    from specdec_core import tree_generate
    from specdec_core.batch import batch_generate
    from specdec_core.drafters import NgramDrafter

    target, _ = small_pair
    prompt = [3, 4, 5, 3, 4, 5, 3, 4]
    chain = speculative_generate(target, NgramDrafter(), prompt, gamma=3, max_new_tokens=12, sampling=GREEDY,
                                 eos_token_id=None)
    batch = batch_generate(target, NgramDrafter(), [prompt], gamma=3, max_new_tokens=12, sampling=GREEDY,
                           eos_token_id=None).results[0]
    tree = tree_generate(target, NgramDrafter(), prompt, shape=(1, 1, 1), max_new_tokens=12, sampling=GREEDY,
                         eos_token_id=None)
    fields = lambda r: (r.index, r.position, r.draft_tokens, r.n_accepted, r.next_token, r.next_kind, r.emitted,
                        r.p_draft[:r.n_accepted], r.uniforms)
    assert [fields(r) for r in chain.rounds] == [fields(r) for r in batch.rounds] == [fields(r) for r in tree.rounds]
    assert [r.accept_prob for r in chain.rounds] == [r.accept_prob for r in batch.rounds]  # a tree: NaN where untested
    assert len(chain.rounds) > 1
