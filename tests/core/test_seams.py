"""Declared seams: a drafter or a policy says on its class what it can do (reads_target, drafts_trees,
check_target, start_batch, describe, with_costs), and the core reads that declaration; what is not
declared is refused where the core needs it, and what is not a Drafter or a Policy is refused outright."""
import pytest
import torch

from specdec_core import GREEDY, autoregressive_generate, speculative_generate, tree_generate
from specdec_core.batch import batch_generate
from specdec_core.drafters import Drafter, DraftSession, NgramDrafter, PerRowDraftSessions, Proposal, as_drafter
from specdec_core.policies import Constant, Costs, Policy, as_policy, describe, with_costs


class Repeat(DraftSession):
    """Proposes the context's last token again; records the features it is handed."""

    def __init__(self, vocab):
        self.vocab, self.seen = vocab, []

    def propose(self, context, gamma, sampling, generator, keep_drafting=None) -> Proposal:
        tokens = [context[-1]] * gamma
        return Proposal(tokens, torch.nn.functional.one_hot(torch.tensor(tokens), self.vocab).float())

    def observe_target(self, features):
        self.seen.append(features.shape)


class Plain(Drafter):
    name = "repeat"

    def __init__(self):
        self.sessions = []

    def start(self, vocab):
        self.sessions.append(Repeat(vocab))
        return self.sessions[-1]


class Reading(Plain):
    reads_target = True


def test_a_drafter_declaring_reads_target_gets_the_targets_features(small_pair):
    target, _ = small_pair
    reading, plain = Reading(), Plain()
    want = autoregressive_generate(target, [1, 2, 3], max_new_tokens=8, sampling=GREEDY, eos_token_id=None).tokens
    for drafter in (reading, plain):
        out = speculative_generate(target, drafter, [1, 2, 3], gamma=2, max_new_tokens=8, sampling=GREEDY,
                                   eos_token_id=None)
        assert out.tokens == want
    assert reading.sessions[0].seen and sum(s[0] for s in reading.sessions[0].seen) >= 2  # the prompt's, then more
    assert plain.sessions[0].seen == []  # not declared: never handed features


def test_a_drafter_not_declaring_trees_is_refused_and_one_declaring_them_runs(small_pair):
    target, _ = small_pair

    class Trees(NgramDrafter):
        pass

    class NoTrees(Plain):
        pass

    with pytest.raises(ValueError, match="cannot draft token trees"):
        tree_generate(target, NoTrees(), [1, 2], max_new_tokens=4)
    assert Trees.drafts_trees
    want = autoregressive_generate(target, [1, 2, 1, 2], max_new_tokens=6, sampling=GREEDY, eos_token_id=None).tokens
    assert tree_generate(target, Trees(), [1, 2, 1, 2], max_new_tokens=6, sampling=GREEDY,
                         eos_token_id=None).tokens == want


def test_a_declared_check_target_is_called_before_any_pass(small_pair):
    target, _ = small_pair
    passes = []

    class Picky(Plain):
        def check_target(self, model):
            raise ValueError("trained on another target")

        def start(self, vocab):
            passes.append(vocab)
            return super().start(vocab)

    with pytest.raises(ValueError, match="another target"):
        speculative_generate(target, Picky(), [1, 2], gamma=2, max_new_tokens=4)
    assert passes == []


def test_a_declared_start_batch_is_used_and_the_default_is_one_session_per_row(small_pair):
    target, _ = small_pair
    used = []

    class Batched(Plain):
        def start_batch(self, vocab, rows):
            used.append(rows)
            return super().start_batch(vocab, rows)

    assert isinstance(Plain().start_batch(40, 3), PerRowDraftSessions)
    out = batch_generate(target, Batched(), [[1, 2], [3, 4, 5]], gamma=2, max_new_tokens=5, sampling=GREEDY,
                         eos_token_id=None)
    assert used == [2]
    for prompt, row in zip([[1, 2], [3, 4, 5]], out.results):
        assert row.tokens == autoregressive_generate(target, prompt, max_new_tokens=5, sampling=GREEDY,
                                                     eos_token_id=None).tokens


def test_what_is_not_a_drafter_or_a_policy_is_refused():
    class LooksLikeADrafter:  # the right methods, but no declaration
        name, vocab_size, context_length = "duck", None, None

        def start(self, vocab):
            return None

    class LooksLikeAPolicy:
        name, max_gamma = "duck", 4

        def start(self):
            return None

    with pytest.raises(TypeError, match="Drafter"):
        as_drafter(LooksLikeADrafter())
    with pytest.raises(ValueError, match="draft-length policy"):
        as_policy(LooksLikeAPolicy())


def test_a_policy_declares_describe_and_with_costs_with_defaults():
    class Fixed(Policy):
        name, max_gamma = "fixed three", 3

        def start(self):
            return Constant(3).start()

    fixed = Fixed()
    assert describe(fixed) == "fixed three"  # the default: its name
    assert with_costs(fixed, Costs()) is fixed  # the default: plans with no costs
    assert as_policy(fixed) is fixed
