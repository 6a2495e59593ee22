"""Text checkers over any evidence: a substring, or a regular expression."""

from __future__ import annotations

import json
import re
import subprocess
import sys

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


REGEX_TIMEOUT_S = 10.0  # one search of one evidence text; past it the validator is ERROR

# Python's regex engine backtracks, and holds the GIL while it does: `^(a+)+$` over 5,000 a's and a '!' runs for
# ever, and nothing in this process can stop it. A plan is a hostile input, so the search runs in a child that
# is killed at REGEX_TIMEOUT_S (one Python start, about 20 ms, per evidence text searched).
_SEARCH = r"""
import json, re, sys
data = sys.stdin.buffer.read()
head, _, text = data.partition(b"\n")
pattern, flags = json.loads(head)
m = re.compile(pattern, flags).search(text.decode("utf-8", "surrogatepass"))
sys.stdout.write(json.dumps(None if m is None else [m.start(), m.end()]))
"""


def bounded_search(pattern: str, flags: int, text: str, timeout_s: float = REGEX_TIMEOUT_S) -> tuple[int, int] | None:
    """`re.search(pattern, text, flags)`'s span, or None; TimeoutError when it takes longer than `timeout_s`.

    >>> bounded_search(r"b+", 0, "abbc"), bounded_search("x", 0, "abc")
    ((1, 3), None)
    >>> bounded_search(r"^(a+)+$", 0, "a" * 5000 + "!", timeout_s=1)
    Traceback (most recent call last):
    ...
    TimeoutError: the search took more than 1 s
    """
    payload = json.dumps([pattern, flags]).encode() + b"\n" + text.encode("utf-8", "surrogatepass")
    try:
        proc = subprocess.run([sys.executable, "-I", "-S", "-c", _SEARCH], input=payload, capture_output=True,
                              timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise TimeoutError(f"the search took more than {timeout_s:g} s") from None
    if proc.returncode != 0:
        raise RuntimeError(f"the search failed: {proc.stderr.decode(errors='replace').strip()[-300:]}")
    span = json.loads(proc.stdout)
    return None if span is None else (span[0], span[1])


@register("regex_match")
class RegexMatch(RegexMatchSpec, ValidatorKind):
    def check(self, params: RegexMatchSpec.Params, ev, index: int) -> Outcome:
        flags = re.IGNORECASE if params.ignore_case else 0
        re.compile(params.pattern, flags)  # a bad pattern is the plan's error, raised here as it was checked
        matched = None
        for ref in params.refs():
            try:
                body = evidence_text(ev, ref)
            except NoContent as exc:
                return Outcome.fail(f"{ref}: {exc}")
            try:
                # the bound as it is now (a test lowers it), not as it was when bounded_search was defined
                span = bounded_search(params.pattern, int(flags), body, timeout_s=REGEX_TIMEOUT_S)
            except TimeoutError:
                return Outcome.error(f"/{params.pattern}/ did not finish on {ref} in {REGEX_TIMEOUT_S:g} s (it "
                                     "backtracks without end on this text): the grader could not look; rewrite "
                                     "the pattern without nested repeats such as (a+)+")
            if span is None:
                return Outcome.fail(f"{ref} does not match /{params.pattern}/ ({short(body, 80)})")
            matched = body[span[0]:span[1]]
        return Outcome.hold(f"matches /{params.pattern}/: {short(matched, 60)!r}", matched=matched)
