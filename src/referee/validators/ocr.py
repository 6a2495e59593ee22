"""OCR checkers: the text a screenshot shows, read by a registered engine and cached by image SHA-256."""

from __future__ import annotations

from referee.ocr import find, get_engine, ocr_cached
from referee.ocr.text import excerpt
from referee.plan.validators import OcrContainsSpec, OcrNotContainsSpec, OcrParams
from referee.validators.base import Outcome, ValidatorKind, register
from referee.validators.common import NoContent, evidence_bytes


def _read(params: OcrParams, ev, ref: str):
    """OCR one evidence file through the run's cache: (kept lines, all lines)."""
    result = ocr_cached(evidence_bytes(ev, ref), params.engine, ev.cached, ref)
    return [ln.text for ln in result.kept(params.min_confidence)], result


def _spaces(params: OcrParams) -> bool:
    return params.ignore_spaces if params.ignore_spaces is not None else get_engine(params.engine).drops_spaces


def _look(params: OcrParams, ev, ref: str):
    """(match or None, a short why-not for a reason line)."""
    kept, result = _read(params, ev, ref)
    opts = {"case_sensitive": not params.ignore_case, "ignore_spaces": _spaces(params)}
    m = find(params.text, kept, **opts)
    if m is not None:
        return m, ""
    if params.min_confidence is not None:
        low = find(params.text, [ln.text for ln in result.lines], **opts)
        if low is not None:
            return None, f"only below min_confidence {params.min_confidence:g} ({low.line!r})"
    seen = excerpt(" | ".join(kept), 160) or "no text"
    return None, f"{params.engine} read: {seen}"


@register("ocr_contains")
class OcrContains(OcrContainsSpec, ValidatorKind):
    def check(self, params: OcrParams, ev, index: int) -> Outcome:
        found = []
        for ref in params.refs():
            try:
                m, why = _look(params, ev, ref)
            except NoContent as exc:
                return Outcome.fail(f"{params.text!r} not read in {ref} ({exc})")
            if m is None:
                return Outcome.fail(f"{params.text!r} not read in {ref} ({why})")
            found.append((ref, m))
        where = "; ".join(f"{ref} line {m.line_no}: {excerpt(m.line, 80)!r}" for ref, m in found)
        return Outcome.hold(f"{params.text!r} read in {where}", matched=found[0][1].line)


@register("ocr_not_contains")
class OcrNotContains(OcrNotContainsSpec, ValidatorKind):
    def check(self, params: OcrParams, ev, index: int) -> Outcome:
        for ref in params.refs():
            try:
                m, _ = _look(params, ev, ref)
            except NoContent as exc:  # nothing to read shows nothing, but the check could not look: no PASS
                return Outcome.fail(f"nothing to read in {ref} ({exc})")
            if m is not None:
                return Outcome.fail(f"{params.text!r} read in {ref} line {m.line_no}: {excerpt(m.line, 80)!r}")
        n = len(params.refs())
        return Outcome.hold(f"{params.text!r} not read in {'any of ' if n > 1 else ''}{', '.join(params.refs())}")
