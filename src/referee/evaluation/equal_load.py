"""Every method against claim-gate-only at the method's own inspection load; pure functions of cell counts.

claim-gate-only blocks every success claim: S runs of N, blocked recall R_cg, load S/N. Run at a
lower load L it inspects a uniformly random L*N of its S runs; at L*N >= S it inspects all of them
and other runs, which are counted as finding nothing more. Its expected blocked recall at load L is
therefore min(1, L*N/S) * R_cg, its expected silent-pass rate one minus that, and its expected
yield min(1, L*N/S) * (blocked positives) / (L*N). A method with load L_m and blocked recall R_m
beats the simple gate at equal cost when R_m - R_cg(L_m) > 0.

Joint cells: each run is counted once per method in one of 12 cells, (does the gate block it?,
positive?, the method's disposition). Both methods' cells are marginals of these, so one
multinomial draw of the 12 cells (bootstrap.py) resamples the method and the gate over the same
runs, and the difference gets a paired percentile interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from referee.evaluation.bootstrap import BootstrapSpec, Interval, bootstrap_stat
from referee.evaluation.metrics import N_CELLS, Confusion, cell, rates

GATE = "claim-gate-only"
N_JOINT = 2 * N_CELLS  # cell = 6 * (gate blocks) + 3 * positive + disposition code


def joint_cell(gate_blocks: bool, positive: bool, disposition: str) -> int:
    """The index of one run among the 12 joint cells of a method and the gate.

    >>> joint_cell(False, False, "pass"), joint_cell(True, True, "flag"), joint_cell(True, False, "review")
    (0, 10, 8)
    """
    return N_CELLS * int(bool(gate_blocks)) + cell(positive, disposition)


def marginals(joint: Sequence[int]) -> tuple[Confusion, Confusion]:
    """The method's six cells and the gate's (blocked runs count as `flag`, the others as `pass`).

    >>> m, g = marginals([3, 0, 0, 0, 0, 0, 1, 2, 0, 1, 3, 0])
    >>> (m.n, m.flags, m.positives), (g.n, g.flags, g.blocked_positives)
    ((10, 5, 4), (10, 7, 4))
    """
    j = [int(x) for x in joint]
    if len(j) != N_JOINT:
        raise ValueError(f"expected {N_JOINT} joint cell counts, got {len(j)}")
    method = Confusion.from_cells(a + b for a, b in zip(j[:N_CELLS], j[N_CELLS:]))
    gate = Confusion(neg_pass=sum(j[0:3]), pos_pass=sum(j[3:6]), neg_flag=sum(j[6:9]), pos_flag=sum(j[9:12]))
    return method, gate


@dataclass(frozen=True)
class GateAtLoad:
    """claim-gate-only's expected gating metrics when it may inspect only a given number of runs."""

    blocked_recall: float | None
    silent_pass_rate: float | None
    inspection_yield: float | None


def gate_at_inspections(gate: Confusion, inspections: float) -> GateAtLoad:
    """The gate inspecting `inspections` runs: a random share of the S runs it blocks, all S beyond that.

    None where undefined: no positives, or the gate blocks no run (no success claim); the yield also
    when nothing is inspected.

    >>> g = Confusion(neg_pass=6, neg_flag=1, pos_flag=3)   # N 10, S 4, blocked recall 1
    >>> gate_at_inspections(g, 2), gate_at_inspections(g, 8).inspection_yield
    (GateAtLoad(blocked_recall=0.5, silent_pass_rate=0.5, inspection_yield=0.75), 0.375)
    >>> gate_at_inspections(Confusion(neg_pass=5, pos_pass=2), 3).blocked_recall is None
    True
    """
    s = gate.flags + gate.reviews
    if gate.positives == 0 or s == 0:
        return GateAtLoad(None, None, None)
    share = min(1.0, inspections / s)
    blocked = share * gate.blocked_positives
    recall = blocked / gate.positives
    return GateAtLoad(recall, 1.0 - recall, blocked / inspections if inspections > 0 else None)


def gate_at_load(gate: Confusion, load: float | None) -> GateAtLoad:
    """The gate at inspection load `load` (inspections / N): min(1, load * N / S) * its blocked recall.

    >>> gate_at_load(Confusion(neg_pass=6, neg_flag=1, pos_flag=3), 0.3).blocked_recall
    0.75
    """
    if load is None:
        return GateAtLoad(None, None, None)
    return gate_at_inspections(gate, load * gate.n)


@dataclass(frozen=True)
class AtEqualLoad:
    """One method and claim-gate-only at the method's load; difference > 0: the method beats the gate."""

    load: float | None
    blocked_recall: float | None
    silent_pass_rate: float | None
    inspection_yield: float | None
    gate: GateAtLoad
    difference: float | None


def at_equal_load(method: Confusion, gate: Confusion) -> AtEqualLoad:
    """Compare a method with the gate run at the method's own load, on the same N runs.

    >>> m = Confusion(neg_pass=7, neg_flag=1, pos_pass=1, pos_flag=1)   # load 0.2, blocked recall 0.5
    >>> g = Confusion(neg_pass=6, neg_flag=2, pos_flag=2)               # load 0.4, blocked recall 1
    >>> r = at_equal_load(m, g)
    >>> r.gate.blocked_recall, r.difference, r.inspection_yield, r.gate.inspection_yield
    (0.5, 0.0, 0.5, 0.5)
    """
    if method.n != gate.n:
        raise ValueError(f"the method scored {method.n} runs and the gate {gate.n}: compare them on the same runs")
    r = rates(method)
    g = gate_at_inspections(gate, method.flags + method.reviews) if method.n else GateAtLoad(None, None, None)
    diff = None
    if r["blocked_recall"] is not None and g.blocked_recall is not None:
        diff = r["blocked_recall"] - g.blocked_recall
    return AtEqualLoad(r["inspection_load"], r["blocked_recall"], r["silent_pass_rate"], r["inspection_yield"],
                       g, diff)


def difference(joint: Sequence[int]) -> float | None:
    """R_m - R_cg(L_m) from the 12 joint cells (the statistic the bootstrap resamples).

    >>> round(difference([3, 0, 0, 0, 0, 0, 1, 2, 0, 1, 3, 0]), 4)   # 3/4 at load 0.5; gate: 4/4 at 0.7 -> 5/7
    0.0357
    """
    return at_equal_load(*marginals(joint)).difference


def difference_interval(joint: Sequence[int], spec: BootstrapSpec) -> Interval:
    """Percentile interval of the difference, the method and the gate resampled jointly over the same runs.

    >>> iv = difference_interval([30, 5, 0, 0, 10, 0, 5, 20, 0, 2, 18, 0], BootstrapSpec(resamples=200, seed=1))
    >>> iv.lo < difference([30, 5, 0, 0, 10, 0, 5, 20, 0, 2, 18, 0]) < iv.hi
    True
    """
    return bootstrap_stat(joint, difference, spec)
