"""Reader for referee's own trace v1 files: JSON (one run or an array) or JSONL, streamed."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator

from referee.audit.jsonstream import JsonValue, iter_json_values
from referee.audit.readers import trace_readers
from referee.audit.trace import Gold, TraceItem, parse_trace, record_error, tolerate
from referee.errors import TraceError


@trace_readers.register("referee")
def read_referee(path: Path) -> Iterator[TraceItem]:
    """Yield one TraceItem per trace v1 record; a bad record becomes an item with `error`.

    A record may carry a gold label beside the trace as `gold: {"completed": bool}` (ignored
    by the audit; only `--gold-out` reads it).
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
        gold = None
        g = obj.get("gold")
        if isinstance(g, dict) and isinstance(g.get("completed"), bool):
            obj = {k: v for k, v in obj.items() if k != "gold"}
            gold = Gold(completed=g["completed"], source="trace")
        obj, ignored = tolerate(obj)
        try:
            trace = parse_trace(obj, file=file, line=jv.line)
        except TraceError as err:
            yield TraceItem(file=file, line=jv.line, run_id=run_id, error=err)
            continue
        yield TraceItem(file=file, line=jv.line, run_id=trace.run_id, trace=trace, gold=gold, ignored=ignored)
