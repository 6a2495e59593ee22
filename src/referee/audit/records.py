"""On-disk records of the auditor: the audit record (one JSONL line per run) and its parts.

Words: a *finding* is one typed yes/no/unknown field the extractor states about a trace, with the
steps that show it; a *sample* is one extraction run over the same view (n samples are voted on).
On disk the record keeps its version-1 field names (`evidence`: the findings of each sample,
`run_states`, `backend.runs`), so files written before stay readable.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ClaimLabel = Literal["success", "failure_or_incomplete", "unclear"]
ClaimFamily = Literal["delivered_result", "completion", "obstacle", "future_work", "question_back", "hedged",
                      "courtesy_only", "empty", "no_status"]
TaskClass = Literal["create_edit", "delete", "configure", "send", "query", "other"]
FindingField = Literal["action", "target_id", "transition", "committed", "final_supports_goal", "details"]
Tri = Literal["yes", "no", "unknown"]
TraceState = Literal["completed", "not_completed", "unknown"]
Disposition = Literal["pass", "flag", "review"]

FINDING_FIELDS: tuple[str, ...] = ("action", "target_id", "transition", "committed", "final_supports_goal")
# `details`: were the task's stated details verified in the write (yes), contradicted (no), or not checkable
ALL_FIELDS: tuple[str, ...] = FINDING_FIELDS + ("details",)
TASK_CLASSES: tuple[str, ...] = ("create_edit", "delete", "configure", "send", "query", "other")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Finding(_Model):
    """One finding of one sample: a yes/no/unknown value and the step indices that show it."""

    value: Tri = "unknown"
    support: list[int] = Field(default_factory=list)
    note: str | None = None


def findings_json(fields: dict[str, Finding]) -> str:
    """Findings as the evidence cache stores them: `json.dumps` of their `model_dump()`s with sorted keys, written
    from the fields themselves (the dumps cost more than the rest of a cache write).

    >>> findings_json({"b": Finding(value="yes", support=[1]), "a": Finding()})
    '{"a": {"note": null, "support": [], "value": "unknown"}, "b": {"note": null, "support": [1], "value": "yes"}}'
    """
    return json.dumps({k: {"note": f.note, "support": f.support, "value": f.value} for k, f in sorted(fields.items())})


class ClaimReading(_Model):
    """What the claim reader made of the report (and of nothing else)."""

    label: ClaimLabel
    votes: list[ClaimLabel] = Field(default_factory=list)
    backend: str = "rules"
    cue: str | None = None  # the phrase that decided a rules reading, for humans
    family: ClaimFamily | None = None  # which cue family decided (claim/cues.FAMILY_LABEL)
    atoms: list[str] = Field(default_factory=list)  # the report's concrete atoms, for grounding


class Grounding(_Model):
    """Report grounding: the report's atoms and those found neither in the task nor in any observation."""

    value: Tri = "unknown"       # yes: all found; no: some not; unknown: no observations or no atoms
    atoms: list[str] = Field(default_factory=list)
    ungrounded: list[str] = Field(default_factory=list)
    observed: bool = False       # the trace has observations
    note: str | None = None
    # version 6: atom -> how it follows from found values ("41 years: years from 1983-05-02 to 2024-06-10"); such
    # an atom is grounded, and not in `ungrounded`
    derived: dict[str, str] = Field(default_factory=dict)


class PolicyRef(_Model):
    name: str
    sha256: str


class BackendRef(_Model):
    name: str
    model: str | None = None
    prompt_version: str = "1"
    runs: int = 1


class TokenUsage(_Model):
    """The model calls one record made (cache hits make none) and the tokens the server said they used."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class OverBudgetNote(_Model):
    """The record budget a run's audit went over (`limit`), and that budget: its record is `review`, and a resume
    leaves it unless the budget of that limit is raised (referee.audit.run.budget)."""

    limit: Literal["cpu", "wall", "memory"]
    cpu_s: float
    wall_s: float
    memory_mib: int


class TraceSignals(_Model):
    """General signals of a trace that no finding settles, read from the claim-blind view (audit/view/facts.py).

    Only facts about actions and observations: the extractor wall holds, and replay recomputes risk from them.
    """

    actions: int = 0                   # steps with an action
    writes: int = 0                    # actions with arguments whose name is a write verb of the vocabulary, and
                                       # shell commands that change a file
    max_repeat: int = 0                # the most times one identical action (name and arguments, some) was taken
    max_streak: int = 0                # the most times one identical action was taken back to back (a loop)
    error_last: bool = False           # the last observation is an error (flagged, or reads as one)
    error_after_write: bool = False    # an observation after the last write is an error
    unchecked_change: bool = False     # a write with no later check (an action that is not a write; of shell
                                       # commands, one that runs tests, a script, a linter or a build)
    cut_off: bool = False              # the last observation says a step, time, turn or budget limit was hit


class RiskNote(_Model):
    """A record's risk: a number in [0, 1], the risk file it came from, and the hedges the report showed."""

    value: float = Field(ge=0.0, le=1.0)
    sha256: str                        # SHA-256 of the risk file (like the policy's)
    version: int = 1                   # the risk file's version
    hedges: list[str] = Field(default_factory=list)  # hedging phrases of the report (claim side, deciding stage)
    top: list[str] = Field(default_factory=list)     # the features that raised it most, for humans


class AuditRecord(_Model):
    """One audited run. Everything `referee replay` needs to recompute without a backend.

    `evidence` holds one mapping per extraction run (field -> Finding); `run_states` the
    checker's state of each run; `trace_state` the k-of-n vote over them. An audit file may hold
    several records of one run_id (a resume re-audited it): the last one stands (`auditfile.iter_records`).
    """

    # 2: claim family and atoms, grounding, the `details` field; 3: claim_reader, view_version, claim_sha256;
    # 4: usage (a model backend's calls and tokens); 5: over_budget (written only on such records);
    # 6: signals (claim-blind trace signals), risk (audit/decide/risk.py) and grounding.derived
    record_version: Literal[1, 2, 3, 4, 5, 6] = 6
    run_id: str
    task: str
    task_class: TaskClass
    claim: ClaimReading
    evidence: list[dict[FindingField, Finding]]
    run_states: list[TraceState]
    trace_state: TraceState
    disposition: Disposition
    policy: PolicyRef
    backend: BackendRef
    view_sha256: str
    group: str | None = None
    split: str | None = None
    source: str | None = None
    advisory: bool = False  # true for records made from SKIPPED runner steps: never a PASS
    grounding: Grounding | None = None
    # backend calls that got no answer (transport failure, timeout, malformed response): read as unknown,
    # never cached; a resume audits the run again
    errors: list[str] = Field(default_factory=list)
    # version 3: what a resume compares (audit/resume.py): the claim reader, the view version, the claim text
    claim_reader: BackendRef | None = None
    view_version: int | None = None
    claim_sha256: str | None = None  # SHA-256 of the text the claim reader read (the report, or the answer call)
    usage: TokenUsage | None = None  # a model backend's calls for this record and their tokens
    over_budget: OverBudgetNote | None = None  # version 5: its audit went over the record budget and was ended
    signals: TraceSignals | None = None  # version 6: what risk reads of the trace (claim-blind, from the view)
    risk: RiskNote | None = None  # version 6: how likely a human finds this run wrong (audit/decide/risk.py)


# version-1 names, kept so code and plugins written against them go on working
FieldEvidence = Finding
EVIDENCE_FIELDS = FINDING_FIELDS
EvidenceField = FindingField
