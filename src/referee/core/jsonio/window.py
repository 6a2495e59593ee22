"""The JSON stream reader's parts: the decoded window on a file, record layouts, and a string-aware bracket scan.

`referee.core.jsonio.values` says how records are read and recovered; `jsonreader` reads them with these.
"""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass
from typing import Any, BinaryIO

from referee.core.jsonio.depth import parse_shallow
from referee.core.jsonio.undecodable import ERRORS

CHUNK = 1 << 20  # 1 MiB reads: memory is a chunk or two plus the largest single record


@dataclass(frozen=True)
class JsonValue:
    """One top-level value (or array element) and the 1-based line it starts on; `error` if it did not parse."""

    line: int
    value: Any = None
    error: str | None = None


_DECODE = json.JSONDecoder().raw_decode
# raw_decode without its Python frame: (value, end), StopIteration where no value starts
_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_CHECKS = 32  # good records a line layout is checked on before it is trusted
_MARGIN = 64  # a parse error this close to the window's end may be the edge, not the record
_NONE = object()


def _whole_line(buf: str, start: int, nl: int) -> tuple[Any, int]:
    """The value that buf[start:nl] holds whole (a JSONL line), parsed by pydantic-core and nested at most
    MAX_DEPTH levels (`jsondepth.parse_shallow`), and where it ends; (_NONE, 0) when the line is anything else.
    pydantic-core parses about twice as fast as `json`, and to the same value wherever it accepts the text
    (numbers, escapes, repeated keys, NaN); what it refuses and `json` alone accepts (a lone surrogate escape,
    a deeper value) the scan then reads as before."""
    piece = buf[start:nl]
    try:
        return parse_shallow(piece), start + len(piece.rstrip(" \t\r"))
    except ValueError:
        return _NONE, 0
_WS = re.compile(r"[ \t\r\n]*")
_LINE_OPENER = re.compile(r"\n([ \t]*)([\[{])")
_SEP = re.compile(r"[ \t\r\n,]*")
# what a bracket scan passes over: text and complete strings (a string cut by a raw newline or the window's end
# stops it), inside a record, or at its top level where a comma ends a broken scalar
_SKIP_IN = re.compile(r'(?:[^"\[\]{}]++|"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+")*+')  # possessive: no backtracking
_SKIP_TOP = re.compile(r'(?:[^"\[\]{},]++|"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+")*+')
def _end(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """Where a pattern that always matches (it may match nothing) stops, from `pos`."""
    m = pattern.match(text, pos)
    assert m is not None  # every pattern given here matches the empty string
    return m.end()


_KEY = re.compile(r'("[^"\\\n]*(?:\\.[^"\\\n]*)*")[ \t\r\n]*:')
_CLOSE = {"[": "]", "{": "}"}


class _Window:
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


class _Layout:
    """Where records start: on their own line after `lead` (line layout), or anywhere (`lead` None)."""

    __slots__ = ("lead", "opener", "needle", "state")

    def __init__(self, lead: str | None, opener: str) -> None:
        self.lead, self.opener = lead, opener  # opener: "{" or "[", "" for a scalar record
        self.needle = "" if lead is None else "\n" + lead + opener  # how a record's first line starts
        # -1: records cannot be found by line (one long line, or records hold such lines inside);
        # 0: line layout, not yet seen on a good record; n > 0: seen on n (checked up to _CHECKS)
        self.state = -1 if lead is None else 0


def _scan(buf: str, i: int, stack: list[str], lo: int) -> tuple[str, int]:
    """Go on with a string-aware bracket scan of a record from buf[i] (`stack`: brackets still open).

    ("end", j): the record ends before buf[j]; ("bad", j): it cannot be JSON (a raw newline in a
    string, a mismatched bracket); ("more", j): the text ran out, go on from j with more of it.
    """
    n = len(buf)
    while True:
        i = _end(_SKIP_IN if stack else _SKIP_TOP, buf, i)  # strings and plain text, in C
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


def _shares_key(value: Any, keys: set[str] | None) -> bool:
    return keys is None or (isinstance(value, dict) and not keys.isdisjoint(value))
