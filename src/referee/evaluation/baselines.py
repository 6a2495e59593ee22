"""Methods evaluation compares on the same records: the auditor as recorded, simple baselines, and the claim gate.

A method maps one audit record to a disposition (`pass` | `flag` | `review`). Every method reads
the same shared claim reading (the record's `claim.label`), so paired comparisons isolate how the
trace side is judged. Baselines register by name in `baselines`; third parties may add more.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Literal, Mapping

from referee.core.registry import Registry

if TYPE_CHECKING:
    from referee.audit.records import AuditRecord

MethodKind = Literal["auditor", "baseline", "policy", "judge", "predictions"]
Decide = Callable[["AuditRecord"], str]  # AuditRecord -> disposition


@dataclass(frozen=True)
class Method:
    """One thing to evaluate: a name, what kind it is, and how it decides a record.

    >>> m = Method("flag-all", "baseline", lambda rec: "flag", "flag every run")
    >>> m.decide(None)
    'flag'
    """

    name: str
    kind: MethodKind
    decide: Decide = field(compare=False)
    description: str = ""
    table: Mapping[str, str] | None = field(default=None, compare=False, repr=False)  # a table method's run_ids


baselines: Registry[Callable[[], Method]] = Registry("baseline")


def claim_gate(claim: str | None, trace_state: str) -> str:
    """DESIGN.md's default disposition: success + not_completed -> flag, success + completed -> pass,
    failure_or_incomplete -> pass, an unclear claim or an unknown trace state -> review.

    Used for judges when no policy module is present; with one, the policy's own table is used.

    >>> claim_gate("success", "not_completed"), claim_gate("failure_or_incomplete", "unknown")
    ('flag', 'pass')
    >>> claim_gate("unclear", "completed")
    'review'
    """
    if claim == "success":
        return {"not_completed": "flag", "completed": "pass"}.get(trace_state, "review")
    if claim == "failure_or_incomplete":
        return "pass"
    return "review"


def claim_label(rec) -> str | None:
    """The shared claim reading of a record (what every method sees)."""
    return rec.claim.label


@baselines.register("trust-claim")
def trust_claim() -> Method:
    """Never flag: every run passes on the agent's word."""
    return Method("trust-claim", "baseline", lambda rec: "pass", "never flag: take the agent's word")


@baselines.register("flag-all")
def flag_all() -> Method:
    """Flag every run."""
    return Method("flag-all", "baseline", lambda rec: "flag", "flag every run")


@baselines.register("claim-gate-only")
def claim_gate_only() -> Method:
    """Flag every success claim, whatever the trace shows."""
    return Method("claim-gate-only", "baseline",
                  lambda rec: "flag" if claim_label(rec) == "success" else "pass",
                  "flag every success claim")


RECORD_BASELINES: tuple[str, ...] = ("trust-claim", "flag-all", "claim-gate-only")


def auditor_method(name: str = "auditor", regate: Callable[[str | None, str], str] | None = None) -> Method:
    """The disposition written in the audit record, under the policy it was made with.

    With `regate` (the records' own claim x state table), the recorded trace state is re-disposed
    with whatever claim the record now carries: used when the claim channel is swapped for gold.
    """
    if regate is not None:
        return Method(name, "auditor", lambda rec: regate(rec.claim.label, rec.trace_state),
                      "the audit record's trace state, disposed with the gold claim")
    return Method(name, "auditor", lambda rec: rec.disposition, "the audit record's own disposition")


def predictions_method(name: str, table: Mapping[str, str], kind: MethodKind = "predictions",
                       description: str = "") -> Method:
    """A method whose dispositions come from a run_id -> disposition table (judges, external files).

    A run with no entry is `review`: a method that could not look never passes a run.

    >>> m = predictions_method("x", {"r1": "flag"})
    >>> class R: run_id = "r2"
    >>> m.decide(R())
    'review'
    """
    return Method(name, kind, lambda rec: table.get(rec.run_id, "review"), description, table=table)


def load_predictions(path) -> dict[str, str]:
    """Read a JSONL or CSV of {run_id, disposition} (another tool's verdicts) into a table."""
    from pathlib import Path

    from referee.core.csvrows import dict_rows
    from referee.core.jsonio.depth import json_lines
    from referee.errors import UsageError

    path = Path(path)
    out: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            if path.suffix.lower() == ".csv":
                rows = dict_rows(fh, path, UsageError,
                                 header_fix="a predictions CSV has the columns run_id, disposition")
            else:
                # depth- and size-capped: a bad line is one error naming it
                rows = json_lines(fh, lambda why, n: UsageError(f"not a JSON line ({why})", file=str(path),
                                                                 place=f"line {n}",
                                                                 fix="write one JSON object per line"))
            for lineno, row in rows:
                disp = row.get("disposition") if isinstance(row, dict) else None
                if disp not in ("pass", "flag", "review") or not row.get("run_id"):
                    raise UsageError(f"a prediction needs run_id and disposition pass|flag|review, got {disp!r}",
                                     file=str(path), place=f"line {lineno}", fix="fix or drop that line")
                rid = str(row["run_id"])
                if rid in out:  # which of two verdicts is the tool's? Not ours to guess (gold files refuse it too)
                    raise UsageError(f"run_id {rid!r} has a second prediction", file=str(path),
                                     place=f"line {lineno}", fix="keep one line per run_id")
                out[rid] = disp
    except OSError as exc:
        raise UsageError(f"cannot read predictions: {exc.strerror}", file=str(path)) from None
    except ValueError as exc:
        raise UsageError(f"not JSON lines: {exc}", file=str(path), fix="write one JSON object per line") from None
    if not out:
        raise UsageError("no prediction in the file", file=str(path),
                         fix="write one {run_id, disposition} per line (JSONL) or row (CSV)")
    return out
