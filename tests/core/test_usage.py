"""Which computed distributions a generation used (analysis.usage)."""
from specdec_core.analysis.usage import pass_usage, usage_summary
from specdec_core.trace import GenerationResult, RoundTrace


def _round(index, position, drafts, n_accepted, kind, emitted):
    n = len(drafts)
    return RoundTrace(index=index, position=position, draft_tokens=drafts, n_accepted=n_accepted, next_token=99,
                      next_kind=kind, emitted=emitted, q_draft=[1.0] * n, p_draft=[1.0] * n, accept_prob=[1.0] * n,
                      uniforms=None, draft_pass_s=[0.0] * n, target_pass_s=0.0, draft_passes=n)


def test_pass_usage_marks_used_and_discarded_distributions():
    rounds = [_round(0, 0, [1, 2, 3], 1, "corrective", [1, 99]),  # 4 computed: accepted, corrective, 2 discarded
              _round(1, 2, [4, 5, 6], 3, "bonus", [4, 5, 6, 99])]  # 4 computed, all used
    result = GenerationResult([1, 99, 4, 5, 6, 99], 2, 6, rounds, [], [0.0, 0.0], 0.0, 0.0, "max_new_tokens", 0)
    frame = pass_usage(result)
    assert list(frame["status"]) == ["accepted", "corrective", "discarded", "discarded",
                                     "accepted", "accepted", "accepted", "bonus"]
    assert list(frame["position"]) == [0, 1, 2, 3, 2, 3, 4, 5]
    assert usage_summary(frame) == {"passes": 2, "computed": 8, "used": 6, "used_share": 0.75, "tokens_per_pass": 3.0}
    plain = GenerationResult([7, 8], 2, 0, [], ["target"] * 2, [0.0, 0.0], 0.0, 0.0, "max_new_tokens", 0)
    assert list(pass_usage(plain)["status"]) == ["target", "target"]
