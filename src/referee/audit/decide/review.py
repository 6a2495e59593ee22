"""The review cap, a second pure pass over a file's (run_id, risk, disposition): the riskiest undecided runs first.

`decide` judges one record; a load cap needs the whole file's risks, so it is applied after, over the
records: `referee replay`, `referee eval` and `referee show --show review` apply the policy's `review`
block; the audit file itself keeps the table's dispositions.
"""

from __future__ import annotations

from typing import Sequence

from referee.audit.decide.policy import ReviewSpec


def cap_review(items: Sequence[tuple[str, float | None, str]], spec: ReviewSpec | None) -> dict[str, str]:
    """The disposition of each run once review is capped: `flag` stays; every other run is `review` when its risk
    is at least `min_risk` and it is among the riskiest that keep flags + reviews within `max_load` of all runs;
    the others `pass`. Ties keep file order. No spec (or one with neither bound): dispositions as they are.

    A run without a risk (a record older than version 6) keeps its disposition and counts towards the load.

    >>> runs = [("a", 0.9, "pass"), ("b", 0.2, "review"), ("c", 0.7, "flag"), ("d", 0.6, "pass")]
    >>> cap_review(runs, ReviewSpec(max_load=0.5))
    {'a': 'review', 'b': 'pass', 'c': 'flag', 'd': 'pass'}
    >>> cap_review(runs, ReviewSpec(min_risk=0.5))
    {'a': 'review', 'b': 'pass', 'c': 'flag', 'd': 'review'}
    """
    out = {rid: disp for rid, _, disp in items}
    if spec is None or (spec.max_load is None and spec.min_risk is None):
        return out
    fixed = sum(1 for _, r, d in items if d == "flag" or (r is None and d == "review"))
    slots = len(items) if spec.max_load is None else max(0, int(spec.max_load * len(items) + 1e-9) - fixed)
    floor = spec.min_risk if spec.min_risk is not None else 0.0
    open_ = [(i, rid, r) for i, (rid, r, d) in enumerate(items) if d != "flag" and r is not None]
    ranked = sorted(open_, key=lambda x: (-x[2], x[0]))
    for n, (_, rid, r) in enumerate(ranked):
        out[rid] = "review" if n < slots and r >= floor else "pass"
    return out


def review_order(items: Sequence[tuple[str, float | None, str]]) -> list[str]:
    """Runs in the order a reviewer should take them: flags, then the rest by risk, highest first (no risk: last).

    >>> review_order([("a", 0.1, "review"), ("b", None, "review"), ("c", 0.5, "pass"), ("d", 0.2, "flag")])
    ['d', 'c', 'a', 'b']
    """
    keyed = [((d != "flag", r is None, -(r or 0.0), i), rid) for i, (rid, r, d) in enumerate(items)]
    return [rid for _, rid in sorted(keyed)]
