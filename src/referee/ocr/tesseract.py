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
    """Tesseract 4/5 (LSTM), English, automatic page segmentation, one thread.

    Screenshots are upscaled `scale` times first: browser text at 1x is small for Tesseract, and 2x
    reads markedly better. OpenMP is limited to one thread: on a loaded machine it is about 3x faster.
    """

    name = "tesseract"

    def __init__(self, lang: str = "eng", psm: int = 3, scale: float = 2.0, timeout_s: float = 120.0) -> None:
        self.lang, self.psm, self.scale, self.timeout_s = lang, psm, scale, timeout_s

    @property
    def cache_id(self) -> str:
        return f"tesseract-{tesseract_version()}-{self.lang}-psm{self.psm}-x{self.scale:g}"

    def available(self) -> str | None:
        if shutil.which("tesseract") is None:
            return "the tesseract program is not installed; install with: apt-get install tesseract-ocr tesseract-ocr-eng"
        return None

    def read(self, img) -> list[OcrLine]:
        Image = require("PIL.Image", "ocr")
        problem = self.available()
        if problem:
            raise RuntimeError(problem)
        gray = img.convert("L")
        if self.scale != 1:
            gray = gray.resize((round(gray.width * self.scale), round(gray.height * self.scale)), Image.LANCZOS)
        buf = io.BytesIO()
        gray.save(buf, format="PNG", compress_level=1)
        env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
        cmd = [shutil.which("tesseract") or "tesseract", "stdin", "stdout", "-l", self.lang, "--psm", str(self.psm),
               "--dpi", str(round(96 * self.scale)), "tsv"]
        proc = subprocess.run(cmd, input=buf.getvalue(), capture_output=True, env=env, timeout=self.timeout_s)
        if proc.returncode != 0:
            raise RuntimeError(f"tesseract failed ({proc.returncode}): {proc.stderr.decode(errors='replace')[-300:]}")
        return _lines(proc.stdout.decode("utf-8", errors="replace"), self.scale or 1)


def _lines(tsv: str, scale: float) -> list[OcrLine]:
    """Group Tesseract's TSV words into lines (block, paragraph, line), boxes in original pixels.

    >>> t = "level\\tpage_num\\tblock_num\\tpar_num\\tline_num\\tword_num\\tleft\\ttop\\twidth\\theight\\tconf\\ttext\\n"
    >>> t += "5\\t1\\t1\\t1\\t1\\t1\\t10\\t20\\t30\\t10\\t96\\tHello\\n5\\t1\\t1\\t1\\t1\\t2\\t50\\t20\\t30\\t10\\t90\\tthere\\n"
    >>> _lines(t, 2.0)
    [OcrLine(text='Hello there', confidence=0.93, box=(5, 10, 35, 5))]
    """
    groups: dict[tuple[str, str, str], list[dict[str, str]]] = {}
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        word = (row.get("text") or "").strip()
        try:
            conf = float(row.get("conf") or -1)
        except ValueError:
            continue
        if not word or conf < 0:
            continue
        groups.setdefault((row["block_num"], row["par_num"], row["line_num"]), []).append(row)
    lines: list[OcrLine] = []
    for rows in groups.values():
        x0 = min(int(r["left"]) for r in rows)
        y0 = min(int(r["top"]) for r in rows)
        x1 = max(int(r["left"]) + int(r["width"]) for r in rows)
        y1 = max(int(r["top"]) + int(r["height"]) for r in rows)
        conf = sum(float(r["conf"]) for r in rows) / len(rows) / 100.0
        box = (round(x0 / scale), round(y0 / scale), round((x1 - x0) / scale), round((y1 - y0) / scale))
        lines.append(OcrLine(" ".join(r["text"].strip() for r in rows), round(conf, 4), box))
    lines.sort(key=lambda ln: (ln.box[1], ln.box[0]))
    return lines
