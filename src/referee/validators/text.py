"""Text validators over any evidence: a substring, or a regular expression."""

from __future__ import annotations

import re

from pydantic import field_validator

from referee.validators.base import Outcome, ValidatorKind, ValidatorParams, register
from referee.validators.common import evidence_text, short


class TextParams(ValidatorParams):
    evidence: str | list[str]
    ignore_case: bool = False

    def refs(self) -> list[str]:
        return [self.evidence] if isinstance(self.evidence, str) else list(self.evidence)


@register("text_contains")
class TextContains(ValidatorKind):
    summary = "every evidence file (capture name or agent path) contains `text`"

    class Params(TextParams):
        text: str

    def check(self, params, ev, index):
        needle = params.text.lower() if params.ignore_case else params.text
        for ref in params.refs():
            body = evidence_text(ev, ref)
            hay = body.lower() if params.ignore_case else body
            if needle not in hay:
                return Outcome.fail(f"{ref} does not contain {params.text!r} ({short(body, 80)})")
        return Outcome.hold(f"contains {params.text!r}", matched=params.text)


@register("regex_match")
class RegexMatch(ValidatorKind):
    summary = "every evidence file matches the regular expression `pattern` (re.search)"

    class Params(TextParams):
        pattern: str

        @field_validator("pattern")
        @classmethod
        def _compiles(cls, v: str) -> str:
            try:
                re.compile(v)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from None
            return v

    def check(self, params, ev, index):
        rx = re.compile(params.pattern, re.IGNORECASE if params.ignore_case else 0)
        matched = None
        for ref in params.refs():
            body = evidence_text(ev, ref)
            m = rx.search(body)
            if not m:
                return Outcome.fail(f"{ref} does not match /{params.pattern}/ ({short(body, 80)})")
            matched = m.group(0)
        return Outcome.hold(f"matches /{params.pattern}/: {short(matched, 60)!r}", matched=matched)
