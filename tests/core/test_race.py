"""The race's simulation follows the cost model (theory)."""
import numpy as np
import pytest

from specdec_core import theory


def test_simulated_race_follows_the_model():
    plain = theory.simulated_plain(40)
    assert plain.times == [float(i) for i in range(1, 41)] and plain.finish == 40
    lane = theory.simulated_speculative(0.8, 4, 0.02, 40, v=1.0, seed=3)
    assert len(lane.times) == 40 and all(b >= a for a, b in zip(lane.times, lane.times[1:]))
    assert lane.finish == pytest.approx(lane.passes * (4 * 0.02 + 1))
    finishes = [theory.simulated_speculative(0.8, 4, 0.02, 400, seed=s).finish for s in range(200)]
    assert np.mean(finishes) == pytest.approx(theory.expected_finish(0.8, 4, 0.02, 400), rel=0.03)
    with pytest.raises(ValueError):
        theory.simulated_speculative(0.8, 4, -0.1)
