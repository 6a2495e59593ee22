"""Helpers checkers share: the text or JSON of a capture, a capture's record, a JSON path's values."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from referee.core.safetext import visible
from referee.errors import EvidenceError
from referee.plan.validators import SourceParams, http_capture, implicit_name, parse_json_path
from referee.rundir.schema import CommandRecord, FileRecord, HttpRecord

R = TypeVar("R")


def evidence_text(view, ref: str) -> str:
    """The text a validator should read from an evidence file, by the record behind it.

    http -> body; command -> stdout (stderr after it); sql/ddb -> rows as JSON; any other file -> its text.
    """
    record = view.record(ref)
    if isinstance(record, FileRecord):  # the copied file's text, never its record (which holds the path)
        return evidence_bytes(view, ref).decode("utf-8", errors="replace")
    text = record.text() if record is not None else None
    return text if text is not None else view.read_text(ref)


def evidence_bytes(view, ref: str) -> bytes:
    """The bytes of an evidence file; for a file capture, of the copy the runner made (NoContent: none was).

    An image behind a `file` capture is OCR'd from its copy, a text file searched in it.
    """
    record = view.record(ref)
    if not isinstance(record, FileRecord):
        return view.read_bytes(ref)
    path = record.resolved or record.path
    if not record.exists:
        what = f"is not a regular file ({record.not_regular})" if record.not_regular else "does not exist"
        raise NoContent(f"{path} {what} after the step: no text to read")
    if record.copy_ is None:  # it was there, but the grader cannot look at what it held: ERROR, not a FAIL
        raise EvidenceError(f"{path} ({record.size} bytes) was too big for the runner to copy (over 256 MiB): "
                            "its content cannot be read")
    return view.read_bytes(record.copy_)


class NoContent(Exception):
    """A file capture with nothing to read (no such file, no regular file after the step): a FAIL, not an ERROR."""


def evidence_json(view, ref: str) -> Any:
    """JSON a validator should read: an http body, a command's stdout, a row record, or a JSON file itself."""
    record = view.record(ref)
    if isinstance(record, (HttpRecord, CommandRecord)):
        try:
            return json.loads(record.body if isinstance(record, HttpRecord) else record.stdout)
        except ValueError as exc:
            raise NotJson(f"the {record.kind} capture '{ref}' is not JSON ({exc})") from None
    if isinstance(record, FileRecord):  # the copied file's JSON, never its record (which holds the path)
        try:
            return json.loads(evidence_bytes(view, ref))
        except ValueError as exc:
            raise NotJson(f"the file of capture '{ref}' is not JSON ({exc})") from None
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
    """A value for a reason line, on one line with control characters escaped, cut to `limit` characters.

    >>> short("a\\nb"), short("x" * 200)[-3:]
    ('a\\\\x0ab', 'xx…')
    """
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = visible(text, keep_newlines=False)  # what the app or the agent wrote never acts on a terminal or a log
    return text if len(text) <= limit else text[: limit - 1] + "…"


def path_text(steps: list[Any]) -> str:
    """A parsed JSON path written back: `$.a[0][*]`.

    >>> path_text(["a", 0, "*"])
    '$.a[0][*]'
    """
    return "$" + "".join(f"[{s}]" if isinstance(s, int) or s == "*" else f".{s}" if str(s).isidentifier()
                         else f"[{json.dumps(s)}]" for s in steps)


def nearest_present(doc: Any, steps: list[Any]) -> tuple[str, Any]:
    """The longest leading part of a path that is present in `doc`, and its value (the first, under `*`).

    >>> nearest_present({"a": {"b": 1}}, ["a", "c", "d"])
    ('$.a', {'b': 1})
    """
    for n in range(len(steps) - 1, -1, -1):
        values = json_path_get(doc, steps[:n])
        if values:
            return path_text(steps[:n]), values[0]
    return "$", doc


def response_excerpt(record: Any) -> str | None:
    """`404 {"error": ...}`: an http capture's status and the start of its body, for a reason; None for others."""
    if not isinstance(record, HttpRecord):
        return None
    if record.status is None:
        return f"no response ({short(record.error or 'request failed')})"
    return f"{record.status} {short(record.body)}" if record.body else f"{record.status} (empty body)"


__all__ = ["SourceParams", "implicit_name", "http_capture", "evidence_text", "evidence_bytes", "evidence_json",
           "capture_record", "parse_json_path", "json_path_get", "short", "path_text", "nearest_present",
           "response_excerpt", "NotJson", "NoContent", "EvidenceError"]
