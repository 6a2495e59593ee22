"""OCR validators: the text a screenshot shows, read by a registered engine and cached by image SHA-256."""

from __future__ import annotations

from pydantic import Field, field_validator

from referee.ocr import DEFAULT_ENGINE, engines, find, get_engine, ocr_cached
from referee.ocr.text import excerpt
from referee.validators.base import CaptureRequest, Outcome, ValidatorKind, ValidatorParams, register

SCREEN = "_screen"  # the runner's own after-step screenshot, shared by every screen validator without `evidence`


class OcrParams(ValidatorParams):
    """`evidence`: one or more PNGs (capture names or agent-saved paths); none = the runner's own screenshot."""

    evidence: str | list[str] | None = None
    text: str
    engine: str = DEFAULT_ENGINE
    min_confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    ignore_case: bool = True
    ignore_spaces: bool | None = None  # None: the engine decides (RapidOCR runs words together)

    @field_validator("text")
    @classmethod
    def _some_text(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("`text` must not be blank: a blank needle matches every screen")
        return v

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, v: str) -> str:
        if v not in engines:
            raise ValueError(str(engines.unknown(v)))
        return v

    @field_validator("evidence")
    @classmethod
    def _some_evidence(cls, v):
        if isinstance(v, list) and not v:
            raise ValueError("`evidence` lists no file; leave it out to OCR the runner's own screenshot")
        return v

    def refs(self) -> list[str]:
        if self.evidence is None:
            return [SCREEN]
        return [self.evidence] if isinstance(self.evidence, str) else list(self.evidence)


def _read(params: OcrParams, ev, ref: str):
    """OCR one evidence file through the run's cache: (kept lines, all lines)."""
    result = ocr_cached(ev.read_bytes(ref), params.engine, ev.cached, ref)
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
class OcrContains(ValidatorKind):
    summary = "every screenshot (capture name or agent PNG; default: the runner's own) shows `text`, read by OCR"

    Params = OcrParams

    def captures(self, params, index):
        return [CaptureRequest("screenshot", SCREEN)] if params.evidence is None else []

    def evidence_refs(self, params, index):
        return params.refs()

    def check(self, params, ev, index):
        found = []
        for ref in params.refs():
            m, why = _look(params, ev, ref)
            if m is None:
                return Outcome.fail(f"{params.text!r} not read in {ref} ({why})")
            found.append((ref, m))
        where = "; ".join(f"{ref} line {m.line_no}: {excerpt(m.line, 80)!r}" for ref, m in found)
        return Outcome.hold(f"{params.text!r} read in {where}", matched=found[0][1].line)


@register("ocr_not_contains")
class OcrNotContains(ValidatorKind):
    summary = "no screenshot (capture name or agent PNG; default: the runner's own) shows `text`, read by OCR"

    Params = OcrParams
    negative = True  # holds by absence: the lint does not call it loose for holding on a control

    def captures(self, params, index):
        return [CaptureRequest("screenshot", SCREEN)] if params.evidence is None else []

    def evidence_refs(self, params, index):
        return params.refs()

    def check(self, params, ev, index):
        for ref in params.refs():
            m, _ = _look(params, ev, ref)
            if m is not None:
                return Outcome.fail(f"{params.text!r} read in {ref} line {m.line_no}: {excerpt(m.line, 80)!r}")
        n = len(params.refs())
        return Outcome.hold(f"{params.text!r} not read in {'any of ' if n > 1 else ''}{', '.join(params.refs())}")
