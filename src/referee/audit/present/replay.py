"""Replay: recompute task class, trace states and dispositions from cached evidence under another policy.

No backend is constructed here, on purpose: this module imports no extractor and no claim reader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, Mapping, Sequence, cast

from referee.audit.decide.decision import decide
from referee.audit.decide.policyfile import LoadedPolicy
from referee.audit.decide.review import cap_review
from referee.audit.decide.risk import features_of, risk_of
from referee.audit.decide.riskfile import load_risk
from referee.audit.records import AuditRecord, Finding, PolicyRef
from referee.audit.run.auditfile import iter_records


def replay_record(rec: AuditRecord, lp: LoadedPolicy) -> AuditRecord:
    """The same record judged by another policy: evidence and claim are reused as they are.

    >>> from referee.audit.decide.policyfile import load_policy
    >>> from referee.audit.records import ClaimReading, Finding, BackendRef
    >>> y = Finding(value="yes", support=[0]); n = Finding(value="no")
    >>> ev = {"action": y, "target_id": n, "transition": n, "committed": n, "final_supports_goal": y}
    >>> r = AuditRecord(run_id="r", task="Tell me a joke", task_class="other", claim=ClaimReading(label="success"),
    ...     evidence=[ev], run_states=["completed"], trace_state="completed", disposition="pass",
    ...     policy=PolicyRef(name="x", sha256="0"), backend=BackendRef(name="rules"), view_sha256="v")
    >>> replay_record(r, load_policy("final-state")).disposition
    'pass'
    """
    # a record's evidence is keyed by FindingField, which is str; only Mapping's invariant key type says otherwise
    evidence = cast(Sequence[Mapping[str, Finding]], rec.evidence)
    d = decide(rec.task, rec.claim.label, evidence, rec.grounding, lp.policy)
    hedges = rec.risk.hedges if rec.risk else []
    # risk again from the cached evidence and the record's signals and hedges (records older than 6: no signals)
    risk = risk_of(features_of(rec.claim, evidence, d.trace_state, rec.grounding, rec.signals, hedges), load_risk(),
                   hedges)
    return rec.model_copy(update={
        "task_class": d.task_class, "run_states": list(d.run_states), "trace_state": d.trace_state,
        "disposition": d.disposition, "policy": PolicyRef(name=lp.policy.name, sha256=lp.sha256), "risk": risk})


def replay_file(path: Path, lp: LoadedPolicy) -> Iterator[AuditRecord]:
    """The replayed records of an audit.jsonl; with a `review` cap in the policy, the whole file is read first and
    the cap applied over it (decide/review.py), the riskiest undecided runs reviewed first."""
    if lp.policy.review is None:
        for _, rec in iter_records(path):
            yield replay_record(rec, lp)
        return
    recs = [replay_record(rec, lp) for _, rec in iter_records(path)]
    capped = cap_review([(r.run_id, r.risk.value if r.risk else None, r.disposition) for r in recs],
                        lp.policy.review)
    for r in recs:
        yield r if capped[r.run_id] == r.disposition else r.model_copy(update={"disposition": capped[r.run_id]})
