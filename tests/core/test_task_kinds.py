"""Alpha per kind of text: the loop lives in the core and uses its one acceptance method."""
from specdec_core.analysis import acceptance
from specdec_core.analysis.task_kinds import KINDS, alpha_by_kind
from specdec_core.sampling_config import GREEDY, SamplingConfig


def test_alpha_by_kind_is_the_core_acceptance_of_each_passage(pair):
    got = alpha_by_kind(pair.target, pair.draft, pair.tokenizer, SamplingConfig(1.0),
                        context_length=pair.context_length)
    assert list(got) == list(KINDS)
    for kind, text in KINDS.items():
        ids = pair.tokenizer.encode(text)[:pair.context_length]
        assert got[kind] == acceptance.acceptance(pair.target, pair.draft, [ids], SamplingConfig(1.0))
        assert 0 <= got[kind]["alpha"] <= 1 and got[kind]["positions"] == len(ids)


def test_greedy_alpha_is_the_agreement_of_the_argmaxes(pair):
    got = alpha_by_kind(pair.target, pair.draft, pair.tokenizer, GREEDY, context_length=pair.context_length)
    for res in got.values():
        assert res["alpha"] == res["alpha_greedy"]
