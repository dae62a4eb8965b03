"""The race's simulation follows the cost model (analysis.race)."""
import numpy as np
import pytest

from specdec_core.analysis import race


def test_simulated_race_follows_the_model():
    plain = race.simulated_plain(40)
    assert plain.times == [float(i) for i in range(1, 41)] and plain.finish == 40
    lane = race.simulated_speculative(0.8, 4, 0.02, 40, v=1.0, seed=3)
    assert len(lane.times) == 40 and all(b >= a for a, b in zip(lane.times, lane.times[1:]))
    assert lane.finish == pytest.approx(lane.passes * (4 * 0.02 + 1))
    finishes = [race.simulated_speculative(0.8, 4, 0.02, 400, seed=s).finish for s in range(200)]
    assert np.mean(finishes) == pytest.approx(race.expected_finish(0.8, 4, 0.02, 400), rel=0.03)
    with pytest.raises(ValueError):
        race.simulated_speculative(0.8, 4, -0.1)
