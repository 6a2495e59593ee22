"""Trace v1: the on-disk model of one finished agent run (task, steps, report), as DESIGN.md fixes it."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from referee.errors import GoldError, PluginFailed, TraceError


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Action(_Model):
    """What the agent did at a step: a tool or UI action name and its arguments."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class Observation(_Model):
    """What the environment showed after a step (or before the first one)."""

    text: str | None = None
    ui: Any = None
    data: Any = None
    screenshot: str | None = None
    error: bool = False


class Step(_Model):
    """One step: the action, what came back, and the agent's own words (claim channel)."""

    action: Action | None = None
    observation: Observation | None = None
    narration: str | None = None


class ToolDef(_Model):
    """A tool the agent was offered, as the trace carries it (environment data, never the claim channel)."""

    name: str
    description: str | None = None
    parameters: Any = None


def tool_defs(raw: Any) -> list[dict] | None:
    """Tool definitions in the flat trace v1 shape, from it or from OpenAI's `{"type": "function", "function": {...}}`.

    >>> tool_defs([{"type": "function", "function": {"name": "get_x", "description": "Get x."}}])
    [{'name': 'get_x', 'description': 'Get x.', 'parameters': None}]
    """
    if not isinstance(raw, list):
        return None
    out = []
    for t in raw:
        f = t.get("function") if isinstance(t, dict) and isinstance(t.get("function"), dict) else t
        if isinstance(f, dict) and isinstance(f.get("name"), str):
            desc = f.get("description")
            out.append({"name": f["name"], "description": desc if isinstance(desc, str) else None,
                        "parameters": f.get("parameters")})
    return out or None


class Trace(_Model):
    """One run in trace v1. `report` and every step's `narration` are the claim channel.

    >>> Trace(run_id="r1", task="delete x", steps=[]).trace_version
    1
    """

    trace_version: Literal[1] = 1
    run_id: str = Field(min_length=1)
    task: str
    initial_observation: Observation | None = None
    steps: list[Step]
    report: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    tools: list[ToolDef] | None = None  # the tools offered to the agent: names and descriptions


@dataclass(frozen=True)
class Gold:
    """A gold label a reader found beside the trace (e.g. tau-bench `reward`): for evaluation only."""

    completed: bool
    source: str


@dataclass(frozen=True)
class TraceItem:
    """One record read from a trace file: a trace (and maybe gold), or the error that record raised."""

    file: str
    line: int | None
    run_id: str | None
    trace: Trace | None = None
    gold: Gold | None = None
    error: TraceError | None = None
    ignored: tuple[str, ...] = ()  # fields the reader dropped because trace v1 does not define them
    # named scores the file carries beside the run (an Inspect AI log's scorers): gold only when the user
    # names one (GoldScorer), never evidence
    scores: Mapping[str, Any] | None = None
    # the trace's meta.group and task, for a record with gold a worker read (its trace stayed on the worker):
    # what --gold-out writes beside the label
    group: Any = None
    task: str | None = None
    # what the reader found beside the run but could not use (a gold report that does not read), said as a
    # warning: the run itself is audited
    notes: tuple[str, ...] = ()


GOLD_TRUE = frozenset({"true", "1", "yes", "y", "t"})
GOLD_FALSE = frozenset({"false", "0", "no", "n", "f"})


def gold_completed(value: Any) -> bool | None:
    """A gold `completed` value as a gold file gives it: a boolean, 1/0, or yes/no, true/false, 1/0 as text
    (any case); None when it is none of those.

    >>> gold_completed("no"), gold_completed(1), gold_completed(" TRUE "), gold_completed("maybe"), gold_completed(2)
    (False, True, True, None, None)
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return bool(value) if value in (0, 1) else None
    if isinstance(value, str):
        word = value.strip().lower()
        return True if word in GOLD_TRUE else False if word in GOLD_FALSE else None
    return None


def record_gold(value: Any, source: str) -> tuple[Gold | None, str | None]:
    """A record's own `gold: {"completed": ...}` as Gold, or why it does not read (said as a warning; the run is
    audited without gold).

    >>> record_gold({"completed": "no"}, "trace")
    (Gold(completed=False, source='trace'), None)
    >>> record_gold({"completed": "maybe"}, "trace")[1].startswith("gold {'completed': 'maybe'} does not read")
    True
    """
    completed = gold_completed(value.get("completed")) if isinstance(value, dict) else None
    if completed is not None:
        return Gold(completed=completed, source=source), None
    shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
    return None, (f"gold {shown} does not read: give {{\"completed\": ...}} with yes/no, true/false or 1/0; "
                  "this run has no gold")


_SCORE_WORDS = {"c": 1.0, "correct": 1.0, "i": 0.0, "incorrect": 0.0, "p": 0.5, "partial": 0.5, "n": 0.0,
                "noanswer": 0.0, "true": 1.0, "yes": 1.0, "pass": 1.0, "false": 0.0, "no": 0.0, "fail": 0.0}


def score_number(value: Any) -> float | None:
    """A score as a number: Inspect's `C`/`I`/`P`/`N` letters (1, 0, 0.5, 0), true/false, or a number.

    >>> score_number("C"), score_number("I"), score_number(0.75), score_number(True), score_number("maybe")
    (1.0, 0.0, 0.75, 1.0, None)
    >>> score_number(10 ** 400), score_number(-10 ** 400)
    (inf, -inf)
    """
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:  # an integer too large for a float: past any threshold, one way or the other
            return math.inf if value > 0 else -math.inf
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _SCORE_WORDS:
            return _SCORE_WORDS[word]
        try:
            return float(word)
        except ValueError:
            return None
    return None


@dataclass(frozen=True)
class GoldScorer:
    """The score a user names as gold (`--gold-scorer NAME`, `--gold-threshold T`): `completed` when the
    score is at least the threshold. A scorer that gives several values is named `NAME/KEY`.

    String-matching scorers grade the agent's answer (its claim), not the state it left, so no scorer is
    gold by default: the user picks one that checks the state.

    >>> item = TraceItem(file="log.eval", line=None, run_id="t/1/1", trace=Trace(run_id="t/1/1", task="x", steps=[]),
    ...                  scores={"check": "I", "match": "C"})
    >>> GoldScorer("check").pick(item).gold
    Gold(completed=False, source='scorer check')
    """

    name: str
    threshold: float = 1.0

    def _value(self, scores: Mapping[str, Any]) -> tuple[bool, Any]:
        if self.name in scores:
            return True, scores[self.name]
        base, _, key = self.name.rpartition("/")
        inner = scores.get(base) if base else None
        if isinstance(inner, dict) and key in inner:
            return True, inner[key]
        return False, None

    def pick(self, item: TraceItem) -> TraceItem:
        """The item with its gold taken from the named score; unchanged when the run carries no scores."""
        if item.error is not None or not item.scores:  # (a worker's account of a record has no trace, no error)
            return item
        found, value = self._value(item.scores)
        where = {"file": item.file, "place": str(item.line) if item.line is not None else None}
        if not found:
            names = ", ".join(sorted(item.scores))
            raise GoldError(f"run_id {item.run_id}: no scorer '{self.name}' (this run's scorers: {names})",
                            **where, fix="pass --gold-scorer with one of them")
        number = score_number(value)
        if number is None:
            several = f"; it gives several values: name one as {self.name}/KEY" if isinstance(value, dict) else ""
            raise GoldError(f"run_id {item.run_id}: scorer '{self.name}' gave {str(value)[:80]!r}, not C/I, "
                            f"a number or true/false{several}", **where,
                            fix="name a scorer that checks the state the run left")
        return replace(item, gold=Gold(completed=number >= self.threshold, source=f"scorer {self.name}"))


def parse_trace(obj: Any, *, file: str, line: int | None) -> Trace:
    """Validate one trace v1 object, turning a validation error into a one-line TraceError.

    >>> parse_trace({"run_id": "a", "task": "t", "steps": []}, file="f.jsonl", line=1).run_id
    'a'
    >>> parse_trace({"run_id": "a", "steps": []}, file="f.jsonl", line=3)
    Traceback (most recent call last):
    ...
    referee.errors.TraceError: f.jsonl:3: run_id a: trace v1: task: Field required; fix the record ... --on-error skip
    """
    try:
        return Trace.model_validate(obj)
    except ValidationError as exc:
        raise trace_error(exc, obj, file=file, line=line) from None


_LEVELS: dict[str, type[BaseModel]] = {"": Trace, "steps[]": Step, "steps[].action": Action,
                                       "steps[].observation": Observation, "initial_observation": Observation}
_FIELDS: dict[str, frozenset[str]] = {level: frozenset(m.model_fields) for level, m in _LEVELS.items()}


def _as_is(obj: Any) -> bool:
    """Whether `tolerate` would give back `obj` as it is (nothing to drop, nothing to coerce): then it does, without
    copying every step (the record is validated into models next, which copy what they keep)."""
    if type(obj) is not dict or not obj.keys() <= _FIELDS[""] or "tools" in obj:
        return False
    if _number(obj.get("run_id")):
        return False
    if isinstance(io := obj.get("initial_observation"), dict) and not _plain(io, "initial_observation"):
        return False
    steps = obj.get("steps")
    if isinstance(steps, list):
        for st in steps:
            if not isinstance(st, dict):
                continue
            a, o = st.get("action"), st.get("observation")
            if not (_plain(st, "steps[]") and (not isinstance(a, dict) or _plain(a, "steps[].action"))
                    and (not isinstance(o, dict) or _plain(o, "steps[].observation"))):
                return False
    return True


def _number(value: Any) -> bool:
    """A run_id `tolerate` writes as text: a number, integer or not (a boolean is none)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _plain(value: dict, level: str) -> bool:
    """A mapping of `level` that `tolerate` keeps as it is: a plain dict of known fields, no `error: null`."""
    return type(value) is dict and value.keys() <= _FIELDS[level] and not (
        "error" in value and value["error"] is None and _LEVELS[level] is Observation)


def tolerate(obj: Any) -> tuple[Any, tuple[str, ...]]:
    """Drop the fields trace v1 does not define (other writers add timestamps, thoughts, ids) and
    coerce harmless variants (`run_id` a number, integer or not, `error: null`); returns the cleaned record and the
    dropped field names, so the caller can say what it ignored. Dropped fields never reach the view.

    >>> tolerate({"run_id": 7, "task": "t", "steps": [{"ts": 1, "observation": {"error": None}}]})
    ({'run_id': '7', 'task': 't', 'steps': [{'observation': {'error': False}}]}, ('steps[].ts',))
    """
    if _as_is(obj):
        return obj, ()
    dropped: set[str] = set()

    def clean(value: Any, level: str) -> Any:
        model = _LEVELS[level]
        if not isinstance(value, dict):
            return value
        if value.keys() <= _FIELDS[level]:  # the usual record: nothing to drop, so no walk key by key
            if model is Action or (model is Observation and value.get("error", False) is not None):
                return dict(value)
            if model is Step:
                out = dict(value)
                for k in ("action", "observation"):
                    if k in out:
                        out[k] = clean(out[k], f"steps[].{k}")
                return out
        out = {}
        for k, v in value.items():
            if k not in model.model_fields:
                dropped.add(f"{level}.{k}" if level else k)
                continue
            if model is Observation and k == "error" and v is None:
                v = False
            elif model is Trace and k == "run_id" and _number(v):
                v = str(v)  # a number as its text: 7 is "7", 1.5 is "1.5"
            elif model is Trace and k == "steps" and isinstance(v, list):
                v = [clean(st, "steps[]") for st in v]
            elif model is Trace and k == "tools":
                v = tool_defs(v)
            elif model is Trace and k == "initial_observation":
                v = clean(v, "initial_observation")
            elif model is Step and k in ("action", "observation"):
                v = clean(v, f"steps[].{k}")
            out[k] = v
        return out

    cleaned = clean(obj, "")
    return cleaned, tuple(sorted(dropped))


def trace_error(exc: ValidationError, obj: Any, *, file: str, line: int | str | None,
                what: str = "trace v1") -> TraceError:
    """The first validation problem as a TraceError naming file, line and run_id."""
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"]) or "record"
    run_id = obj.get("run_id") if isinstance(obj, dict) else None
    return record_error(f"{what}: {loc}: {err['msg']}", file=file, line=line, run_id=run_id)


# what converting a record of an unexpected shape can raise: one bad record, never the whole file
# what makes one trace one skipped record: a shape no reader caught, nesting too deep, a plugin backend that raised
SHAPE_ERRORS = (TypeError, AttributeError, ValueError, KeyError, IndexError, RecursionError, PluginFailed)



def shape_error(exc: BaseException, what: str, *, file: str, line: int | str | None,
                run_id: Any = None) -> TraceError:
    """A record a reader could not convert, as a one-line TraceError (no traceback for a user's file)."""
    detail = "nesting too deep" if isinstance(exc, RecursionError) else f"{type(exc).__name__}: {str(exc)[:160]}"
    return record_error(f"{what}: a record of an unexpected shape ({detail})", file=file, line=line, run_id=run_id)


def record_error(msg: str, *, file: str, line: int | str | None, run_id: Any = None,
                 kind: type[TraceError] = TraceError, **more: Any) -> TraceError:
    """A TraceError (or `kind` of one) for one record: `file:line: run_id X: msg; fix`."""
    who = f"run_id {run_id}: " if run_id not in (None, "") else ""
    return kind(f"{who}{msg}", file=file, place=str(line) if line is not None else None,
                fix="fix the record or pass --on-error skip", **more)
