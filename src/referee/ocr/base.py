"""OCR results as frozen data, the engine contract, image decoding and a count of real engine calls."""

from __future__ import annotations

import io
import json
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from referee.core.fsutil import sha256_bytes
from referee.errors import EvidenceError, require


@dataclass(frozen=True)
class OcrLine:
    """One line of recognised text with its confidence (0..1) and bounding box (x, y, w, h)."""

    text: str
    confidence: float
    box: tuple[int, int, int, int] = (0, 0, 0, 0)


def _box(values: Any) -> tuple[int, int, int, int]:
    x, y, w, h = (int(v) for v in values)
    return x, y, w, h


@dataclass(frozen=True)
class OcrResult:
    """What an engine read in one image: lines in reading order.

    >>> r = OcrResult("tesseract", (OcrLine("Hello", 0.9), OcrLine("world", 0.4)))
    >>> r.text(), r.text(min_confidence=0.5)
    ('Hello\\nworld', 'Hello')
    """

    engine: str
    lines: tuple[OcrLine, ...] = ()
    width: int = 0
    height: int = 0
    ms: float = 0.0

    def text(self, min_confidence: float | None = None) -> str:
        """The recognised text, one line per line, dropping lines below `min_confidence`."""
        return "\n".join(ln.text for ln in self.kept(min_confidence))

    def kept(self, min_confidence: float | None = None) -> list[OcrLine]:
        if min_confidence is None:
            return list(self.lines)
        return [ln for ln in self.lines if ln.confidence >= min_confidence]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (the per-run OCR cache stores this)."""
        return {"engine": self.engine, "width": self.width, "height": self.height, "ms": round(self.ms, 1),
                "lines": [{"text": ln.text, "confidence": round(ln.confidence, 4), "box": list(ln.box)}
                          for ln in self.lines]}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> "OcrResult":
        """Inverse of `to_dict`.

        >>> OcrResult.from_dict(OcrResult("x", (OcrLine("a", 1.0),)).to_dict()).lines[0].text
        'a'
        """
        lines = tuple(OcrLine(str(ln["text"]), float(ln["confidence"]), _box(ln.get("box", (0, 0, 0, 0))))
                      for ln in d.get("lines", []))
        return OcrResult(str(d.get("engine", "")), lines, int(d.get("width", 0)), int(d.get("height", 0)),
                         float(d.get("ms", 0.0)))


def decode_image(data: bytes, ref: str = "image"):
    """Decode image bytes with Pillow into RGB; anything unreadable is an EvidenceError (-> ERROR).

    >>> decode_image(b"not a png", "shot.png")
    Traceback (most recent call last):
    ...
    referee.errors.EvidenceError: evidence 'shot.png' is not a readable image (cannot identify image file); save a ...
    """
    Image = require("PIL.Image", "ocr")
    try:
        img = Image.open(io.BytesIO(data))
        img.load()
    except Exception as exc:  # Pillow raises many kinds for truncated or foreign data
        why = "cannot identify image file" if "identify" in str(exc) else f"{type(exc).__name__}: {exc}"
        raise EvidenceError(f"evidence '{ref}' is not a readable image ({why})", fix="save a PNG screenshot") from None
    if img.width < 1 or img.height < 1:
        raise EvidenceError(f"evidence '{ref}' is an empty image", fix="save a PNG screenshot")
    return img.convert("RGB")


class OcrEngine:
    """Base class of an OCR engine. `cache_id` names the engine *and* its settings: change one, change it.

    `read(img)` takes a Pillow RGB image and returns lines; it must be deterministic.
    """

    name: ClassVar[str] = ""
    extra: ClassVar[str] = "ocr"
    drops_spaces: ClassVar[bool] = False  # True: match with spaces ignored unless the validator says otherwise

    @property
    def cache_id(self) -> str:
        return self.name

    def available(self) -> str | None:
        """None when the engine can run here, else a one-line reason with the fix."""
        return None

    def read(self, img) -> list[OcrLine]:
        raise NotImplementedError


@dataclass
class CallLog:
    """Counts real engine invocations (cache misses); `REFEREE_OCR_TRACE=FILE` also appends one JSON line per call.

    Tests and the benchmark read it to prove that re-grading OCRs nothing.
    """

    calls: int = 0
    by_engine: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, engine: str, sha256: str, ms: float) -> None:
        with self._lock:
            self.calls += 1
            self.by_engine[engine] = self.by_engine.get(engine, 0) + 1
        trace = os.environ.get("REFEREE_OCR_TRACE")
        if trace:
            with open(trace, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"engine": engine, "sha256": sha256, "ms": round(ms, 1)}) + "\n")


CALLS = CallLog()


def run_engine(engine: OcrEngine, data: bytes, ref: str = "image") -> OcrResult:
    """Decode `data` and OCR it with `engine` (no caching here: see `referee.ocr.ocr_cached`)."""
    img = decode_image(data, ref)
    t0 = time.perf_counter()
    lines = engine.read(img)
    ms = (time.perf_counter() - t0) * 1000
    CALLS.record(engine.name, sha256_bytes(data), ms)
    return OcrResult(engine.name, tuple(lines), img.width, img.height, ms)
