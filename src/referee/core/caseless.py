"""Case-insensitive patterns searched fast: on ASCII text, a lower-cased copy with a case-sensitive twin.

For ASCII text, `re.I` is exactly equality after lower-casing, so the twin finds the same matches at the
same spans, about twice as fast; any other text is searched with `re.I`. Shared by the claim reader's
cues and the atoms of a text (which the extractors also use), so it belongs to neither. Pure.
"""

from __future__ import annotations

import re
from functools import cached_property, lru_cache
from typing import Iterator


def _lower_literals(pattern: str) -> str:
    """A pattern's letters in lower case, escapes (`\\W`, `\\S`, `\\b`) and class ranges kept as they mean."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        out.append(c.lower() if c.isascii() else c)
        i += 1
    return "".join(out)


@lru_cache(maxsize=16)  # one report is searched by a dozen cues: lowered once
def _lowered(text: str) -> str | None:
    return text.lower() if text.isascii() else None


class _Found:
    """A match made on the lowered copy, read back from the text itself (same spans: ASCII keeps its length)."""

    __slots__ = ("_m", "_text")

    def __init__(self, m: re.Match[str], text: str) -> None:
        self._m, self._text = m, text

    def group(self, n: int = 0) -> str | None:
        a, b = self._m.span(n)
        return None if a < 0 else self._text[a:b]

    def start(self, n: int = 0) -> int:
        return self._m.start(n)

    def end(self, n: int = 0) -> int:
        return self._m.end(n)

    def span(self, n: int = 0) -> tuple[int, int]:
        return self._m.span(n)


class Cue:
    """A case-insensitive cue pattern. On ASCII text (almost every report) it searches a lower-cased copy
    with a case-sensitive twin of the pattern: for ASCII, re.I is exactly lower-case equality, so the
    matches are the same, found about twice as fast; any other text is searched with re.I.

    >>> m = Cue(r"\\bDone\\b").search("All DONE now"); m.group(0), m.span()
    ('DONE', (4, 8))
    """

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self._flags = flags

    # compiled on first use, not at import: a `referee` command that reads no report compiles no cue, and
    # the re.I pattern is compiled only for a text past ASCII (cached_property: later reads are plain attributes)
    @cached_property
    def _i(self) -> re.Pattern[str]:
        return re.compile(self.pattern, self._flags | re.I)

    @cached_property
    def _low(self) -> re.Pattern[str]:
        return re.compile(_lower_literals(self.pattern), self._flags & ~re.I)

    def regexes(self) -> tuple[re.Pattern[str], re.Pattern[str]]:
        """The two patterns it searches with: re.I (text past ASCII) and the lowered twin (ASCII text).

        >>> [r.pattern for r in Cue("Done now").regexes()]
        ['Done now', 'done now']
        """
        return self._i, self._low

    def search(self, text: str) -> re.Match[str] | _Found | None:
        return self._first(text, "search")

    def match(self, text: str) -> re.Match[str] | _Found | None:
        return self._first(text, "match")

    def _first(self, text: str, how: str) -> re.Match[str] | _Found | None:
        lowered = _lowered(text)
        if lowered is None:
            got: re.Match[str] | None = self._i.search(text) if how == "search" else self._i.match(text)
            return got
        m = getattr(self._low, how)(lowered)
        return None if m is None else _Found(m, text)

    def finditer(self, text: str) -> Iterator[re.Match[str] | _Found]:
        lowered = _lowered(text)
        if lowered is None:
            yield from self._i.finditer(text)
            return
        for m in self._low.finditer(lowered):
            yield _Found(m, text)
