"""Text checkers over any evidence: a substring, or a regular expression."""

from __future__ import annotations

import re

from referee.plan.validators import RegexMatchSpec, TextContainsSpec
from referee.validators.base import Outcome, ValidatorKind, register
from referee.validators.common import NoContent, evidence_text, short


@register("text_contains")
class TextContains(TextContainsSpec, ValidatorKind):
    def check(self, params: TextContainsSpec.Params, ev, index: int) -> Outcome:
        needle = params.text.lower() if params.ignore_case else params.text
        for ref in params.refs():
            try:
                body = evidence_text(ev, ref)
            except NoContent as exc:
                return Outcome.fail(f"{ref}: {exc}")
            hay = body.lower() if params.ignore_case else body
            if needle not in hay:
                return Outcome.fail(f"{ref} does not contain {params.text!r} ({short(body, 80)})")
        return Outcome.hold(f"contains {params.text!r}", matched=params.text)


@register("regex_match")
class RegexMatch(RegexMatchSpec, ValidatorKind):
    def check(self, params: RegexMatchSpec.Params, ev, index: int) -> Outcome:
        rx = re.compile(params.pattern, re.IGNORECASE if params.ignore_case else 0)
        matched = None
        for ref in params.refs():
            try:
                body = evidence_text(ev, ref)
            except NoContent as exc:
                return Outcome.fail(f"{ref}: {exc}")
            m = rx.search(body)
            if not m:
                return Outcome.fail(f"{ref} does not match /{params.pattern}/ ({short(body, 80)})")
            matched = m.group(0)
        return Outcome.hold(f"matches /{params.pattern}/: {short(matched, 60)!r}", matched=matched)
