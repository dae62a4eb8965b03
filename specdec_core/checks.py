"""The bounds the core's settings are checked against, and the two checks every setting goes through
(an integer or a finite number in a range, else a ValueError that names the setting)."""
import math

MAX_GAMMA = 32  # beyond this a round is all waste: even alpha = 0.95 keeps 0.95**32 < 20% of drafts


def check_int(name: str, value, lo: int, hi: int) -> int:
    """value, if it is an integer in [lo, hi]; else ValueError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{name} must be an integer in [{lo}, {hi}], got {value!r}")
    return value


def check_float(name: str, value, lo: float, hi: float) -> float:
    """value as a float, if it is a finite number in [lo, hi]; else ValueError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not lo <= value <= hi:
        raise ValueError(f"{name} must be a number in [{lo}, {hi}], got {value!r}")
    return float(value)
