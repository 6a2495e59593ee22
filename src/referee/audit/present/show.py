"""Audit records for people: one line per run to look at, and one record in full with the steps it cites."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator

from referee.audit.records import ALL_FIELDS, AuditRecord
from referee.audit.view.blind import ClaimBlindView
from referee.core.safetext import visible

STEP_TEXT = 240  # characters of a cited step shown; the trace has the rest


def no_fields(rec: AuditRecord) -> list[tuple[str, list[int], int]]:
    """The fields some sample found `no`: (field, the steps those samples cite, how many samples said no).

    >>> from referee.audit.records import Finding
    >>> r = _example(evidence=[{"committed": Finding(value="no", support=[3])}])
    >>> no_fields(r)
    [('committed', [3], 1)]
    """
    out = []
    for f in ALL_FIELDS:
        found = [s[f] for s in rec.evidence if f in s and s[f].value == "no"]
        if found:
            out.append((f, sorted({i for x in found for i in x.support}), len(found)))
    return out


def why(rec: AuditRecord) -> str:
    """The reason for a record's disposition in one sentence, from its claim, trace state and grounding.

    >>> _example(disposition="flag", trace_state="not_completed").__class__.__name__
    'AuditRecord'
    >>> why(_example(disposition="flag", trace_state="not_completed"))
    'the report claims success; the trace shows the task not completed'
    """
    claim, state = rec.claim.label, rec.trace_state
    parts = []
    if rec.disposition == "pass":
        if claim != "success":
            parts.append(f"the report does not claim success ({claim.replace('_', ' ')}): nothing to contradict; "
                         "pass is not 'the task was done'")
        else:
            parts.append("the report claims success and the trace shows the task completed")
    elif claim == "success" and state == "not_completed":
        parts.append("the report claims success; the trace shows the task not completed")
    elif claim == "success" and state == "unknown":
        parts.append("the report claims success; the trace cannot show whether the task was completed")
    elif claim == "unclear":
        parts.append("the report does not say clearly whether the task succeeded")
    else:
        parts.append(f"claim {claim}, trace state {state}")
    g = rec.grounding
    if rec.disposition != "pass" and claim == "success" and g is not None and g.value == "no":
        parts.append("the report's " + ", ".join(g.ungrounded[:5]) + " appear nowhere in the task or observations")
    if rec.errors:
        parts.append("extraction errors: " + "; ".join(rec.errors[:2]))
    if rec.advisory:
        parts.append("advisory: a SKIPPED runner step, whose verdict stays SKIPPED")
    return "; ".join(parts)


def flag_line(rec: AuditRecord) -> str:
    """One line per run to look at: run_id, task class, the claim's cue, the `no` fields with their steps.

    >>> from referee.audit.records import Finding
    >>> r = _example(disposition="flag", evidence=[{"committed": Finding(value="no", support=[3, 4])}])
    >>> flag_line(r)
    'r1  [flag] send  claim: success ("sent it")  no: committed @ steps 3,4'
    """
    cue = f' ("{rec.claim.cue}")' if rec.claim.cue else ""
    nos = no_fields(rec)
    n = len(rec.evidence)
    said = ", ".join(f + (f" @ steps {','.join(map(str, steps))}" if steps else "")
                     + (f" ({k} of {n})" if n > 1 else "") for f, steps, k in nos)
    tail = f"  no: {said}" if said else f"  {why(rec)}"
    risk = f" risk {rec.risk.value:.2f}" if rec.risk else ""
    return f"{rec.run_id}  [{rec.disposition}]{risk} {rec.task_class}  claim: {rec.claim.label}{cue}{tail}"


def flag_lines(records: Iterable[AuditRecord], show: set[str], limit: int | None = None) -> Iterator[str]:
    """The lines of the runs whose disposition is in `show`: flags first, then the riskiest first (records without a
    risk last, by run_id); then how many more there are.

    >>> from referee.audit.records import RiskNote
    >>> rs = [_example(run_id=i, disposition="review", risk=RiskNote(value=v, sha256="0")) for i, v in
    ...       (("low", 0.2), ("high", 0.9))]
    >>> [line.split()[0] for line in flag_lines(rs, {"review"})]
    ['high', 'low']
    """
    picked = [r for r in records if r.disposition in show]
    picked.sort(key=lambda r: (r.disposition != "flag", r.risk is None, -(r.risk.value if r.risk else 0.0), r.run_id))
    for r in picked[:limit]:
        yield visible(flag_line(r), keep_newlines=False)  # a run_id or cue from a trace never makes a line
    if limit is not None and len(picked) > limit:
        yield f"... and {len(picked) - limit} more (--show {','.join(sorted(show))} lists them all)"


def _json(value: Any) -> str:
    """One argument value as the trace's JSON writes it.

    >>> _json({"flight_number": "HAT028"}), _json("JG7FMM"), _json(["é", 1.5])
    ('{"flight_number": "HAT028"}', '"JG7FMM"', '["é", 1.5]')
    """
    import json

    return json.dumps(value, ensure_ascii=False, default=str)


def _step_text(view: ClaimBlindView, index: int) -> str:
    for s in view.steps:
        if s.index == index:
            # the args are frozen (mappingproxy, tuples): their repr is Python's, so print the thawed JSON
            args = list(s.plain_args().items())[:4]
            act = f"{s.action}({', '.join(f'{k}={_json(v)}' for k, v in args)})" if s.action else "-"
            obs = s.observation.as_text() if s.observation is not None else ""
            mark = " [error]" if s.observation is not None and s.observation.error else ""
            text = f"{act}{mark} -> {obs}".replace("\n", " ")
            return text if len(text) <= STEP_TEXT else text[:STEP_TEXT - 3] + "..."
    return "(no such step in the trace)"


def render_record(rec: AuditRecord, view: ClaimBlindView | None = None) -> str:
    """One record in full: task, claim, each field's finding with the cited steps (their text when the
    trace's view is given), grounding, disposition and why."""
    lines = [f"run {rec.run_id}" + (f"  (group {rec.group})" if rec.group else ""),
             f"task ({rec.task_class}): {rec.task}",
             f"claim: {rec.claim.label}" + (f", {rec.claim.family}" if rec.claim.family else "")
             + (f', cue "{rec.claim.cue}"' if rec.claim.cue else "") + f"  [{rec.claim.backend}]"]
    if view is not None and view.sha256 != rec.view_sha256:
        lines.append("note: the trace changed since this record was written (view hash differs)")
    for i, sample in enumerate(rec.evidence):
        head = f"evidence (sample {i + 1} of {len(rec.evidence)}, state {rec.run_states[i]}):" \
            if len(rec.evidence) > 1 else f"evidence (state {rec.run_states[0] if rec.run_states else '?'}):"
        lines.append(head)
        for f in ALL_FIELDS:
            fd = sample.get(f)  # type: ignore[call-overload]
            if fd is None:
                continue
            steps = ",".join(map(str, fd.support))
            lines.append(f"  {f:<20} {fd.value:<8}" + (f"steps {steps}" if steps else "")
                         + (f"  ({fd.note})" if fd.note else ""))
            if view is not None:
                for idx in fd.support[:3]:
                    lines.append(f"      step {idx}: {_step_text(view, idx)}")
    g = rec.grounding
    if g is not None and g.atoms:
        lines.append(f"grounding: {g.value}; atoms {', '.join(g.atoms[:8])}"
                     + (f"; not found: {', '.join(g.ungrounded[:8])}" if g.ungrounded else ""))
    lines.append(f"trace state: {rec.trace_state}   disposition: {rec.disposition.upper()}   "
                 f"policy {rec.policy.name}")
    lines.append(f"why: {why(rec)}")
    if rec.risk is not None:
        lines.append(f"risk: {rec.risk.value:.2f}" + (f" (raised most by {', '.join(rec.risk.top)})" if rec.risk.top
                                                      else "") + (f"; hedges: {', '.join(rec.risk.hedges[:4])}"
                                                                  if rec.risk.hedges else ""))
    # what a trace holds (a task over several lines, escapes) stays inside its own line: continuations indented
    return "\n".join(visible(line).replace("\n", "\n    ") for line in lines)


def find_record(audit: Path, run_id: str) -> AuditRecord | None:
    """The last record of `run_id` in an audit file (a re-audit appends a newer one)."""
    from referee.audit.run.auditfile import iter_records

    found = None
    for _, rec in iter_records(audit):
        if rec.run_id == run_id:
            found = rec
    return found


def find_view(traces: Path, run_id: str, fmt: str | None = None) -> ClaimBlindView | None:
    """The claim-blind view of `run_id` in a trace file (streamed; bad records are passed over)."""
    from referee.audit.ingest.readers import read_traces
    from referee.audit.view.blind import build_view

    for item in read_traces(traces, fmt):
        if item.trace is not None and item.run_id == run_id:
            return build_view(item.trace)
    return None


def _example(**kw) -> AuditRecord:
    """A small record for the doctests."""
    from referee.audit.records import BackendRef, ClaimReading, PolicyRef

    base: dict[str, Any] = dict(run_id="r1", task="Send the report", task_class="send",
                claim=ClaimReading(label="success", cue="sent it"), evidence=[{}], run_states=["completed"],
                trace_state="completed", disposition="pass", policy=PolicyRef(name="causal", sha256="0"),
                backend=BackendRef(name="rules"), view_sha256="0")
    base.update(kw)
    return AuditRecord(**base)
