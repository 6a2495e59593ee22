"""Reader for referee's own trace v1 files: JSON (one run or an array) or JSONL, streamed."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator

from referee.audit.ingest.readers import trace_readers
from referee.audit.trace import TraceItem, parse_trace, record_error, record_gold, tolerate
from referee.core.jsonio.values import JsonValue, iter_json_values
from referee.errors import OwnOutputError, TraceError


@trace_readers.register("referee")
def read_referee(path: Path) -> Iterator[TraceItem]:
    """Yield one TraceItem per trace v1 record; a bad record becomes an item with `error`.

    A record may carry a gold label beside the trace as `gold: {"completed": ...}` (yes/no, true/false, 1/0, as a
    gold file; ignored by the audit, only `--gold-out` reads it; a value that does not read is a warning).
    """
    return referee_items(iter_json_values(path), str(path))


def referee_items(values: Iterable[JsonValue], file: str) -> Iterator[TraceItem]:
    """The TraceItems of trace v1 records already split out of `file` (the whole file, or some of its lines)."""
    for jv in values:
        if jv.error:
            yield TraceItem(file=file, line=jv.line, run_id=None, error=record_error(jv.error, file=file, line=jv.line))
            continue
        obj = jv.value
        run_id = obj.get("run_id") if isinstance(obj, dict) else None
        if not isinstance(obj, dict):
            yield TraceItem(file=file, line=jv.line, run_id=None,
                            error=record_error("a trace must be a JSON object", file=file, line=jv.line))
            continue
        if (why := not_trace_v1(obj)) is not None:
            own = referee_output(obj)
            err = record_error(why, file=file, line=jv.line, run_id=run_id) if own is None else \
                record_error(why, file=file, line=jv.line, run_id=run_id, kind=OwnOutputError, what=own)
            err.fix = "give the trace files it was made from instead" if own else (
                "write the run as trace v1 (run_id, task, steps: docs/auditor.md) or a reader plugin "
                "(docs/plugins.md); if it is one of those formats, pass --format NAME")
            yield TraceItem(file=file, line=jv.line, run_id=run_id, error=err)
            continue
        gold = None
        notes: tuple[str, ...] = ()
        if "gold" in obj:  # read as a gold file's `completed` is; a value that does not read is said, not dropped
            gold, why = record_gold(obj["gold"], "trace")
            where = f"{file}:{jv.line}: " + (f"run_id {run_id}: " if run_id not in (None, "") else "")
            notes = (where + why,) if why else ()
            obj = {k: v for k, v in obj.items() if k != "gold"}
        obj, ignored = tolerate(obj)
        try:
            trace = parse_trace(obj, file=file, line=jv.line)
        except TraceError as err:
            yield TraceItem(file=file, line=jv.line, run_id=run_id, error=err)
            continue
        yield TraceItem(file=file, line=jv.line, run_id=trace.run_id, trace=trace, gold=gold, ignored=ignored,
                        notes=notes)


_STEP_FIELDS = frozenset({"action", "observation", "narration"})


def referee_output(v: object) -> str | None:
    """What referee file a record is, when it is one of referee's own outputs rather than a trace: an audit record
    (`--out`), a gold label (`--gold-out`, `referee eval gold`) or an audit summary (`--summary-json`).

    >>> referee_output({"record_version": 4, "run_id": "a", "disposition": "flag"}), referee_output({"run_id": "a"})
    ('an audit record (referee audit --out)', None)
    """
    if not isinstance(v, dict) or "steps" in v or "trace_version" in v:
        return None
    if "disposition" in v and ("record_version" in v or "view_sha256" in v):
        return "an audit record (referee audit --out)"
    if "gold_version" in v and "completed" in v:
        return "a gold label (referee audit --gold-out, referee eval gold)"
    if {"records", "dispositions", "by_class"} <= v.keys():
        return "an audit summary (referee audit --summary-json)"
    return None


def not_trace_v1(obj: dict) -> str | None:
    """Why a record that fell back to trace v1 is in no format referee reads (not even trace v1's shape: no task,
    no steps of actions and observations), naming the formats it reads; None for a record of trace v1's shape,
    whose validation says what it lacks."""
    from referee.audit.ingest.readers import load_builtin

    own = referee_output(obj)
    if own is not None:
        return f"this is {own}, one of referee's own outputs, not a trace"
    if "trace_version" in obj or "task" in obj:
        return None
    steps = obj.get("steps")
    if isinstance(steps, list) and (not steps or any(isinstance(st, dict) and st.keys() & _STEP_FIELDS
                                                     for st in steps)):
        return None
    load_builtin()
    return (f"not a format referee reads: neither trace v1 (no task, no steps of action/observation/narration) nor "
            f"one of the formats it sniffs ({', '.join(trace_readers.names())}; `referee readers` lists them)")
