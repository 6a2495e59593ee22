"""k-of-n votes over extraction runs: a state wins only with at least k votes and no tie. Pure."""

from __future__ import annotations

from collections import Counter
from typing import Sequence


def effective_k(threshold: str | int, n: int) -> int:
    """The number of agreeing runs needed out of n.

    >>> effective_k("majority", 5), effective_k("majority", 4), effective_k("all", 5), effective_k(3, 1)
    (3, 3, 5, 1)
    """
    if n <= 0:
        return 1
    if threshold == "majority":
        return n // 2 + 1
    if threshold == "all":
        return n
    return min(int(threshold), n)  # an integer k larger than n cannot be reached: cap it


def vote(states: Sequence[str], threshold: str | int = "majority", *, default: str = "unknown") -> str:
    """The state most runs agree on, if at least k do and no other state has as many; else `default`.

    >>> vote(["completed", "completed", "unknown"])
    'completed'
    >>> vote(["completed", "not_completed"])
    'unknown'
    >>> vote(["completed", "completed", "not_completed", "not_completed"], 2)
    'unknown'
    >>> vote([])
    'unknown'
    """
    if not states:
        return default
    k = effective_k(threshold, len(states))
    counts = Counter(states)
    top = max(counts.values())
    leaders = [s for s, c in counts.items() if c == top]
    if len(leaders) > 1 or top < k:  # a tie for the lead, or nobody reached k
        return default
    return leaders[0]
