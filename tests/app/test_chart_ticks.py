"""Log-axis ticks that stay readable on a projector (ui/charts.log_ticks)."""
import pytest

from ui.widgets import charts


def test_log_ticks_cover_the_range_with_1_2_5_steps():
    ticks = charts.log_ticks(13.2, 640)
    assert ticks == [10, 20, 50, 100, 200, 500, 1000]
    assert ticks[0] <= 13.2 and ticks[-1] >= 640


def test_log_ticks_of_one_value_and_bad_ranges():
    assert charts.log_ticks(3, 3) == [2, 5]
    with pytest.raises(ValueError, match="lo"):
        charts.log_ticks(0, 5)
