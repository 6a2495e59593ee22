"""HTTP validators over runner-captured responses: status, body text, a JSON path's value."""

from __future__ import annotations

from typing import Any

from pydantic import field_validator

from referee.rundir import HttpRecord
from referee.validators.base import Outcome, ValidatorKind, register
from referee.validators.common import (NotJson, SourceParams, evidence_json, evidence_text, http_capture,
                                       json_path_get, parse_json_path, short)


def _http_response(view, ref: str) -> HttpRecord:
    record = view.record(ref)
    if not isinstance(record, HttpRecord):
        raise NotJson(f"'{ref}' is not an http capture")
    return record


def _same(a: Any, b: Any) -> bool:
    """JSON equality that keeps true apart from 1."""
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    return a == b


class HttpSourceKind(ValidatorKind):
    """A validator over one response: `url` (the runner captures it) or `evidence`."""

    def captures(self, params, index):
        return http_capture(params, index)


@register("http_status_eq")
class HttpStatusEq(HttpSourceKind):
    summary = "the HTTP status of a runner-captured response equals `expected`"

    class Params(SourceParams):
        expected: int

    def check(self, params, ev, index):
        ref = self.evidence_refs(params, index)[0]
        try:
            resp = _http_response(ev, ref)
        except NotJson as exc:
            return Outcome.error(str(exc))
        status = resp.status
        if status is None:
            return Outcome.fail(f"no response from {resp.url}: {resp.error or 'request failed'}")
        if status == params.expected:
            return Outcome.hold(f"status {status} == {params.expected}", matched=str(status))
        return Outcome.fail(f"status {status}, expected {params.expected} ({resp.url})")


@register("http_body_contains")
class HttpBodyContains(HttpSourceKind):
    summary = "the body of a runner-captured response contains `text`"

    class Params(SourceParams):
        text: str
        ignore_case: bool = False

    def check(self, params, ev, index):
        ref = self.evidence_refs(params, index)[0]
        body = evidence_text(ev, ref)
        hay, needle = (body.lower(), params.text.lower()) if params.ignore_case else (body, params.text)
        if needle in hay:
            return Outcome.hold(f"body contains {params.text!r}", matched=params.text)
        return Outcome.fail(f"body does not contain {params.text!r} (body: {short(body)})")


@register("json_path_eq")
class JsonPathEq(HttpSourceKind):
    summary = "the value at a JSON path (`$.a.b[0]`) of a response or JSON file equals `expected`"

    class Params(SourceParams):
        path: str
        expected: Any

        @field_validator("path")
        @classmethod
        def _parses(cls, v: str) -> str:
            parse_json_path(v)
            return v

    def check(self, params, ev, index):
        ref = self.evidence_refs(params, index)[0]
        try:
            doc = evidence_json(ev, ref)
        except NotJson as exc:
            return Outcome.fail(str(exc))
        values = json_path_get(doc, parse_json_path(params.path))
        if not values:
            return Outcome.fail(f"{params.path} is absent")
        if any(_same(v, params.expected) for v in values):
            return Outcome.hold(f"{params.path} == {short(params.expected)}", matched=short(params.expected))
        shown = values[0] if len(values) == 1 else values
        return Outcome.fail(f"{params.path} is {short(shown)}, expected {short(params.expected)}")
