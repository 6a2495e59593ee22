"""Blocked recall against load for the risk ordering and for the claim gate; the area between them, the difference
at a load, with bootstrap intervals.

The risk ordering inspects the auditor's flags first (the policy blocks them whatever the load), then every
other run by risk, highest first (decide/review.py). The gate inspects a random share of the success claims
(equal_load.py). At k inspections of N runs: recall_risk(k) = positives among the first k / positives, and
recall_gate(k) = min(1, k / S) * the gate's blocked recall. The area between the curves is
(1/N) * sum over k of (recall_risk(k) - recall_gate(k)): above 0, the ordering beats the gate on average over
every load a user might choose.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Sequence

from referee.audit.decide.policy import ReviewSpec
from referee.audit.decide.review import cap_review, review_order
from referee.evaluation.bootstrap import BootstrapSpec, Interval, percentile
from referee.evaluation.equal_load import N_JOINT, difference, difference_interval, joint_cell


@dataclass(frozen=True)
class RiskItem:
    """One scored run: positive?, does the gate block it (a success claim)?, its risk and the auditor's disposition."""

    positive: bool
    gate_blocks: bool
    risk: float | None
    disposition: str


def ordered(items: Sequence[RiskItem]) -> list[RiskItem]:
    """The runs in review order: flags, then by risk, highest first."""
    order = review_order([(str(i), it.risk, it.disposition) for i, it in enumerate(items)])
    return [items[int(i)] for i in order]


def curves(items: Sequence[RiskItem]) -> tuple[list[float], list[float], list[float]]:
    """(loads k/N, risk-ordered blocked recall, the gate's expected blocked recall) for k = 0..N; empty lists when
    there are no positives or no success claims.

    >>> its = [RiskItem(True, True, .9, "pass"), RiskItem(False, True, .1, "pass"), RiskItem(False, False, .5, "pass")]
    >>> curves(its)
    ([0.0, 0.3333333333333333, 0.6666666666666666, 1.0], [0.0, 1.0, 1.0, 1.0], [0.0, 0.5, 1.0, 1.0])
    """
    n, pos = len(items), sum(it.positive for it in items)
    s = sum(it.gate_blocks for it in items)
    if not n or not pos or not s:
        return [], [], []
    gate_recall = sum(it.positive and it.gate_blocks for it in items) / pos
    loads, risk, gate, got = [0.0], [0.0], [0.0], 0
    for k, it in enumerate(ordered(items), 1):
        got += it.positive
        loads.append(k / n)
        risk.append(got / pos)
        gate.append(min(1.0, k / s) * gate_recall)
    return loads, risk, gate


def area_between(items: Sequence[RiskItem]) -> float | None:
    """Mean over k = 1..N of risk-ordered minus gate blocked recall (None when undefined).

    >>> its = [RiskItem(True, True, .9, "pass"), RiskItem(False, True, .1, "pass"), RiskItem(False, False, .5, "pass")]
    >>> round(area_between(its), 4)   # (1 - .5 + 0 + 0) / 3
    0.1667
    """
    loads, risk, gate = curves(items)
    if not loads:
        return None
    return sum(r - g for r, g in zip(risk[1:], gate[1:])) / (len(loads) - 1)


def joint_at_load(items: Sequence[RiskItem], load: float) -> list[int]:
    """The 12 joint cells (equal_load.py) of the risk ordering capped at `load`: flags stay, the riskiest others
    are reviewed up to the load, the rest pass.

    >>> its = [RiskItem(True, True, .9, "pass"), RiskItem(False, True, .1, "review"),
    ...        RiskItem(False, False, .5, "pass")]
    >>> joint_at_load(its, 1 / 3)
    [1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]
    >>> joint_at_load(its, 0.0)   # nothing inspected: nothing blocked
    [1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0]
    """
    runs = [(str(i), it.risk, it.disposition) for i, it in enumerate(items)]
    # a load of 0 (an audit that inspected nothing) reviews nothing: flags stay, every other run passes
    capped = cap_review(runs, ReviewSpec(max_load=load)) if load > 0 else \
        {rid: "flag" if disp == "flag" else "pass" for rid, _, disp in runs}
    cells = [0] * N_JOINT
    for i, it in enumerate(items):
        cells[joint_cell(it.gate_blocks, it.positive, capped[str(i)])] += 1
    return cells


@dataclass(frozen=True)
class RiskComparison:
    """The risk ordering against the gate: both curves, the area between them and the difference at `load`."""

    loads: list[float]
    risk_recall: list[float]
    gate_recall: list[float]
    area: float | None
    area_ci: Interval
    load: float
    difference: float | None
    difference_ci: Interval


def compare_at(items: Sequence[RiskItem], load: float, spec: BootstrapSpec | None) -> RiskComparison:
    """Curves, area and the difference at `load`, with percentile intervals when `spec` is given: the area by
    resampling runs (seeded), the difference by equal_load's joint-cell bootstrap (the capped selection held fixed).

    >>> its = [RiskItem(i % 6 == 0, i % 2 == 0, 0.9 if i % 6 == 0 else i / 100, "pass") for i in range(30)]
    >>> c = compare_at(its, 0.2, BootstrapSpec(resamples=50, seed=1)); round(c.area, 3), c.difference
    (0.167, 0.6)
    >>> c.area_ci.lo > 0 and c.difference_ci.lo > 0
    True
    """
    loads, risk, gate = curves(items)
    area = area_between(items)
    joint = joint_at_load(items, load)
    diff = difference(joint)
    if spec is None or spec.resamples <= 0:
        return RiskComparison(loads, risk, gate, area, Interval(None, None), load, diff, Interval(None, None))
    rng = random.Random(spec.seed)
    got, undefined = [], 0
    for _ in range(spec.resamples):
        a = area_between([items[rng.randrange(len(items))] for _ in items])
        if a is None:
            undefined += 1
        else:
            got.append(a)
    got.sort()
    tail = (1 - spec.level) / 2
    area_ci = Interval(percentile(got, tail), percentile(got, 1 - tail), undefined) if got and area is not None \
        else Interval(None, None, undefined)
    return RiskComparison(loads, risk, gate, area, area_ci, load, diff, difference_interval(joint, spec))
