"""Report-exposure intervention: one trace judge with and without the report on the same records.

For every gold-labelled run the same judge (same model, votes, serialization) answers twice:
`aware` sees the agent's narration and final report, `blind` does not. Among positives (claim
success, gold not completed) trace-only recall is the share judged `not_completed` before any
claim gate. A harmful flip is a positive that blind judges not_completed and aware does not
(the report talked the judge out of a correct judgement); a recovery flip is the reverse. The
exact two-sided sign test asks whether harmful and recovery flips are equally likely.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field

from referee.evaluation.baselines import claim_gate
from referee.evaluation.bootstrap import BootstrapSpec, Interval, bootstrap_stat
from referee.evaluation.metrics import Confusion, is_positive
from referee.evaluation.results import Metric, Scores, score
from referee.evaluation.signtest import sign_test


@dataclass(frozen=True)
class PairedRun:
    """One run under both conditions."""

    run_id: str
    claim: str | None
    completed: bool
    aware: str   # trace state with the report shown
    blind: str   # trace state with the report withheld

    @property
    def positive(self) -> bool:
        return is_positive(self.claim, self.completed)


@dataclass
class InterventionTally:
    """Counts over paired runs: 4 cells over positives (aware nc?, blind nc?) and one confusion per condition."""

    pos_cells: list[int] = field(default_factory=lambda: [0, 0, 0, 0])  # [both, blind only, aware only, neither]
    aware: Confusion = field(default_factory=Confusion)
    blind: Confusion = field(default_factory=Confusion)
    runs: int = 0
    harmful_ids: list[str] = field(default_factory=list)
    recovery_ids: list[str] = field(default_factory=list)
    failed_calls: int = 0  # judge calls that got no usable answer (read as unknown votes)

    def add(self, r: PairedRun, gate=claim_gate) -> None:
        self.runs += 1
        pos = r.positive
        self.aware = self.aware + Confusion.from_pairs([(pos, gate(r.claim, r.aware))])
        self.blind = self.blind + Confusion.from_pairs([(pos, gate(r.claim, r.blind))])
        if not pos:
            return
        a, b = r.aware == "not_completed", r.blind == "not_completed"
        self.pos_cells[0 if (a and b) else 1 if b else 2 if a else 3] += 1
        if b and not a:
            self.harmful_ids.append(r.run_id)
        elif a and not b:
            self.recovery_ids.append(r.run_id)


def _share(i: int, j: int) -> Callable[[Sequence[int]], float | None]:
    """The share of positives in cells i and j: (0, 2) is the aware judge's recall, (0, 1) the blind one's."""
    return lambda c: None if sum(c) == 0 else (c[i] + c[j]) / sum(c)


def _recall_shift(c) -> float | None:
    n = sum(c)
    return None if n == 0 else (c[1] - c[2]) / n


class InterventionReport(BaseModel):
    """Everything `referee eval intervention` prints (`--json`)."""

    model_config = ConfigDict(extra="forbid")

    report_version: Literal[1] = 1
    judge_model: str
    votes: int
    k: int
    runs: int
    positives: int
    trace_only_recall_aware: Metric
    trace_only_recall_blind: Metric
    recall_shift: Metric = Field(description="blind minus aware trace-only recall over positives")
    harmful_flips: int
    recovery_flips: int
    sign_test_p: float | None
    harmful_ids: list[str]
    recovery_ids: list[str]
    gated: list[Scores] = Field(description="claim-gated detection and gating views, aware and blind")
    notes: list[str] = Field(default_factory=list)
    model_calls: int = 0


def summarize(t: InterventionTally, spec: BootstrapSpec | None, *, model: str = "", votes: int = 1, k: int = 1,
              model_calls: int = 0, notes: list[str] | None = None) -> InterventionReport:
    """Recall of each condition, their shift with a bootstrap interval, flips and the sign test.

    >>> t = InterventionTally()
    >>> for i, (a, b) in enumerate([("completed", "not_completed")] * 3 + [("not_completed", "completed")]):
    ...     t.add(PairedRun(f"r{i}", "success", False, a, b))
    >>> r = summarize(t, BootstrapSpec(resamples=50))
    >>> (r.harmful_flips, r.recovery_flips, r.recall_shift.value, r.sign_test_p)
    (3, 1, 0.5, 0.625)
    """
    both, blind_only, aware_only, neither = t.pos_cells
    p = sum(t.pos_cells)
    ra = None if p == 0 else (both + aware_only) / p
    rb = None if p == 0 else (both + blind_only) / p
    def iv(stat):  # spec None (--resamples 0): point values only
        return bootstrap_stat(t.pos_cells, stat, spec) if spec is not None else Interval(None, None, 0)

    iv_a, iv_b, iv_s = iv(_share(0, 2)), iv(_share(0, 1)), iv(_recall_shift)
    shift = None if p == 0 else (blind_only - aware_only) / p
    return InterventionReport(
        judge_model=model, votes=votes, k=k, runs=t.runs, positives=p,
        trace_only_recall_aware=Metric(value=ra, lo=iv_a.lo, hi=iv_a.hi),
        trace_only_recall_blind=Metric(value=rb, lo=iv_b.lo, hi=iv_b.hi),
        recall_shift=Metric(value=shift, lo=iv_s.lo, hi=iv_s.hi),
        harmful_flips=blind_only, recovery_flips=aware_only, sign_test_p=sign_test(blind_only, aware_only),
        harmful_ids=t.harmful_ids, recovery_ids=t.recovery_ids,
        gated=[score("aware (report shown)", t.aware, spec), score("blind (report withheld)", t.blind, spec)],
        notes=notes or [], model_calls=model_calls)


def run_intervention(traces: Iterable, labels: dict, client, *, votes: int = 5, k: int = 3, cache=None,
                     gate=claim_gate) -> tuple[InterventionTally, int]:
    """Judge every trace twice (aware, blind) with the same client; `labels` maps run_id -> (claim, completed).

    Returns the tally and the number of model calls made (0 when everything came from the cache).
    """
    from referee.evaluation.judges import JudgeCache, TraceJudge

    cache = cache or JudgeCache(None)
    aware = TraceJudge(client, "claim-aware", votes=votes, k=k, cache=cache)
    blind = TraceJudge(client, "prompt-blind", votes=votes, k=k, cache=cache)
    t = InterventionTally()
    calls = 0

    def both(trace):
        return trace, aware.judge_trace(trace), blind.judge_trace(trace)

    for trace, ja, jb in client.map(both, traces):
        claim, completed = labels[trace.run_id]
        calls += ja.model_calls + jb.model_calls
        t.failed_calls += ja.failed_calls + jb.failed_calls
        t.add(PairedRun(trace.run_id, claim, completed, ja.state, jb.state), gate=gate)
    return t, calls


def intervention_lines(r: InterventionReport) -> list[str]:
    """The intervention as plain lines (the CLI prints these, or Markdown/JSON)."""
    from referee.evaluation.render import cell_ci, fmt_p

    def pp(m: Metric) -> str:
        if m.value is None:
            return "n/a"
        ci = f" [{m.lo * 100:+.1f}, {m.hi * 100:+.1f}]" if m.lo is not None and m.hi is not None else ""
        return f"{m.value * 100:+.1f} pp{ci}"

    p = fmt_p(r.sign_test_p)
    return [
        f"judge: {r.judge_model}, {r.votes} votes, {r.k}-of-{r.votes} majority; {r.runs} runs, {r.positives} positives",
        f"trace-only recall, report shown (aware):     {cell_ci(r.trace_only_recall_aware)}",
        f"trace-only recall, report withheld (blind):  {cell_ci(r.trace_only_recall_blind)}",
        f"recall shift (blind - aware):                {pp(r.recall_shift)}",
        f"harmful flips (blind right, aware wrong): {r.harmful_flips}; recovery flips: {r.recovery_flips}; "
        f"exact two-sided sign test p = {p}",
        f"model calls this run: {r.model_calls}",
    ] + [f"note: {n}" for n in r.notes]
