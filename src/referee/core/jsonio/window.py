"""The JSON stream reader's parts: the decoded window on a file and a string-aware bracket scan.

`referee.core.jsonio.values` says how records are read and recovered; `reader` reads them with these.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import Any, BinaryIO

from referee.core.jsonio.undecodable import ERRORS

CHUNK = 1 << 20  # 1 MiB reads: memory is a chunk or two plus the largest single record


@dataclass(frozen=True)
class JsonValue:
    """One top-level value (or array element) and the 1-based line it starts on; `error` if it did not parse."""

    line: int
    value: Any = None
    error: str | None = None


# what a bracket scan passes over: text and complete strings (a string cut by a raw newline or the window's end
# stops it), inside a record, or at its top level where a comma ends a broken scalar
_SKIP_IN = re.compile(r'(?:[^"\[\]{}]++|"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+")*+')  # possessive: no backtracking
_SKIP_TOP = re.compile(r'(?:[^"\[\]{},]++|"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+")*+')


def match_end(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """Where a pattern that always matches (it may match nothing) stops, from `pos`."""
    m = pattern.match(text, pos)
    assert m is not None  # every pattern given here matches the empty string
    return m.end()


_CLOSE = {"[": "]", "{": "}"}


class Window:
    """The decoded text of a binary file: `buf[i]` is the file's character `base + i`; can seek back."""

    def __init__(self, raw: BinaryIO, chunk: int, *, sig: bool = True) -> None:
        self.raw, self.chunk = raw, chunk
        # a byte order mark is dropped at a file's start only (`sig`), not at the start of a slice of it
        self.dec = codecs.getincrementaldecoder("utf-8-sig" if sig else "utf-8")(errors=ERRORS)
        self.buf, self.base, self.eof = "", 0, False
        # (character, byte offset, decoder state) at each read, to seek back to
        self.marks: list[tuple[int, int, tuple[bytes, int]]] = []

    def grow(self, n: int = 0) -> bool:
        """Append about max(n, chunk) more characters; False when the file has nothing more."""
        want = max(n, self.chunk)
        while not self.eof:
            self.marks.append((self.base + len(self.buf), self.raw.tell(), self.dec.getstate()))
            data = self.raw.read(want)
            self.eof = len(data) < want
            text = self.dec.decode(data, final=self.eof)
            if text:
                self.buf += text
                return True
        return False

    def drop(self, n: int, keep_marks: bool = False) -> None:
        self.buf = self.buf[n:]
        self.base += n
        if not keep_marks:
            k = 0
            while k + 1 < len(self.marks) and self.marks[k + 1][0] <= self.base:
                k += 1
            del self.marks[:k]

    def seek(self, at: int) -> None:
        """Restart the window at character `at` (which must not precede the oldest mark)."""
        k = max(i for i, m in enumerate(self.marks) if m[0] <= at)
        char, offset, state = self.marks[k]
        del self.marks[k:]
        self.raw.seek(offset)
        self.dec.setstate(state)
        self.buf, self.base, self.eof = "", char, False
        while self.base + len(self.buf) <= at and self.grow():
            pass
        self.drop(min(at - self.base, len(self.buf)), keep_marks=True)
        self.base = at


def scan_brackets(buf: str, i: int, stack: list[str], lo: int) -> tuple[str, int]:
    """Go on with a string-aware bracket scan of a record from buf[i] (`stack`: brackets still open).

    ("end", j): the record ends before buf[j]; ("bad", j): it cannot be JSON (a raw newline in a
    string, a mismatched bracket); ("more", j): the text ran out, go on from j with more of it.
    """
    n = len(buf)
    while True:
        i = match_end(_SKIP_IN if stack else _SKIP_TOP, buf, i)  # strings and plain text, in C
        if i >= n:
            return "more", n
        c = buf[i]
        if c == '"':  # a string that meets a raw newline (bad) or the end of the text (read on)
            return ("bad" if buf.find("\n", i) >= 0 else "more"), i
        if c == "[" or c == "{":
            stack.append(c)
        elif not stack:  # at depth 0 a comma or a closing bracket ends a broken scalar
            return ("end" if i > lo else "bad"), i
        elif _CLOSE[stack.pop()] != c:
            return "bad", i
        elif not stack:
            return "end", i + 1
        i += 1
