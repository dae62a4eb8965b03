"""Draft-length policies: every one keeps the output exact (greedy identity, and the chi-square test
of whole generations against the enumerated target distribution), a policy that peeks at the coming
verdict fails the same test, each generation has its own policy state, and inputs are bounded."""
import pytest
import torch

from specdec_core import NgramDrafter, SamplingConfig, UnigramDrafter, autoregressive_generate, speculative_generate
from specdec_core.broken import PeekingPolicy
from specdec_core.policies import (
    POLICIES,
    STOP_CONFIDENCE,
    STOP_GAMMA,
    STOP_REASONS,
    STOP_TOKENS_LEFT,
    AcceptanceDriven,
    Calibrated,
    ConfidenceStop,
    Constant,
    Costs,
    Heuristic,
    Hybrid,
    Policy,
    confidence,
)
from specdec_core.sampling_config import GREEDY
from tests.core.exactness import chi_square_pvalue, exact_distribution
from tests.core.test_core_exactness import LENGTH, N_SAMPLES, PROMPT

# N_SAMPLES (16,000) is the exactness suite's: the same pair, prompt, length and temperature, so an honest
# policy's test has that suite's power against a wrong rule (resample from p caught with power 0.999).
# The peeking policy below is far louder: w2 = 0.082 measured (X2 = 340.5 at n = 4,000, df = 12),
# missed at 16,000 with probability < 1e-300.
SAMPLING = SamplingConfig(1.0)

# Settings under which each policy really varies its rounds within LENGTH = 3 tokens (the defaults
# would ask for more drafts than the two a 3-token generation has room for).
SMALL = {
    "constant": Constant(2),
    "heuristic": Heuristic(start_gamma=1, min_gamma=1, max_gamma=3),
    "confidence": ConfidenceStop(threshold=0.75, signal="margin", max_gamma=3),  # the second draft's margin
    # is 0.48..0.99 depending on the first: the stop depends on the drafts
    "acceptance": AcceptanceDriven(costs=Costs(c=0.3, table=(1.0, 1.3, 1.6)), prior_alpha=0.6, prior_weight=1.0,
                                   decay=0.5, max_gamma=3),
}
SMALL["hybrid"] = Hybrid(AcceptanceDriven(costs=Costs(c=0.05, table=(1.0, 1.1, 1.2)), prior_alpha=0.8, prior_weight=1.0,
                                          decay=0.5, max_gamma=3), SMALL["confidence"])  # asks for 2+ drafts
SMALL["calibrated"] = Calibrated(costs=Costs(c=0.15, table=(1.0, 1.2, 1.4)), edges=(0.7, 0.8, 0.9),
                                 prior_by_bin=(0.3, 0.5, 0.8, 0.95), prior_alpha=0.8, prior_weight=1.0, decay=0.5,
                                 max_gamma=3)  # the second draft's margin (0.48..0.99) decides


def test_every_registered_policy_is_tested_and_has_defaults():
    assert set(SMALL) == set(POLICIES)
    for name, factory in POLICIES.items():
        policy = factory()
        assert policy.name == name and 1 <= policy.max_gamma <= 32


def draw(target, drafter, policy, n=N_SAMPLES, sampling=SAMPLING):
    """n generations of LENGTH tokens with consecutive seeds; also every round's (gamma, drafted, stop)."""
    samples, shapes = [], set()
    for seed in range(n):
        res = speculative_generate(target, drafter, PROMPT, gamma=policy, max_new_tokens=LENGTH,
                                   sampling=sampling, seed=seed, trace=False)
        samples.append(tuple(res.tokens))
        shapes.update((r.gamma, len(r.draft_tokens), r.draft_stop) for r in res.rounds)
    return samples, shapes


@pytest.mark.slow  # a chi-square test over 16,000+ generations
@pytest.mark.parametrize("name", sorted(SMALL))
def test_policy_samples_follow_target(tiny_pair, name):
    target, draft = tiny_pair
    samples, shapes = draw(target, draft, SMALL[name])
    p_value = chi_square_pvalue(samples, exact_distribution(target, PROMPT, LENGTH, SAMPLING))
    assert p_value > 1e-3, f"{name}: chi-square p = {p_value:.2e}"
    if name != "constant":  # the policy did vary its rounds (their gamma, or the drafts made) in these generations
        assert len({g for g, _, _ in shapes}) >= 2 or len({d for _, d, _ in shapes if d > 0}) >= 2, \
            f"{name} made only {shapes}: the test would not tell it from a constant"
    if name in ("confidence", "hybrid", "calibrated"):  # its stop test both ended rounds and let them go on
        assert any(stop == STOP_CONFIDENCE for *_, stop in shapes) and any(d >= 2 for _, d, _ in shapes)


@pytest.mark.slow  # a chi-square test over 16,000+ generations
def test_peeking_policy_fails_the_same_test(tiny_pair):
    """The test has power over policies: one that reads the coming verdict and rerolls it is caught."""
    target, draft = tiny_pair
    samples, _ = draw(target, draft, PeekingPolicy(target, draft, SAMPLING, max_gamma=2))
    p_value = chi_square_pvalue(samples, exact_distribution(target, PROMPT, LENGTH, SAMPLING))
    assert p_value < 1e-6, f"the peeking policy passed the test (p = {p_value:.2e})"


@pytest.mark.slow  # a chi-square test over 16,000+ generations
def test_a_subtle_peek_is_caught_with_more_samples(tiny_pair):
    """Only choosing stop/continue from the coming verdict (a rejected first draft gets one second
    chance) biases less: at 20,000 samples it gave p = 1.5e-3, under the honest policies' 1e-3 bar
    but not clearly; at 40,000 it is unmistakable (p = 1e-20 when written).
    Power at 40,000: measured w2 = 0.0025 (X2 = 70.4 on 20,000 fresh-seed draws, df = 20), lam = 100 against
    the bar X2 > 65.4 (p < 1e-6): P(chi2'(20, 100) > 65.4) = 0.9985; it cannot be smaller (0.999 needs 40,750)."""
    target, draft = tiny_pair
    samples, _ = draw(target, draft, PeekingPolicy(target, draft, SAMPLING, max_gamma=2, reroll=False), n=40_000)
    p_value = chi_square_pvalue(samples, exact_distribution(target, PROMPT, LENGTH, SAMPLING))
    assert p_value < 1e-6, f"the subtle peeking policy passed the test (p = {p_value:.2e})"


GREEDY_POLICIES = {**{f"{name} (default)": factory() for name, factory in POLICIES.items()},
                   **{f"{name} (small)": policy for name, policy in SMALL.items()},
                   "int 3": 3, "confidence, top probability": ConfidenceStop(threshold=0.5, signal="top")}


@pytest.mark.parametrize("name", GREEDY_POLICIES)
def test_greedy_identity_for_every_policy(small_pair, name):
    target, draft = small_pair
    policy = GREEDY_POLICIES[name]
    for prompt in ([1, 2, 3], [5, 9, 5, 9, 5, 9, 5], [7]):
        plain = autoregressive_generate(target, prompt, 30, GREEDY, eos_token_id=None).tokens
        for drafter in (draft, NgramDrafter(), UnigramDrafter()):
            res = speculative_generate(target, drafter, prompt, gamma=policy, max_new_tokens=30,
                                       sampling=GREEDY, eos_token_id=None)
            assert res.tokens == plain, f"{name}, {getattr(drafter, 'name', 'model')}, prompt {prompt}"
            assert all(r.draft_stop in STOP_REASONS for r in res.rounds)


def test_trace_records_gamma_and_why_drafting_stopped(small_pair):
    target, draft = small_pair
    res = speculative_generate(target, draft, [1, 2, 3], gamma=Heuristic(start_gamma=3, max_gamma=6),
                               max_new_tokens=40, sampling=GREEDY, eos_token_id=None)
    expected = 3  # the heuristic schedule, replayed from the trace's own verdicts
    for r in res.rounds:
        assert r.gamma == expected
        assert r.draft_stop == (STOP_GAMMA if len(r.draft_tokens) == r.gamma else STOP_TOKENS_LEFT)
        all_in = r.n_accepted == len(r.draft_tokens) > 0
        expected = min(6, max(1, expected + (2 if all_in else -1)))
    assert len({r.gamma for r in res.rounds}) >= 2

    policy = ConfidenceStop(threshold=0.4, signal="margin", max_gamma=8)
    res = speculative_generate(target, draft, [1, 2, 3], gamma=policy, max_new_tokens=40, sampling=GREEDY,
                               eos_token_id=None)
    stops = [r for r in res.rounds if r.draft_stop == STOP_CONFIDENCE]
    assert stops, "the threshold never ended a round: pick one inside the drafter's margins"
    for r in (r for r in res.rounds if r.draft_tokens):  # every draft after a round's first kept the margin
        assert all(m >= policy.threshold for m in r.draft_margin[1:])
        if r.draft_stop != STOP_CONFIDENCE:  # the round ran to its gamma, or to the tokens still wanted
            assert len(r.draft_tokens) == min(r.gamma, 40 - r.position - 1)
        else:  # the drafter paid one more pass: the one whose distribution the policy declined
            assert r.draft_passes >= len(r.draft_tokens) + 1


def test_confidence_is_of_the_raw_distribution():
    logits = torch.log(torch.tensor([0.6, 0.3, 0.1]))
    assert float(confidence(logits, "top")) == pytest.approx(0.6)
    assert float(confidence(logits, "margin")) == pytest.approx(0.3)


def test_acceptance_policy_follows_measured_acceptance():
    policy = AcceptanceDriven(max_gamma=10)
    assert policy.best_gamma([0.0] * 10) == 1
    assert policy.best_gamma([1.0] * 10) == 10
    session = policy.start()
    first = session.next_gamma([1])
    for _ in range(20):  # every draft rejected: gamma comes down
        session.observe(session.next_gamma([1]), 0)
    assert session.next_gamma([1]) < first
    for _ in range(20):  # every draft accepted: gamma goes up
        g = session.next_gamma([1])
        session.observe(g, g)
    assert session.next_gamma([1]) > first


@pytest.mark.parametrize("name", sorted(SMALL))
def test_same_seed_same_text_and_interleaved_generations_do_not_interact(small_pair, name):
    target, draft = small_pair
    policy = POLICIES[name]()
    kwargs = dict(max_new_tokens=40, sampling=SamplingConfig(1.0), seed=7, eos_token_id=None)
    alone = speculative_generate(target, draft, [1, 2, 3], gamma=policy, **kwargs)
    again = speculative_generate(target, draft, [1, 2, 3], gamma=policy, **kwargs)
    assert again.tokens == alone.tokens and [r.gamma for r in again.rounds] == [r.gamma for r in alone.rounds]

    others = []

    def run_another(r):  # a whole other generation with the same policy object, between two rounds
        if r.index in (1, 3):
            others.append(speculative_generate(target, draft, [4, 4, 4, 4], gamma=policy, max_new_tokens=30,
                                               sampling=SamplingConfig(1.0), seed=r.index, eos_token_id=None))

    interleaved = speculative_generate(target, draft, [1, 2, 3], gamma=policy, on_round=run_another, **kwargs)
    assert interleaved.tokens == alone.tokens
    assert [r.gamma for r in interleaved.rounds] == [r.gamma for r in alone.rounds]
    assert others[0].tokens == speculative_generate(target, draft, [4, 4, 4, 4], gamma=policy, max_new_tokens=30,
                                                    sampling=SamplingConfig(1.0), seed=1,
                                                    eos_token_id=None).tokens


@pytest.mark.parametrize("make, word", [
    (lambda: Constant(0), "gamma"), (lambda: Constant(33), "gamma"),
    (lambda: Heuristic(max_gamma=33), "max_gamma"), (lambda: Heuristic(start_gamma=9, max_gamma=8), "start_gamma"),
    (lambda: Heuristic(min_gamma=0), "min_gamma"),
    (lambda: ConfidenceStop(threshold=1.5), "threshold"), (lambda: ConfidenceStop(threshold=float("nan")), "threshold"),
    (lambda: ConfidenceStop(signal="entropy"), "signal"), (lambda: ConfidenceStop(max_gamma=0), "max_gamma"),
    (lambda: AcceptanceDriven(decay=1.5), "decay"), (lambda: AcceptanceDriven(prior_alpha=1.0), "prior_alpha"),
    (lambda: AcceptanceDriven(costs=Costs(c=-1)), "c"), (lambda: Costs(table=(1.0,)), "v"),
    (lambda: Calibrated(edges=(0.5, 0.2), prior_by_bin=(1, 1, 1)), "edges"), (lambda: Calibrated(decay=-0.1), "decay"),
    (lambda: Calibrated(prior_by_bin=(0.5,)), "prior_by_bin"),
])
def test_policy_parameters_are_bounded(make, word):
    with pytest.raises(ValueError, match=word):
        make()


@pytest.mark.parametrize("gamma", [0, 33, True, "4", 2.0, None])
def test_speculative_generate_rejects_a_bad_gamma(small_pair, gamma):
    target, draft = small_pair
    with pytest.raises(ValueError, match="gamma"):
        speculative_generate(target, draft, [1, 2], gamma=gamma, max_new_tokens=4)


def test_a_policy_asking_for_an_unbounded_gamma_is_refused(small_pair):
    class Greedy(Policy):  # asks for far too many drafts
        name, max_gamma = "too long", 64

        def start(self):
            return self

        keep_drafting = None

        def next_gamma(self, context):
            return 64

        def observe(self, n_drafted, n_accepted):
            pass

    target, draft = small_pair
    with pytest.raises(ValueError, match="gamma"):
        speculative_generate(target, draft, [1, 2], gamma=Greedy(), max_new_tokens=4)
