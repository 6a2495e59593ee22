"""Time limits: the one rule every timeout referee waits on is held to (a plan's, and the audit's --timeout)."""

from __future__ import annotations

import math

MAX_TIMEOUT_S = 86_400.0  # a day: longer than any step should take, and far below what a clock overflows on
MAX_RETRIES = 4  # retries of one model call after the first attempt (429, 5xx, timeouts): --max-retries' default


def check_seconds(v: float) -> float:
    """A timeout: a finite number of seconds above 0 and at most a day. 0 or less would kill at once,
    `.nan` would mean no timeout at all, and `1e308` overflows a clock when the runner waits on it.

    >>> check_seconds(2.5)
    2.5
    >>> check_seconds(float("nan"))
    Traceback (most recent call last):
    ...
    ValueError: a timeout must be a number of seconds above 0 and at most 86400 (a day); got nan
    """
    if not (math.isfinite(v) and 0 < v <= MAX_TIMEOUT_S):
        raise ValueError(f"a timeout must be a number of seconds above 0 and at most {MAX_TIMEOUT_S:g} (a day); "
                         f"got {v:g}")
    return v
