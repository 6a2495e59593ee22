"""OCR engines behind one registry (tesseract, rapidocr), with results cached by image SHA-256."""

from __future__ import annotations

from typing import Any, Callable

from referee.core.fsutil import sha256_bytes
from referee.core.registry import Registry
from referee.ocr.base import CALLS, OcrEngine, OcrLine, OcrResult, decode_image, run_engine
from referee.ocr.rapid import RapidOcrEngine
from referee.ocr.tesseract import TesseractEngine
from referee.ocr.text import find, normalise

__all__ = ["CALLS", "OcrEngine", "OcrLine", "OcrResult", "engines", "get_engine", "ocr_bytes", "ocr_cached",
           "decode_image", "find", "normalise", "DEFAULT_ENGINE"]

DEFAULT_ENGINE = "tesseract"

engines: Registry[OcrEngine] = Registry("OCR engine", "referee.ocr_engines", item=OcrEngine, name_attr="name")
engines.add("tesseract", TesseractEngine)
engines.add("rapidocr", RapidOcrEngine)


def get_engine(name: str = DEFAULT_ENGINE) -> OcrEngine:
    """The engine registered under `name` (UnknownKindError with the nearest name otherwise).

    >>> get_engine("tesseract").name
    'tesseract'
    """
    return engines.get(name)


def ocr_bytes(data: bytes, engine: str = DEFAULT_ENGINE, ref: str = "image") -> OcrResult:
    """OCR one image without any cache.

    >>> ocr_bytes(open("shot.png", "rb").read()).text()  # doctest: +SKIP
    'Hello referee'
    """
    return run_engine(get_engine(engine), data, ref)


def cache_key(engine: OcrEngine, data: bytes) -> str:
    """The cache key of one image under one engine configuration: `<engine cache id>:<sha256>`."""
    return f"{engine.cache_id}:{sha256_bytes(data)}"


def ocr_cached(data: bytes, engine: str, cached: Callable[[str, str, Callable[[], Any]], Any],
               ref: str = "image") -> OcrResult:
    """OCR through a cache such as `EvidenceView.cached`; a hit never calls the engine.

    Only readable images reach the cache: undecodable bytes raise EvidenceError (from inside `compute`,
    so nothing is stored) every time. A hit neither decodes nor OCRs: the bytes were read before.

    >>> store = {}
    >>> def cached(ns, key, compute): return store.setdefault(key, compute()) if key not in store else store[key]
    >>> ocr_cached(b"garbage", "tesseract", cached)
    Traceback (most recent call last):
    ...
    referee.errors.EvidenceError: evidence 'image' is not a readable image (cannot identify image file); save a PNG ...
    """
    eng = get_engine(engine)
    raw = cached("ocr", cache_key(eng, data), lambda: run_engine(eng, data, ref).to_dict())
    return OcrResult.from_dict(raw)
