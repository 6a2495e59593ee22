"""Reader for tau-bench result files: trace v1 from `traj`, the task from the user instruction, gold from `reward`."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from pydantic import ValidationError

from referee.audit.ingest.readers import trace_readers
from referee.audit.ingest.readers.openai_chat import messages_to_trace
from referee.audit.trace import SHAPE_ERRORS, Gold, Trace, TraceItem, record_error, shape_error, trace_error
from referee.core.jsonio.values import iter_json_values


def tau_run_id(obj: dict, n: int) -> str:
    """A stable id: task and trial when present, else the record's position.

    >>> tau_run_id({"task_id": 7, "trial": 2}, 0)
    'task7-trial2'
    """
    if "task_id" in obj:
        return f"task{obj['task_id']}-trial{obj.get('trial', n)}"
    return f"run{n}"


def _json_kind(value: object) -> str:
    """A value's JSON type, as a user reading the file would name it."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "a string" if isinstance(value, str) else "a list" if isinstance(value, list) else \
        "an object" if isinstance(value, dict) else "null"


def instruction(obj: dict) -> str:
    """`info.task.instruction`, the task text; ValueError naming the level that is missing or not an object.

    >>> instruction({"info": {"task": {"instruction": "Cancel ABC123."}}})
    'Cancel ABC123.'
    >>> instruction({"info": "see logs"})
    Traceback (most recent call last):
    ValueError: no info.task.instruction (the task text): 'info' is a string, not an object
    """
    value: object = obj
    where = ""
    for key in ("info", "task"):
        value = value.get(key) if isinstance(value, dict) else None
        where = f"{where}.{key}".lstrip(".")
        if value is not None and not isinstance(value, dict):  # a run's info written as text, a number, a list
            raise ValueError(f"no info.task.instruction (the task text): '{where}' is {_json_kind(value)}, "
                             "not an object")
    text = value.get("instruction") if isinstance(value, dict) else None
    if not isinstance(text, str) or not text.strip():
        raise ValueError("no info.task.instruction (the task text)")
    return text


def reward_gold(reward: object) -> Gold | None:
    """Gold from a run's `reward`: completed when it is 1 (compared as it is: an integer too large for a float is
    no error, and is not 1).

    >>> reward_gold(1.0), reward_gold(10 ** 400), reward_gold("1")
    (Gold(completed=True, source='tau-bench reward'), Gold(completed=False, source='tau-bench reward'), None)
    """
    if isinstance(reward, float):
        return Gold(completed=abs(reward - 1.0) < 1e-9, source="tau-bench reward")
    if isinstance(reward, int):
        return Gold(completed=reward == 1, source="tau-bench reward")
    return None


def crashed(obj: dict, run_id: str, *, file: str, line: int | None) -> TraceItem:
    """A run tau-bench recorded as crashed (`traj: []`, `info.error`): a bad record quoting the error, with its gold
    (the reward tau-bench gave it), which `referee eval gold` writes: the run is in the benchmark's results."""
    said = " ".join(str(obj["info"]["error"]).split())
    said = said if len(said) <= 120 else said[:117] + "..."
    err = record_error(f"tau-bench: the run crashed before its first turn (info.error: {said!r}): nothing to audit",
                       file=file, line=line, run_id=run_id)
    err.fix = "run that task again or pass --on-error skip"
    return TraceItem(file=file, line=line, run_id=run_id, error=err, gold=reward_gold(obj.get("reward")),
                     group=str(obj.get("task_id", "")))


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
        if not obj["traj"] and isinstance(obj.get("info"), dict) and obj["info"].get("error"):
            yield crashed(obj, run_id, file=file, line=jv.line)
            continue
        try:
            task = instruction(obj)
        except ValueError as exc:
            yield TraceItem(file=file, line=jv.line, run_id=run_id, error=record_error(
                f"tau-bench: {exc}", file=file, line=jv.line, run_id=run_id))
            continue
        meta = {"source": "tau-bench", "group": str(obj.get("task_id", "")), "task_id": obj.get("task_id"),
                "trial": obj.get("trial")}
        try:
            raw = messages_to_trace(obj["traj"], run_id=run_id, task=task, meta=meta)
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
        yield TraceItem(file=file, line=jv.line, run_id=run_id, trace=trace, gold=reward_gold(obj.get("reward")))
