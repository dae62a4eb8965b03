"""Lossy variants of a target and the fidelity figures computed for them, on tiny models where the
answer is known: an unchanged copy agrees everywhere at distance 0, a model already on the grid is
unchanged by quantisation, and each figure equals the same figure computed by brute force."""
import pytest
import torch

from specdec_core import GREEDY, GenerationRequest, autoregressive_generate, speculative_generate
from specdec_core.analysis import fidelity
from specdec_core.variants import bf16_copy, build_variants, quantise_per_channel, quantised_copy, truncated_copy
from tests.conftest import tiny_gpt2

SEQUENCES = [[1, 2, 3, 4, 5, 6, 7, 8], [9, 9, 3, 0, 12, 30], [5]]


@pytest.fixture(scope="module")
def target():
    return tiny_gpt2(20, vocab=40, n_layer=3, n_embd=32, n_positions=128, spread=0.3)


def weights(model) -> dict[str, torch.Tensor]:
    return {name: t.detach().clone() for name, t in model.state_dict().items()}


# --- quantisation ------------------------------------------------------------------------------------

@pytest.mark.parametrize("bits", [8, 4])
def test_quantise_per_channel_rounds_each_column_to_its_own_grid(bits):
    g = torch.Generator().manual_seed(bits)
    w = torch.randn(16, 5, generator=g) * torch.tensor([0.01, 0.1, 1.0, 10.0, 0.0])  # (in, out): channels differ
    out = quantise_per_channel(w, bits, channel_dim=1)
    levels = 2 ** (bits - 1) - 1
    for j in range(5):
        scale = float(w[:, j].abs().max()) / levels
        if scale == 0:
            assert torch.equal(out[:, j], w[:, j])
            continue
        steps = out[:, j] / scale
        assert torch.allclose(steps, steps.round(), atol=1e-4)  # on the channel's grid
        assert float(steps.abs().max()) <= levels + 1e-4
        assert float((out[:, j] - w[:, j]).abs().max()) <= scale / 2 + 1e-6  # round to nearest
    assert torch.equal(quantise_per_channel(out, bits, channel_dim=1), out) or \
        torch.allclose(quantise_per_channel(out, bits, channel_dim=1), out, atol=1e-6)  # idempotent
    with pytest.raises(ValueError, match="bits"):
        quantise_per_channel(w, 1)


def test_copies_never_touch_the_original(target):
    before = weights(target)
    variants = build_variants(target, draft=None, layers=(2, 1))
    assert set(variants) == {"int8 weights", "4-bit weights", "bf16", "first 2 of 3 layers", "first 1 of 3 layers"}
    after = weights(target)
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    assert len(target.transformer.h) == 3 and target.transformer.h[0].attn.c_attn.weight.dtype == torch.float32
    for v in variants.values():
        assert v.model is not target
        assert all(a.data_ptr() != b.data_ptr() for a, b in zip(v.model.parameters(), target.parameters()))
    assert [v.speed_real for v in variants.values()] == [False, False, True, True, True]


def test_a_model_already_on_the_grid_is_unchanged(target):
    """Known answer: weights that are already int8-representable per channel quantise to themselves,
    so the variant agrees at every position, free-running too, at distance zero."""
    on_grid = quantised_copy(target, 8)  # now on the grid
    again = quantised_copy(on_grid, 8)
    tf = fidelity.teacher_forced(on_grid, again, SEQUENCES)
    assert tf["agreement"] == 1.0 and tf["distance"] < 1e-6 and tf["positions"] == sum(map(len, SEQUENCES))
    a = autoregressive_generate(on_grid, [1, 2, 3], 30, GREEDY).tokens
    b = autoregressive_generate(again, [1, 2, 3], 30, GREEDY).tokens
    assert fidelity.free_running_agreement(a, b) == {"agreement": 1.0, "first_difference": None}


# --- fewer layers, lower precision --------------------------------------------------------------------

def test_all_layers_kept_is_the_target_itself(target):
    same = truncated_copy(target, 3)
    tf = fidelity.teacher_forced(target, same, SEQUENCES)
    assert tf == {"agreement": 1.0, "distance": pytest.approx(0.0, abs=1e-7), "positions": 15}


def test_truncated_copy_keeps_the_first_blocks_and_the_head(target):
    short = truncated_copy(target, 1)
    assert short.config.n_layer == 1 and len(short.transformer.h) == 1
    assert torch.equal(short.transformer.h[0].mlp.c_fc.weight, target.transformer.h[0].mlp.c_fc.weight)
    assert torch.equal(short.lm_head.weight, target.lm_head.weight)
    with pytest.raises(ValueError, match="n_layers"):
        truncated_copy(target, 0)


def test_bf16_copy_computes_in_bf16(target):
    half = bf16_copy(target)
    assert half.transformer.h[0].attn.c_attn.weight.dtype == torch.bfloat16
    tokens = autoregressive_generate(half, [1, 2, 3], 10, GREEDY).tokens
    assert len(tokens) == 10


# --- the figures against brute force -------------------------------------------------------------------

@torch.no_grad()
def brute_force(target, model, sequences):
    """Agreement and distance one position at a time, each from a fresh forward over the prefix."""
    agree, distance, n = 0, 0.0, 0
    for ids in sequences:
        for t in range(1, len(ids) + 1):
            p = torch.softmax(target(torch.tensor([ids[:t]])).logits[0, -1].double(), -1)
            r = torch.softmax(model(torch.tensor([ids[:t]])).logits[0, -1].double(), -1)
            agree += int(p.argmax() == r.argmax())
            distance += 0.5 * float((p - r).abs().sum())
            n += 1
    return agree / n, distance / n


VARIANTS = {  # name -> (make the variant from the target, relative tolerance against brute force)
    "int8": (lambda m: quantised_copy(m, 8), 1e-3),
    "4-bit": (lambda m: quantised_copy(m, 4), 1e-4),
    "bf16": (bf16_copy, 0.1),  # bf16 rounds differently over one prefix than over the whole sequence
    "first layer": (lambda m: truncated_copy(m, 1), 1e-4),
    "distilled (another model)": (lambda m: tiny_gpt2(21, vocab=40, n_embd=16, n_positions=128, spread=0.3), 1e-4),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_teacher_forced_figures_equal_brute_force(target, name):
    make, tolerance = VARIANTS[name]
    variant = make(target)
    tf = fidelity.teacher_forced(target, variant, SEQUENCES)
    agree, distance = brute_force(target, variant, SEQUENCES)
    assert tf["agreement"] == pytest.approx(agree, abs=1 / tf["positions"] if name == "bf16" else 1e-12)
    assert tf["distance"] == pytest.approx(distance, rel=tolerance)
    assert tf["distance"] > 1e-3, "the variant should differ from the target, or the test shows nothing"


def test_free_running_agreement_counts_positions_and_finds_the_first_difference():
    assert fidelity.free_running_agreement([1, 2, 3, 4], [1, 2, 9, 4]) == {"agreement": 0.75, "first_difference": 2}
    assert fidelity.free_running_agreement([1, 2], [1, 2]) == {"agreement": 1.0, "first_difference": None}


def test_speculative_row_is_at_distance_zero_computed_not_assumed(small_pair):
    target, draft = small_pair
    row = fidelity.speculative_teacher_forced(target, draft, SEQUENCES)
    assert row["agreement"] == 1.0 and row["max_distance"] < 1e-9
    assert 0 < row["alpha"] < 1  # the drafter differs: the residual is really doing work
    assert fidelity.teacher_forced(target, draft, SEQUENCES)["distance"] > 0.05  # the drafter alone is far


# --- the bridge: a lossy variant as the drafter, output exact again ----------------------------------

@pytest.mark.parametrize("make", [lambda m: truncated_copy(m, 1), lambda m: quantised_copy(m, 4), bf16_copy],
                         ids=["first layer (self-speculative)", "4-bit", "bf16"])
def test_lossy_variant_as_drafter_gives_the_target_greedy_output(target, make):
    drafter = make(target)
    for prompt in ([1, 2, 3], [7, 7, 7, 7], [30, 2, 11, 5, 0]):
        plain = autoregressive_generate(target, prompt, 40, GREEDY).tokens
        for gamma in (2, 5):
            spec = speculative_generate(target, drafter, prompt, gamma=gamma, max_new_tokens=40, sampling=GREEDY)
            assert spec.tokens == plain


def test_fidelity_report_on_a_tiny_pair(target, small_pair):
    draft = tiny_gpt2(11, vocab=40, n_embd=16, n_positions=128, spread=0.3)
    variants = build_variants(target, draft, layers=(1,))
    rep = fidelity.fidelity_report(target, draft, variants, [[1, 2, 3], [4, 5, 6, 7]],
                                   GenerationRequest(max_new_tokens=12, sampling=GREEDY), repeats=2)
    rows = {r["name"]: r for r in rep.rows}
    assert list(rows) == [*variants, fidelity.SPECULATIVE]
    spec = rows[fidelity.SPECULATIVE]
    assert spec["distance"] < 1e-9 and spec["free_running_agreement"] == 1.0 and spec["identical_prompts"] == 2
    assert rows["int8 weights"]["speed"] is None and rows["4-bit weights"]["speed"] is None  # simulated
    assert rows["first 1 of 3 layers"]["speed"].n == 2  # one ratio per interleaved repetition
    bridge = {b["drafter"]: b for b in rep.bridge}
    assert all(b["identical_prompts"] == 2 for b in bridge.values())  # exact again, whatever drafts
    assert bridge["distilled drafter"]["bundled"] and bridge["int8 weights"]["c"] is None
    assert 0 < bridge["first 1 of 3 layers"]["c"]
