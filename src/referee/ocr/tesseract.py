"""The default OCR engine: Debian's Tesseract through pytesseract, words grouped into lines with confidences."""

from __future__ import annotations

import functools
import shutil

from referee.errors import require
from referee.ocr.base import OcrEngine, OcrLine


@functools.lru_cache(maxsize=1)
def _tesseract_version() -> str:
    """The installed Tesseract's version, asked once per process (it is part of the cache key)."""
    try:
        pt = require("pytesseract", "ocr")
        return str(pt.get_tesseract_version()).split()[0]
    except Exception:
        return "unknown"


class TesseractEngine(OcrEngine):
    """Tesseract 4/5 (LSTM), English, automatic page segmentation.

    Screenshots are upscaled `scale` times first: browser text at 1x is small for Tesseract, and 2x
    reads markedly better (see docs/screens.md).
    """

    name = "tesseract"

    def __init__(self, lang: str = "eng", psm: int = 3, scale: float = 2.0) -> None:
        self.lang, self.psm, self.scale = lang, psm, scale

    @property
    def cache_id(self) -> str:
        return f"tesseract-{self._version()}-{self.lang}-psm{self.psm}-x{self.scale:g}"

    def _version(self) -> str:
        return _tesseract_version()

    def available(self) -> str | None:
        if shutil.which("tesseract") is None:
            return "the tesseract program is not installed; install with: apt-get install tesseract-ocr tesseract-ocr-eng"
        require("pytesseract", "ocr")
        return None

    def read(self, img) -> list[OcrLine]:
        pt = require("pytesseract", "ocr")
        Image = require("PIL.Image", "ocr")
        problem = self.available()
        if problem:
            raise RuntimeError(problem)
        gray = img.convert("L")
        if self.scale != 1:
            gray = gray.resize((round(gray.width * self.scale), round(gray.height * self.scale)), Image.LANCZOS)
        data = pt.image_to_data(gray, lang=self.lang, config=f"--psm {self.psm}", output_type=pt.Output.DICT)
        groups: dict[tuple[int, int, int], list[int]] = {}
        for i, word in enumerate(data["text"]):
            if not str(word).strip():
                continue
            try:
                conf = float(data["conf"][i])
            except (TypeError, ValueError):
                continue
            if conf < 0:
                continue
            key = (int(data["block_num"][i]), int(data["par_num"][i]), int(data["line_num"][i]))
            groups.setdefault(key, []).append(i)
        lines: list[OcrLine] = []
        s = self.scale or 1
        for idxs in groups.values():
            words = [str(data["text"][i]).strip() for i in idxs]
            confs = [float(data["conf"][i]) / 100.0 for i in idxs]
            x0 = min(int(data["left"][i]) for i in idxs)
            y0 = min(int(data["top"][i]) for i in idxs)
            x1 = max(int(data["left"][i]) + int(data["width"][i]) for i in idxs)
            y1 = max(int(data["top"][i]) + int(data["height"][i]) for i in idxs)
            box = (round(x0 / s), round(y0 / s), round((x1 - x0) / s), round((y1 - y0) / s))
            lines.append(OcrLine(" ".join(words), sum(confs) / len(confs), box))
        lines.sort(key=lambda ln: (ln.box[1], ln.box[0]))
        return lines
