"""Statistics of traced rounds (analysis.round_stats)."""
import pytest

from specdec_core.analysis.round_stats import acceptance_by_position, measured_alpha, tokens_per_round
from specdec_core.trace import RoundTrace


def _round(accept_prob, n_accepted, kind):
    n = len(accept_prob)
    return RoundTrace(index=0, position=0, draft_tokens=list(range(n)), n_accepted=n_accepted, next_token=0,
                      next_kind=kind, emitted=[0] * (n_accepted + 1), q_draft=[1.0] * n, p_draft=accept_prob,
                      accept_prob=accept_prob, uniforms=None, draft_pass_s=[0.0] * n, target_pass_s=0.0,
                      draft_passes=n)


def test_round_stats_by_position():
    rounds = [_round([0.9, 0.2, 0.5], 1, "corrective"),  # judged: 0.9 (accepted), 0.2 (rejected)
              _round([0.6, 0.8, 0.7], 3, "bonus"),  # all three judged and accepted
              _round([0.1, 0.3, 0.3], 0, "corrective")]  # only the first judged
    assert measured_alpha(rounds) == pytest.approx((0.9 + 0.2 + 0.6 + 0.8 + 0.7 + 0.1) / 6)
    assert tokens_per_round(rounds) == pytest.approx((2 + 4 + 1) / 3)
    frame = acceptance_by_position(rounds, 3)
    assert list(frame["reached"]) == [3, 2, 1] and list(frame["accepted"]) == [2, 1, 1]
    assert list(frame["rate"]) == pytest.approx([2 / 3, 0.5, 1.0])
