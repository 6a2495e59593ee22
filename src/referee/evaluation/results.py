"""The evaluation report: metrics with bootstrap intervals per method, breakdowns, leave-one-group-out, paired tests."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from referee.evaluation.bootstrap import BootstrapSpec, bootstrap_rates
from referee.evaluation.dataset import Coverage, Tally
from referee.evaluation.equal_load import GATE, at_equal_load, difference_interval, marginals
from referee.evaluation.metrics import RATE_METRICS, Confusion, counts, rates
from referee.evaluation.signtest import sign_test

SliceAxis = Literal["all", "task_class", "group", "split", "leave_out_group"]
BreakdownAxis = Literal["task_class", "group", "split"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Metric(_Model):
    """A point estimate and its percentile bootstrap interval; all None when undefined (n/a)."""

    value: float | None
    lo: float | None = None
    hi: float | None = None
    undefined_resamples: int | None = Field(
        default=None, description="bootstrap resamples where the metric was 0/0: left out of its percentiles, "
                                  "counted here (None: no bootstrap)")


class Scores(_Model):
    """One method on one slice of records."""

    method: str
    axis: SliceAxis = "all"
    slice: str = "all"
    counts: dict[str, int]
    metrics: dict[str, Metric]


class MethodInfo(_Model):
    name: str
    kind: str
    description: str = ""


class Paired(_Model):
    """Discordant flags between the primary method and another on the same records, with exact sign tests."""

    primary: str
    other: str
    positives_primary_only: int
    positives_other_only: int
    negatives_primary_only: int
    negatives_other_only: int
    p_positives: float | None = Field(description="two-sided sign test over discordant positives")


class EqualLoad(_Model):
    """One method against claim-gate-only run at the method's own inspection load (equal_load.py); None = n/a."""

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True,
                              serialize_by_alias=True)

    method: str
    load: float | None
    blocked_recall: float | None
    gate_blocked_recall_at_load: float | None = Field(
        description="claim-gate-only inspecting a random share of its success claims at this load: "
                    "min(1, load * N / S) * its blocked recall")
    difference: float | None = Field(description="blocked_recall - gate_blocked_recall_at_load; > 0: the method "
                                                  "blocks more dangerous misreports than the gate at equal load")
    difference_lo: float | None = Field(default=None, description="percentile bootstrap, method and gate "
                                                                  "resampled jointly over the same runs")
    difference_hi: float | None = None
    yield_: float | None = Field(alias="yield", description="the method's inspection yield")
    gate_yield: float | None = Field(description="claim-gate-only's expected inspection yield at this load")
    silent_pass_rate: float | None
    gate_silent_pass_rate_at_load: float | None


class RiskCurve(_Model):
    """Blocked recall against load for the risk ordering (flags, then the riskiest first) and for claim-gate-only
    (riskcurve.py); the area between them and the difference at the auditor's load, with intervals."""

    loads: list[float]
    risk_blocked_recall: list[float]
    gate_blocked_recall: list[float]
    area: float | None = Field(description="mean over loads k/N of risk minus gate blocked recall; > 0: the "
                                           "ordering beats the gate over the loads a user may choose")
    area_lo: float | None = None
    area_hi: float | None = None
    load: float = Field(description="the auditor's load (flags + reviews) / N, where the difference is taken")
    difference: float | None = Field(description="risk-ordered minus gate blocked recall at `load`")
    difference_lo: float | None = None
    difference_hi: float | None = None
    records_without_risk: int = 0


class BootstrapInfo(_Model):
    resamples: int
    seed: int
    level: float
    engine: str
    method: str = "percentile; cell counts resampled as multinomial(N, observed frequencies)"


class CoverageInfo(_Model):
    audit_records: int
    gold_labels: int
    evaluated: int
    unlabelled: list[str]
    missing: list[str]
    duplicates: list[str]
    claim_from_gold: int
    claim_from_reader: int


class EvalReport(_Model):
    """Everything `referee eval` prints, as one JSON document (`--json`)."""

    report_version: Literal[1] = 1
    audit: str
    gold: str
    primary: str
    bootstrap: BootstrapInfo
    coverage: CoverageInfo
    notes: list[str] = Field(default_factory=list)
    methods: list[MethodInfo]
    overall: list[Scores]
    breakdowns: list[Scores] = Field(default_factory=list)
    paired: list[Paired] = Field(default_factory=list)
    equal_load: list[EqualLoad] = Field(default_factory=list,
                                        description="every method against claim-gate-only at the method's load")
    risk_curve: RiskCurve | None = Field(default=None, description="absent when no record carries a risk")
    misses: dict[str, int] = Field(default_factory=dict,
                                   description="positives the primary did not flag, by side: claim-side, "
                                               "trace-side (state completed), uncertain (state unknown), "
                                               "other (state not_completed, not flagged: a custom policy)")

    def overall_of(self, method: str) -> Scores:
        for s in self.overall:
            if s.method == method:
                return s
        raise KeyError(method)


def score(method: str, c: Confusion, spec: BootstrapSpec | None, axis: SliceAxis = "all",
          slice_: str = "all") -> Scores:
    """Point metrics and (when `spec` is given) bootstrap intervals for one confusion.

    >>> s = score("m", Confusion(neg_pass=2, pos_flag=2), None)
    >>> s.metrics["precision"].value, s.metrics["f1"].value, s.counts["tp"]
    (1.0, 1.0, 2)
    """
    point = rates(c)
    ivs = bootstrap_rates(c, spec) if spec is not None else {}
    metrics = {}
    for name in RATE_METRICS:
        iv = ivs.get(name)
        metrics[name] = Metric(value=point[name], lo=iv.lo if iv else None, hi=iv.hi if iv else None,
                               undefined_resamples=iv.undefined if iv else None)
    return Scores(method=method, axis=axis, slice=slice_, counts=counts(c), metrics=metrics)


def equal_load_row(method: str, joint: list[int], spec: BootstrapSpec | None) -> EqualLoad:
    """One method against claim-gate-only from their 12 joint cells, with an interval when `spec` is given.

    >>> r = equal_load_row("m", [3, 0, 0, 0, 0, 0, 1, 2, 0, 1, 3, 0], None)
    >>> r.load, r.blocked_recall, round(r.gate_blocked_recall_at_load, 3), r.model_dump()["yield"]
    (0.5, 0.75, 0.714, 0.6)
    """
    e = at_equal_load(*marginals(joint))
    iv = difference_interval(joint, spec) if spec is not None and e.difference is not None else None
    # validate_by_name: without the pydantic plugin mypy knows `yield_` only by its alias, "yield"
    return EqualLoad(method=method, load=e.load, blocked_recall=e.blocked_recall,  # type: ignore[call-arg]
                     gate_blocked_recall_at_load=e.gate.blocked_recall, difference=e.difference,
                     difference_lo=iv.lo if iv else None, difference_hi=iv.hi if iv else None,
                     yield_=e.inspection_yield, gate_yield=e.gate.inspection_yield,
                     silent_pass_rate=e.silent_pass_rate, gate_silent_pass_rate_at_load=e.gate.silent_pass_rate)


def evaluate(t: Tally, spec: BootstrapSpec | None, *, audit: str = "", gold: str = "", primary: str | None = None,
             breakdown_methods: list[str] | None = None,
             axes: tuple[BreakdownAxis, ...] = ("task_class", "group", "split"),
             leave_one_group_out: bool = True) -> EvalReport:
    """Turn a tally into the full report: every method overall, breakdowns and LOGO for `breakdown_methods`.

    Breakdown intervals bootstrap each slice on its own records (a stratified resample per slice).
    """
    names = [m.name for m in t.methods]
    primary = primary or (names[0] if names else "")
    breakdown_methods = names if breakdown_methods is None else breakdown_methods
    overall = [score(n, t.confusion(n), spec) for n in names]
    breakdowns: list[Scores] = []
    for n in breakdown_methods:
        for axis in axes:
            values = t.values(axis)
            if len(values) < 2 and axis != "task_class":
                continue  # one group or one split: the slice is the whole set
            for v in values:
                breakdowns.append(score(n, t.confusion(n, **{axis: v}), spec, axis, v))
        groups = t.values("group")
        if leave_one_group_out and len(groups) >= 2:
            for g in groups:
                breakdowns.append(score(n, t.confusion(n, exclude_group=g), spec, "leave_out_group", g))
    paired = []
    for (a, b), (pa, pb, na, nb) in t.paired.items():
        paired.append(Paired(primary=a, other=b, positives_primary_only=pa, positives_other_only=pb,
                             negatives_primary_only=na, negatives_other_only=nb, p_positives=sign_test(pa, pb)))
    cov: Coverage = t.coverage
    notes = cov.notes()
    equal_load = [equal_load_row(n, t.joint[n], spec) for n in names if n in t.joint]
    if names and GATE not in names:
        notes.append(f"no equal-load comparison: {GATE} is not among the methods (add --baseline {GATE})")
    return EvalReport(
        audit=audit, gold=gold, primary=primary,
        bootstrap=(BootstrapInfo(resamples=spec.resamples, seed=spec.seed, level=spec.level,
                                 engine=spec.resolved_engine()) if spec is not None
                   else BootstrapInfo(resamples=0, seed=0, level=0.0, engine="none", method="no intervals")),
        coverage=CoverageInfo(audit_records=cov.audit_records, gold_labels=cov.gold_labels, evaluated=cov.evaluated,
                              unlabelled=cov.unlabelled, missing=cov.missing, duplicates=cov.duplicates,
                              claim_from_gold=cov.claim_from_gold, claim_from_reader=cov.claim_from_reader),
        notes=notes,
        methods=[MethodInfo(name=m.name, kind=m.kind, description=m.description) for m in t.methods],
        overall=overall, breakdowns=breakdowns, paired=paired, equal_load=equal_load,
        misses=dict(sorted(t.misses.items())))
