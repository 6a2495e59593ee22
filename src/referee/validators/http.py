"""HTTP checkers over runner-captured responses: status, body text, a JSON path's value."""

from __future__ import annotations

from typing import Any

from referee.plan.validators import HttpBodyContainsSpec, HttpStatusEqSpec, JsonPathEqSpec, parse_json_path
from referee.rundir.schema import HttpRecord
from referee.validators.base import Outcome, ValidatorKind, register
from referee.validators.common import (
    NotJson,
    evidence_json,
    evidence_text,
    json_path_get,
    nearest_present,
    response_excerpt,
    short,
)


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


@register("http_status_eq")
class HttpStatusEq(HttpStatusEqSpec, ValidatorKind):
    def check(self, params: HttpStatusEqSpec.Params, ev, index: int) -> Outcome:
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
        return Outcome.fail(f"status {status}, expected {params.expected} ({resp.url}); "
                            f"the response was {response_excerpt(resp)}")


@register("http_body_contains")
class HttpBodyContains(HttpBodyContainsSpec, ValidatorKind):
    def check(self, params: HttpBodyContainsSpec.Params, ev, index: int) -> Outcome:
        ref = self.evidence_refs(params, index)[0]
        body = evidence_text(ev, ref)
        hay, needle = (body.lower(), params.text.lower()) if params.ignore_case else (body, params.text)
        if needle in hay:
            return Outcome.hold(f"body contains {params.text!r}", matched=params.text)
        record = ev.record(ref)
        if isinstance(record, HttpRecord) and record.body_truncated:
            # the rest of the body was never kept: the text may lie there, so the grader could not look
            return Outcome.error(f"the body was cut at the runner's limit ({len(body)} characters kept) and its kept "
                                 f"part does not contain {params.text!r}; the text may lie past it; "
                                 f"the response was {response_excerpt(record)}")
        seen = response_excerpt(record)
        return Outcome.fail(f"body does not contain {params.text!r} " +
                            (f"(the response was {seen})" if seen else f"(body: {short(body)})"))


@register("json_path_eq")
class JsonPathEq(JsonPathEqSpec, ValidatorKind):
    def check(self, params: JsonPathEqSpec.Params, ev, index: int) -> Outcome:
        ref = self.evidence_refs(params, index)[0]
        seen = response_excerpt(ev.record(ref))  # an http capture's status and body start, quoted in every FAIL
        said = f"; the response was {seen}" if seen else ""
        try:
            doc = evidence_json(ev, ref)
        except NotJson as exc:
            return Outcome.fail(f"{exc}{said}")
        steps = parse_json_path(params.path)
        values = json_path_get(doc, steps)
        if not values:
            where, value = nearest_present(doc, steps)
            # the value at `$` is the response body already quoted: said once
            at = "" if where == "$" and seen else f"; {where} is {short(value)}"
            return Outcome.fail(f"{params.path} is absent{at}{said}")
        if any(_same(v, params.expected) for v in values):
            return Outcome.hold(f"{params.path} == {short(params.expected)}", matched=short(params.expected))
        shown = values[0] if len(values) == 1 else values
        return Outcome.fail(f"{params.path} is {short(shown)}, expected {short(params.expected)}{said}")
