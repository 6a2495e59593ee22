"""Text normalisation and matching for OCR and screen validators: case, whitespace, look-alike quotes."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

_TRANSLATE = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u2032": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2033": '"',
    "\u2013": "-", "\u2014": "-", "\u2212": "-", "\u00a0": " ",
})
_WS = re.compile(r"\s+")


def normalise(text: str, *, case_sensitive: bool = False) -> str:
    """Fold what OCR and rendering vary: Unicode form, case, curly quotes, dashes, runs of whitespace.

    >>> normalise("  Hello\\n\\t  WORLD \u2014 \u201cok\u201d ")
    'hello world - "ok"'
    >>> normalise("Hello  World", case_sensitive=True)
    'Hello World'
    """
    text = unicodedata.normalize("NFKC", text).translate(_TRANSLATE)
    text = _WS.sub(" ", text).strip()
    return text if case_sensitive else text.casefold()


@dataclass(frozen=True)
class Match:
    """Where a needle was found: the normalised line (or window of lines) that contains it."""

    line: str
    line_no: int


def find(needle: str, lines: list[str], *, case_sensitive: bool = False, ignore_spaces: bool = False) -> Match | None:
    """Find `needle` in one line, or across two or three consecutive lines (wrapped text).

    `ignore_spaces` drops all spaces first (RapidOCR often runs words together).

    >>> find("hello world", ["Say", "Hello", "World!"])
    Match(line='hello world!', line_no=2)
    >>> find("view and edit", ["ViewandeditSQL"], ignore_spaces=True)
    Match(line='viewandeditsql', line_no=1)
    >>> find("nope", ["Say hello"]) is None
    True
    """
    n = normalise(needle, case_sensitive=case_sensitive)
    norm = [normalise(ln, case_sensitive=case_sensitive) for ln in lines]
    if ignore_spaces:
        n = n.replace(" ", "")
        norm = [x.replace(" ", "") for x in norm]
    if not n:
        return None
    for i, ln in enumerate(norm):
        if n in ln:
            return Match(ln, i + 1)
    for width in (2, 3):
        for i in range(len(norm) - width + 1):
            window = " ".join(x for x in norm[i:i + width] if x)
            if n in window:
                # report only the lines the match touches, not the whole window
                while width > 1 and n in " ".join(x for x in norm[i + 1:i + width] if x):
                    i, width = i + 1, width - 1
                while width > 1 and n in " ".join(x for x in norm[i:i + width - 1] if x):
                    width -= 1
                return Match(" ".join(x for x in norm[i:i + width] if x), i + 1)
    return None


def excerpt(text: str, limit: int = 160) -> str:
    """Shorten text for a reason string.

    >>> excerpt("a" * 200, 10)
    'aaaaaaaaa…'
    """
    text = _WS.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"
