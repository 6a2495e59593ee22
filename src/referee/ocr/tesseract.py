"""The default OCR engine: Debian's Tesseract CLI (TSV output), words grouped into lines with confidences."""

from __future__ import annotations

import csv
import functools
import io
import os
import shutil
import subprocess

from referee.errors import require
from referee.ocr.base import OcrEngine, OcrLine


@functools.lru_cache(maxsize=1)
def tesseract_version() -> str:
    """The installed Tesseract's version, asked once per process (it is part of the cache key)."""
    exe = shutil.which("tesseract")
    if exe is None:
        return "missing"
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    first = (out.stdout or out.stderr).split()
    return first[1] if len(first) > 1 else "unknown"


class TesseractEngine(OcrEngine):
    """Tesseract 4/5 (LSTM), English, automatic page segmentation, one thread, two polarities.

    Screenshots are upscaled `scale` times first: browser text at 1x is small for Tesseract, and 2x
    reads markedly better. Tesseract reads light text on dark or coloured fills (buttons, badges)
    poorly, so with `invert` the image is read a second time inverted and each word kept from the
    pass that read it with more confidence. OpenMP is limited to one thread: on a loaded machine
    that is about 3x faster.
    """

    name = "tesseract"

    def __init__(self, lang: str = "eng", psm: int = 3, scale: float = 2.0, invert: bool = True,
                 timeout_s: float = 120.0) -> None:
        self.lang, self.psm, self.scale, self.invert, self.timeout_s = lang, psm, scale, invert, timeout_s

    @property
    def cache_id(self) -> str:
        inv = "-inv" if self.invert else ""
        return f"tesseract-{tesseract_version()}-{self.lang}-psm{self.psm}-x{self.scale:g}{inv}"

    def available(self) -> str | None:
        if shutil.which("tesseract") is None:
            return ("the tesseract program is not installed; "
                    "install with: apt-get install tesseract-ocr tesseract-ocr-eng")
        return None

    def _tsv(self, gray) -> str:
        buf = io.BytesIO()
        gray.save(buf, format="PNG", compress_level=1)
        env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
        cmd = [shutil.which("tesseract") or "tesseract", "stdin", "stdout", "-l", self.lang, "--psm", str(self.psm),
               "--dpi", str(round(96 * self.scale)), "tsv"]
        proc = subprocess.run(cmd, input=buf.getvalue(), capture_output=True, env=env, timeout=self.timeout_s)
        if proc.returncode != 0:
            raise RuntimeError(f"tesseract failed ({proc.returncode}): {proc.stderr.decode(errors='replace')[-300:]}")
        return proc.stdout.decode("utf-8", errors="replace")

    def read(self, img) -> list[OcrLine]:
        Image = require("PIL.Image", "ocr")
        ImageOps = require("PIL.ImageOps", "ocr")
        problem = self.available()
        if problem:
            raise RuntimeError(problem)
        gray = img.convert("L")
        if self.scale != 1:
            gray = gray.resize((round(gray.width * self.scale), round(gray.height * self.scale)), Image.LANCZOS)
        words = _words(self._tsv(gray), "n")
        if self.invert:
            words = merge_words(words, _words(self._tsv(ImageOps.invert(gray)), "i"))
        return group_lines(words, self.scale or 1)


Word = dict  # keys: text, conf (0..100), box (x0, y0, x1, y1), line (pass, block, par, line)


def _words(tsv: str, tag: str) -> list[Word]:
    """The recognised words of one Tesseract TSV output."""
    out: list[Word] = []
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        text = (row.get("text") or "").strip()
        try:
            conf = float(row.get("conf") or -1)
            x, y, w, h = (int(row[k]) for k in ("left", "top", "width", "height"))
        except (TypeError, ValueError, KeyError):
            continue
        if text and conf >= 0:
            out.append({"text": text, "conf": conf, "box": (x, y, x + w, y + h),
                        "line": (tag, row["block_num"], row["par_num"], row["line_num"])})
    return out


def _overlap(a: tuple, b: tuple) -> float:
    """Intersection over the smaller box's area."""
    ix = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    small = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1])) or 1
    return ix * iy / small


def merge_words(normal: list[Word], inverted: list[Word], floor: float = 60.0, margin: float = 15.0) -> list[Word]:
    """Keep the normal pass's words; the inverted pass adds words where it saw none, and replaces
    ones it read far more confidently (white text on a button). A replacement joins its rival's line.

    >>> n = [{"text": "pass", "conf": 96.0, "box": (0, 0, 30, 10), "line": ("n", 1, 1, 1)},
    ...      {"text": "(YENI", "conf": 20.0, "box": (40, 0, 90, 10), "line": ("n", 1, 1, 1)}]
    >>> i = [{"text": "OVERCLAIM", "conf": 95.0, "box": (42, 0, 100, 10), "line": ("i", 1, 1, 1)},
    ...      {"text": "ls", "conf": 30.0, "box": (110, 0, 120, 10), "line": ("i", 1, 1, 1)}]
    >>> [(w["text"], w["line"][0]) for w in merge_words(n, i)]
    [('pass', 'n'), ('OVERCLAIM', 'n')]
    """
    kept = list(normal)
    for w in inverted:
        if w["conf"] < floor:
            continue
        rivals = [k for k in kept if _overlap(k["box"], w["box"]) > 0.3]
        if not rivals:
            kept.append(w)
        elif all(r["conf"] + margin < w["conf"] for r in rivals):
            line = rivals[0]["line"]
            kept = [k for k in kept if not any(k is r for r in rivals)]
            kept.append({**w, "line": line})
    return kept


def group_lines(words: list[Word], scale: float) -> list[OcrLine]:
    """Words into lines in reading order, boxes in original pixels, confidence 0..1.

    >>> w = [{"text": "there", "conf": 90.0, "box": (50, 20, 80, 30), "line": ("n", 1, 1, 1)},
    ...      {"text": "Hello", "conf": 96.0, "box": (10, 20, 40, 30), "line": ("n", 1, 1, 1)}]
    >>> group_lines(w, 2.0)
    [OcrLine(text='Hello there', confidence=0.93, box=(5, 10, 35, 5))]
    """
    groups: dict[tuple, list[Word]] = {}
    for w in words:
        groups.setdefault(w["line"], []).append(w)
    lines: list[OcrLine] = []
    for ws in groups.values():
        ws.sort(key=lambda w: w["box"][0])
        x0, y0 = min(w["box"][0] for w in ws), min(w["box"][1] for w in ws)
        x1, y1 = max(w["box"][2] for w in ws), max(w["box"][3] for w in ws)
        conf = sum(w["conf"] for w in ws) / len(ws) / 100.0
        box = (round(x0 / scale), round(y0 / scale), round((x1 - x0) / scale), round((y1 - y0) / scale))
        lines.append(OcrLine(" ".join(w["text"] for w in ws), round(conf, 4), box))
    lines.sort(key=lambda ln: (ln.box[1], ln.box[0]))
    return lines
