"""Reader for tau-bench result files: trace v1 from `traj`, the task from the user instruction, gold from `reward`."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from pydantic import ValidationError

from referee.audit.jsonstream import iter_json_values
from referee.audit.readers import trace_readers
from referee.audit.readers.openai_chat import messages_to_trace
from referee.audit.trace import SHAPE_ERRORS, Gold, Trace, TraceItem, record_error, shape_error, trace_error


def tau_run_id(obj: dict, n: int) -> str:
    """A stable id: task and trial when present, else the record's position.

    >>> tau_run_id({"task_id": 7, "trial": 2}, 0)
    'task7-trial2'
    """
    if "task_id" in obj:
        return f"task{obj['task_id']}-trial{obj.get('trial', n)}"
    return f"run{n}"


@trace_readers.register("tau-bench")
def read_tau_bench(path: Path) -> Iterator[TraceItem]:
    """Yield one trace per tau-bench run (one JSON array, JSONL, or concatenated objects).

    The reference actions (`info.task.actions`) and reward are never put in the trace: they are
    gold, not evidence. `completed` is `reward == 1.0`.
    """
    file = str(path)
    for n, jv in enumerate(iter_json_values(path)):
        if jv.error:
            yield TraceItem(file=file, line=jv.line, run_id=None, error=record_error(jv.error, file=file, line=jv.line))
            continue
        obj = jv.value
        if not isinstance(obj, dict) or not isinstance(obj.get("traj"), list):
            rid = tau_run_id(obj, n) if isinstance(obj, dict) else None
            yield TraceItem(file=file, line=jv.line, run_id=rid, error=record_error(
                "tau-bench: a run needs a 'traj' list of messages", file=file, line=jv.line, run_id=rid))
            continue
        run_id = tau_run_id(obj, n)
        task_info = (obj.get("info") or {}).get("task") or {}
        instruction = task_info.get("instruction") if isinstance(task_info, dict) else None
        if not isinstance(instruction, str) or not instruction.strip():
            yield TraceItem(file=file, line=jv.line, run_id=run_id, error=record_error(
                "tau-bench: no info.task.instruction (the task text)", file=file, line=jv.line, run_id=run_id))
            continue
        meta = {"source": "tau-bench", "group": str(obj.get("task_id", "")), "task_id": obj.get("task_id"),
                "trial": obj.get("trial")}
        try:
            raw = messages_to_trace(obj["traj"], run_id=run_id, task=instruction, meta=meta)
        except SHAPE_ERRORS as exc:
            yield TraceItem(file=file, line=jv.line, run_id=run_id,
                            error=shape_error(exc, "tau-bench", file=file, line=jv.line, run_id=run_id))
            continue
        try:
            trace = Trace.model_validate(raw)
        except ValidationError as exc:
            yield TraceItem(file=file, line=jv.line, run_id=run_id,
                            error=trace_error(exc, raw, file=file, line=jv.line, what="tau-bench"))
            continue
        gold = None
        reward = obj.get("reward")
        if isinstance(reward, (int, float)):
            gold = Gold(completed=abs(float(reward) - 1.0) < 1e-9, source="tau-bench reward")
        yield TraceItem(file=file, line=jv.line, run_id=run_id, trace=trace, gold=gold)
