"""Helpers validators share: one evidence ref or many, the text of a capture, a tiny JSONPath."""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import model_validator

from referee.errors import EvidenceError
from referee.rundir import CommandRecord, HttpRecord
from referee.validators.base import CaptureRequest, ValidatorParams

R = TypeVar("R")


class SourceParams(ValidatorParams):
    """`url` (the runner captures it) or `evidence` (a capture name or an agent-saved path)."""

    url: str | None = None
    evidence: str | list[str] | None = None

    @model_validator(mode="after")
    def _one_source(self):
        if (self.url is None) == (self.evidence is None):
            raise ValueError("give exactly one of `url` (the runner captures it) or `evidence` (a capture name)")
        return self


def implicit_name(kind: str, index: int) -> str:
    """The capture name the runner uses for a validator's own capture.

    >>> implicit_name("http_status_eq", 0)
    '_v0_http_status_eq'
    """
    return f"_v{index}_{kind}"


def http_capture(params: SourceParams, index: int) -> list[CaptureRequest]:
    if params.url is None:
        return []
    return [CaptureRequest("http", implicit_name(params.kind, index), {"url": params.url})]


def evidence_text(view, ref: str) -> str:
    """The text a validator should read from an evidence file, by the record behind it.

    http -> body; command -> stdout (stderr after it); sql/ddb -> rows as JSON; any other file -> its text.
    """
    record = view.record(ref)
    text = record.text() if record is not None else None
    return text if text is not None else view.read_text(ref)


def evidence_json(view, ref: str) -> Any:
    """JSON a validator should read: an http body, a command's stdout, a row record, or a JSON file itself."""
    record = view.record(ref)
    if isinstance(record, (HttpRecord, CommandRecord)):
        try:
            return json.loads(record.body if isinstance(record, HttpRecord) else record.stdout)
        except ValueError as exc:
            raise NotJson(f"the {record.kind} capture '{ref}' is not JSON ({exc})") from None
    if record is not None:
        return record.document()
    try:
        return json.loads(view.read_bytes(ref))
    except ValueError as exc:
        # a saved file that should be JSON and is not: the grader cannot read the evidence
        raise EvidenceError(f"evidence '{ref}' is not valid JSON ({exc})", fix="save the document as JSON") from None


def capture_record(view, ref: str, model: type[R], what: str) -> R:
    """The record of capture `ref`, which must be a `model`; EvidenceError (the grader cannot look) otherwise.

    A command capture with `stdout_as` keeps its record beside the saved file, as `<ref>.json`.
    """
    record = view.record(ref)
    if record is None and model is CommandRecord and not ref.endswith(".json"):
        record = view.record(f"{ref}.json")
    if not isinstance(record, model):
        raise EvidenceError(f"evidence '{ref}' is not {what}", fix=f"name {what} of this step")
    return record


class NotJson(Exception):
    """Evidence that should be JSON and is not: a FAIL of the app, not an ERROR of the grader."""

_TOKEN = re.compile(r"\.([A-Za-z_][\w-]*)|\[(-?\d+)\]|\[\s*'([^']*)'\s*\]|\[\s*\"([^\"]*)\"\s*\]|\[\*\]|\.\*")


def parse_json_path(path: str) -> list[Any]:
    """Parse `$.a.b[0]`, `$['a b'][-1]`, `$.items[*].id` into steps (str key, int index, or '*').

    >>> parse_json_path("$.a.b[0]")
    ['a', 'b', 0]
    """
    if not path.startswith("$"):
        raise ValueError(f"a JSON path starts with '$' (got {path!r})")
    out: list[Any] = []
    pos = 1
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if not m:
            raise ValueError(f"cannot parse JSON path {path!r} at character {pos + 1}")
        key, idx, sq, dq = m.groups()
        if key is not None:
            out.append(key)
        elif idx is not None:
            out.append(int(idx))
        elif sq is not None or dq is not None:
            out.append(sq if sq is not None else dq)
        else:
            out.append("*")
        pos = m.end()
    return out


_MISSING = object()


def json_path_get(doc: Any, steps: list[Any]) -> list[Any]:
    """All values at `steps` in `doc` (a list, since `*` may fan out); [] when the path is absent.

    >>> json_path_get({"a": [{"id": 1}, {"id": 2}]}, ["a", "*", "id"])
    [1, 2]
    """
    current = [doc]
    for step in steps:
        nxt = []
        for node in current:
            if step == "*":
                if isinstance(node, list):
                    nxt.extend(node)
                elif isinstance(node, dict):
                    nxt.extend(node.values())
            elif isinstance(step, int):
                if isinstance(node, list) and -len(node) <= step < len(node):
                    nxt.append(node[step])
            elif isinstance(node, dict) and step in node:
                nxt.append(node[step])
        current = nxt
    return current


def short(value: Any, limit: int = 120) -> str:
    """A value for a reason line, cut to `limit` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["SourceParams", "implicit_name", "http_capture", "evidence_text", "evidence_json", "capture_record",
           "parse_json_path", "json_path_get", "short", "NotJson", "EvidenceError"]
