"""A second OCR engine: RapidOCR (PaddleOCR models on onnxruntime), using only the models its wheel bundles."""

from __future__ import annotations

import threading

from referee.errors import require
from referee.ocr.base import OcrEngine, OcrLine

_LOCK = threading.Lock()
_INSTANCE = None


def _rapid():
    """One RapidOCR instance per process: loading the three ONNX models takes about a second."""
    global _INSTANCE
    with _LOCK:
        if _INSTANCE is None:
            mod = require("rapidocr_onnxruntime", "ocr")
            # the det/rec models inside the wheel, no download; screenshots are upright, so no angle classifier
            _INSTANCE = mod.RapidOCR(use_cls=False)
        return _INSTANCE


class RapidOcrEngine(OcrEngine):
    """RapidOCR with its bundled PP-OCRv4 models; confidences are the recogniser's scores (0..1)."""

    name = "rapidocr"
    drops_spaces = True  # it often reads "View and edit" as "Viewandedit"

    @property
    def cache_id(self) -> str:
        try:
            from importlib.metadata import version

            return f"rapidocr-{version('rapidocr-onnxruntime')}-nocls"
        except Exception:
            return "rapidocr-nocls"

    def available(self) -> str | None:
        require("rapidocr_onnxruntime", "ocr")
        return None

    def read(self, img) -> list[OcrLine]:
        np = require("numpy", "ocr")
        engine = _rapid()
        arr = np.ascontiguousarray(np.asarray(img.convert("RGB"))[:, :, ::-1])  # RapidOCR expects OpenCV's BGR
        with _LOCK:  # the onnxruntime sessions are shared; keep one image at a time
            result, _elapsed = engine(arr)
        lines: list[OcrLine] = []
        for box, text, score in result or []:
            xs = [float(p[0]) for p in box]
            ys = [float(p[1]) for p in box]
            x0, y0 = min(xs), min(ys)
            lines.append(OcrLine(str(text).strip(), float(score),
                                 (round(x0), round(y0), round(max(xs) - x0), round(max(ys) - y0))))
        # reading order: rows (boxes whose tops lie within half a line), then left to right
        lines.sort(key=lambda ln: (ln.box[1], ln.box[0]))
        return [ln for ln in lines if ln.text]
