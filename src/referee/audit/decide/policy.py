"""Audit policy: the on-disk model (required fields per class, votes, disposition table) and the checker. Pure."""

from __future__ import annotations

from typing import Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, field_validator

from referee.audit.decide.taskclass import ClassPattern, TaskClassRule
from referee.audit.records import (
    ALL_FIELDS,
    TASK_CLASSES,
    ClaimLabel,
    Disposition,
    Finding,
    FindingField,
    TaskClass,
    TraceState,
)

# the vocabulary is defined once, in records.py; these names say what the policy file uses them for
ClaimKey = ClaimLabel
StateKey = TraceState
DispositionValue = Disposition


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CheckerSpec(_Model):
    unknown_as: Literal["unknown", "yes"] = "unknown"  # low-load: only an explicit `no` blocks


class VoteSpec(_Model):
    threshold: Literal["majority", "all"] | int = "majority"

    @field_validator("threshold")
    @classmethod
    def _positive(cls, v: str | int) -> str | int:
        if isinstance(v, int) and v < 1:
            raise ValueError("an integer threshold must be at least 1")
        return v


class PatternSpec(_Model):
    class_: str = Field(alias="class")
    pattern: str

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class TaskClassSpec(_Model):
    mode: Literal["earliest", "first"] = "earliest"
    patterns: list[PatternSpec]

    def rule(self) -> TaskClassRule:
        return TaskClassRule(tuple(ClassPattern(p.class_, p.pattern) for p in self.patterns), self.mode)


class GroundingSpec(_Model):
    """What an ungrounded success claim gets (never milder than the table's disposition, never `flag`: a value
    found nowhere may have been computed in a way grounding does not try, so it is not shown wrong)."""

    enabled: bool = True
    ungrounded: DispositionValue = "review"      # some atom of the report is found nowhere
    all_ungrounded: DispositionValue = "review"  # every atom is found nowhere, and the trace has observations

    @field_validator("ungrounded", "all_ungrounded")
    @classmethod
    def _never_flag(cls, v: str) -> str:
        if v == "flag":
            raise ValueError("ungrounded atoms alone never flag (they lead to review at most): use `review`")
        return v


class ReviewSpec(_Model):
    """A cap on review, the user's choice of load: at most `max_load` of all runs inspected (flags count), and/or
    only runs whose risk is at least `min_risk`; the riskiest undecided runs are reviewed first (decide/review.py)."""

    max_load: float | None = Field(default=None, gt=0.0, le=1.0)
    min_risk: float | None = Field(default=None, ge=0.0, le=1.0)


class Policy(_Model):
    """A policy file (YAML): which evidence fields each task class needs, how votes count, and the disposition table."""

    policy_version: Literal[1] = 1
    name: str
    description: str = ""
    required: dict[TaskClass, list[FindingField]]
    checker: CheckerSpec = Field(default_factory=CheckerSpec)
    votes: VoteSpec = Field(default_factory=VoteSpec)
    disposition: dict[ClaimKey, dict[StateKey, DispositionValue]]
    task_classes: TaskClassSpec
    grounding: GroundingSpec = Field(default_factory=GroundingSpec)
    review: ReviewSpec | None = None  # absent: every run keeps the table's disposition

    @field_validator("required")
    @classmethod
    def _all_classes(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        missing = [c for c in TASK_CLASSES if c not in v]
        if missing:
            raise ValueError(f"no required fields for class(es) {', '.join(missing)}")
        return v

    @field_validator("disposition")
    @classmethod
    def _full_table(cls, v: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        for claim in ("success", "failure_or_incomplete", "unclear"):
            row = v.get(claim)
            if row is None:
                raise ValueError(f"disposition table has no row for claim {claim!r}")
            for state in ("completed", "not_completed", "unknown"):
                if state not in row:
                    raise ValueError(f"disposition[{claim}] has no entry for state {state!r}")
        return v


def check_run(evidence: Mapping[str, Finding], task_class: str, policy: Policy) -> str:
    """The checker: all required `yes` -> completed; any `no` -> not_completed; else unknown.

    A `yes` without a citation counts as `unknown` (the paper's "cited trace support").

    >>> from referee.audit.decide.policyfile import load_policy_model
    >>> p = load_policy_model("causal")
    >>> yes = Finding(value="yes", support=[0])
    >>> check_run({"action": yes, "final_supports_goal": yes}, "other", p)
    'completed'
    >>> check_run({"action": Finding(value="yes"), "final_supports_goal": yes}, "other", p)
    'unknown'
    """
    required = policy.required.get(task_class, policy.required["other"])  # type: ignore[call-overload]
    values = []
    for f in required:
        fe = evidence.get(f)
        v = fe.value if fe is not None else "unknown"
        if v == "yes" and not (fe and fe.support):
            v = "unknown"
        if v == "unknown" and policy.checker.unknown_as == "yes":
            v = "yes"
        values.append(v)
    if any(v == "no" for v in values):
        return "not_completed"
    if all(v == "yes" for v in values):
        return "completed"
    return "unknown"


def required_fields(task_class: str, policy: Policy) -> tuple[str, ...]:
    """The evidence fields a class must show, in the canonical order.

    >>> from referee.audit.decide.policyfile import load_policy_model
    >>> required_fields("query", load_policy_model("causal"))
    ('action', 'target_id', 'final_supports_goal')
    """
    req = set(policy.required.get(task_class, policy.required["other"]))  # type: ignore[call-overload]
    return tuple(f for f in ALL_FIELDS if f in req)
