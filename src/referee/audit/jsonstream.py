"""Stream JSON values out of a file in bounded memory: JSONL, concatenated/pretty JSON, or one big array.

How it reads. The file is decoded chunk by chunk into a sliding window and each record (an
element of a top-level array, else each top-level value) is parsed where it lies by the C decoder
(`json.JSONDecoder.raw_decode`), so the normal path runs at `json.loads` speed and memory is a
chunk or two plus the largest record, whatever the file size. A record cut by the window's edge
is told apart from a broken one by where the decoder stopped: only a stop in the last few
characters of the window (or an unterminated string) means "read on".

A broken record costs that record, not the rest of the file: it is yielded once, with `error` and
the line it starts on, and reading resumes at the next record that parses:

* records that start their own lines at one indentation (JSONL, an array with one element per
  line, pretty-printed records; learnt from the good records): at the next such line. A record
  that never closes (a truncated write) ends there too, as soon as that line is read. Each such
  line that does not parse is an error of its own; other text goes with the error before it;
* records on one long line: where the broken record's brackets balance again (string-aware) when
  a good record follows; otherwise at the next `{` (or `[`) after its start that parses, is
  followed by `,` or `]` and shares a key with the last good record (or the broken one's first
  key). A record cut inside a string can take its neighbour's start with it;
* a record that would need more than `max(4 chunks, 4 x the largest record so far)` of text in
  memory is checked by a bracket scan that keeps no text, then re-read from its start when it
  closes (it is just large), so even a broken record that swallows the rest of the file (one cut
  inside a list, on one long line) keeps memory flat; that costs one more pass over the rest.

A record nested deeper than `MAX_DEPTH` levels is a broken record too (one error, never a
RecursionError): nothing downstream has to walk a tree that deep. A parsed record's containers are
counted level by level (`nested_deeper`); a text not parsed yet is measured by its brackets (`too_deep`).

Separators are lenient: a missing, doubled or trailing comma between records costs nothing, and
arrays written one after another read as one. A file whose first line is a whole array with
another value after it is a sequence of values (JSONL of message lists), not one array.
"""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from pydantic_core import from_json as _from_json

from referee.jsondepth import MAX_DEPTH, loads, nested_deeper, too_deep  # noqa: F401 (re-export)
from referee.errors import TraceError
from referee.fsutil import open_regular

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
    """The value that buf[start:nl] holds whole (a JSONL line), parsed by pydantic-core, and where it ends;
    (_NONE, 0) when the line is anything else. pydantic-core parses about twice as fast as `json`, and to
    the same value wherever it accepts the text (numbers, escapes, repeated keys, NaN); it refuses what
    `json` alone accepts (a lone surrogate escape, nesting past 200), which the scan then reads as before."""
    piece = buf[start:nl]
    try:
        return _from_json(piece), start + len(piece.rstrip(" \t\r"))
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


def iter_json_values(path: Path, *, chunk: int = CHUNK) -> Iterator[JsonValue]:
    """Yield the records of a JSON file: elements of a top-level array, else each top-level value.

    A record that does not parse is yielded once with `error` (and its first line) and reading
    resumes at the next record (see the module's docstring); memory stays bounded by the largest
    record, never the file.

    >>> import tempfile, pathlib; p = pathlib.Path(tempfile.mkdtemp()) / "a.json"
    >>> _ = p.write_text('[{"a": 1},\\n {"a": 2}]')
    >>> [(v.line, v.value) for v in iter_json_values(p)]
    [(1, {'a': 1}), (2, {'a': 2})]
    >>> _ = p.write_text('[{"a": 1},\\n {"a": 2,, "b": [1]},\\n {"a": 3}]')
    >>> [(v.line, v.value, v.error is not None) for v in iter_json_values(p)]
    [(1, {'a': 1}, False), (2, None, True), (3, {'a': 3}, False)]
    """
    # a regular file only: a FIFO or a device given as a trace file is one line naming it, never a wait
    with open_regular(path, error=TraceError) as raw:
        yield from _Reader(raw, max(int(chunk), 1024)).run()


def iter_json_slice(data: bytes, *, first_line: int, at_start: bool, chunk: int = CHUNK) -> Iterator[JsonValue]:
    """`iter_json_values` of some whole lines of a file (`data`, in memory), numbered from `first_line`;
    `at_start`: the slice is the file's beginning (where a byte order mark is dropped).

    >>> [(v.line, v.value) for v in iter_json_slice(b'{"a": 1}\\n\\n{"a": 2}\\n', first_line=7, at_start=False)]
    [(7, {'a': 1}), (9, {'a': 2})]
    """
    import io

    yield from _Reader(io.BytesIO(data), max(int(chunk), 1024), first_line=first_line, sig=at_start).run()


class _Window:
    """The decoded text of a binary file: `buf[i]` is the file's character `base + i`; can seek back."""

    def __init__(self, raw: BinaryIO, chunk: int, *, sig: bool = True) -> None:
        self.raw, self.chunk = raw, chunk
        # a byte order mark is dropped at a file's start only (`sig`), not at the start of a slice of it
        self.dec = codecs.getincrementaldecoder("utf-8-sig" if sig else "utf-8")(errors="replace")
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


class _Reader:
    def __init__(self, raw: BinaryIO, chunk: int, *, first_line: int = 1, sig: bool = True) -> None:
        self.w = _Window(raw, chunk, sig=sig)
        self.chunk = chunk
        self.pos, self.line = 0, first_line  # cursor in w.buf and the line it is on
        self.array = False
        self.ended = False
        self.guessing = False  # a record was found by guessing on one long line
        self.largest = 0
        self.ref: _Layout | None = None  # layout of the last good record (what a broken one is resynced by)
        self.ref_value: Any = None  # and that record
        self.layouts: dict[tuple[str | None, str], _Layout] = {}

    # -- cursor and window

    def _goto(self, i: int) -> None:
        self.line += self.w.buf.count("\n", self.pos, i)
        self.pos = i

    def _compact(self, least: int | None = None) -> int:
        """Drop the text before the cursor once it is over `least` (a chunk); return how much was dropped."""
        d = self.pos
        if d <= (self.chunk if least is None else least):
            return 0
        self.w.drop(d)
        self.pos = 0
        return d

    def _skip(self, pattern: re.Pattern[str]) -> str:
        """Move the cursor past `pattern`; the next character, or "" at the end of the file."""
        w = self.w
        while True:
            j = _end(pattern, w.buf, self.pos)
            self._goto(j)
            if j < len(w.buf):
                return w.buf[j]
            self._compact()
            if not w.grow():
                return ""

    def _limit(self) -> int:
        return max(4 * self.chunk, 4 * self.largest)

    # -- records

    def run(self) -> Iterator[JsonValue]:
        self.w.grow()
        c = self._skip(_WS)
        if not c:
            return
        if c == "[" and not self._values_follow():
            self.array = True
            self._goto(self.pos + 1)
        while not self.ended:
            yield from self._fast()
            yield from self._step()

    def _values_follow(self) -> bool:
        # a first line that is a whole `[...]`, followed by another value: a sequence of values (JSONL of lists)
        buf = self.w.buf
        nl = buf.find("\n", self.pos)
        if nl < 0:
            return False
        try:
            _, end = _DECODE(buf[self.pos:nl])
        except RecursionError:  # too deep to decode, but its brackets may still close on the line
            st, stop = _scan(buf[:nl], self.pos, [], self.pos)
            if st != "end":
                return False
            end = stop - self.pos
        except ValueError:
            return False
        j = _end(_WS, buf, self.pos + end)
        return j > nl and j < len(buf) and buf[j] in "[{"

    def _step(self) -> Iterator[JsonValue]:
        """One record (or the array's end) by the general path: whatever `_fast` leaves."""
        self._compact(len(self.w.buf) // 2)  # mostly at the window's end: little is left to copy
        sep_start = self.pos
        c = self._skip(_SEP)
        if not c:
            self.ended = True
            if self.array:
                yield JsonValue(line=self.line,
                                error="invalid JSON: the file ends inside the top-level array (no closing ']')")
            return
        if self.array and c == "]":
            self._goto(self.pos + 1)
            c = self._skip(_WS)
            if not c:
                self.ended = True
                return
            if c == "[":  # arrays one after another read as one
                self._goto(self.pos + 1)
                return
            start = self.pos
            yield from self._recover(start, self.line, "invalid JSON: unexpected content after the top-level "
                                     "array's closing ']'", start, self._layout(start, start))
            return
        start, line = self.pos, self.line
        lay = self._layout(sep_start, start)
        ref = self.ref
        if lay.lead is None and ref is not None and ref.state > 0 and ref.opener and lay.opener != ref.opener:
            # records start lines with `{` (or `[`): other text after one on its line is junk
            yield from self._recover(start, line, f"invalid JSON: unexpected text after a record at line {line}",
                                     start, lay)
            return
        kind, a, b = self._decode(start, lay, candidate=False)
        if kind == "ok" and type(a) is str and self._peek_at(b)[1] == ":":
            # a key: the record's opening brace is missing
            yield from self._recover(start, line, f"invalid JSON: a key where a record should start at line {line}",
                                     start, lay)
        elif kind == "ok":
            self._good(lay, a, start, b, trusted=not self.guessing)
            yield self._checked(line, a, start, b)
            self._goto(b)
        elif kind == "probe":
            yield from self._probe(start, line, lay)
        elif kind == "deep":  # well formed, maybe, but too deep to decode: skip it by its brackets
            msg = f"invalid JSON: {b} at line {line}"
            end = self._close(start)
            if end is None:
                yield from self._recover(start, line, msg, a, lay)
            else:
                yield JsonValue(line=line, error=msg)
                self._goto(end)
        elif kind == "sibling":
            yield from self._recover(start, line, "invalid JSON: value never closed", a, lay, search=a)
        else:
            yield from self._recover(start, line, self._message(start, line, a, b), a, lay)

    def _fast(self) -> Iterator[JsonValue]:
        """The common case, inlined: good records that lie whole in the window, until anything else."""
        w, chunk = self.w, self.chunk
        buf, pos, line = w.buf, self.pos, self.line
        ref, ref_value, largest = self.ref, self.ref_value, self.largest
        if ref is None or not ref.opener:
            return
        opener = ref.opener
        trusted = not self.guessing
        sep, scan, count = _SEP.match, _SCAN, buf.count
        end_ok = len(buf) - _MARGIN
        gap, gap_nl, lay = None, 0, ref  # the text between records: the same as last time means the same layout
        jit = True
        try:
            while True:
                j = sep(buf, pos).end()  # type: ignore[union-attr]  # _SEP matches the empty string: never None
                if j >= end_ok or buf[j] != opener:
                    return  # the window's end, the array's, or a record that does not start like the last
                if gap is None or j - pos != len(gap) or not buf.startswith(gap, pos):
                    if w.base + pos == 0:
                        return
                    lay = self._layout(pos, j)
                    gap = buf[pos:j]
                    gap_nl = gap.count("\n")
                    needle = lay.needle if 0 <= lay.state < _CHECKS else None
                value = _NONE
                if jit and gap_nl and (nl := buf.find("\n", j, end_ok)) > 0:
                    value, end = _whole_line(buf, j, nl)
                    jit = value is not _NONE  # a layout whose lines hold more than one value: scan it
                if value is _NONE:
                    try:
                        value, end = scan(buf, j)
                    except (StopIteration, ValueError, RecursionError):
                        return
                if end >= end_ok or (count("[", j, end) + count("{", j, end) > MAX_DEPTH and nested_deeper(value)):
                    return  # the window's edge, or a record too deep: the general path says so
                k = count("\n", j, end)
                if needle is not None:
                    if k and buf.find(needle, j, end) >= 0:
                        lay.state = -1  # a record holds a line that looks like a record's start
                        needle = None
                    else:
                        lay.state += 1
                        if lay.state >= _CHECKS:
                            needle = None
                if end - j > largest:
                    largest = end - j
                if trusted:
                    ref, ref_value = lay, value
                line += gap_nl
                yield JsonValue(line, value)
                line += k
                pos = end
                if pos > chunk:
                    self.pos = pos
                    self._compact()
                    buf, pos = w.buf, self.pos
                    count = buf.count
                    end_ok = len(buf) - _MARGIN
        finally:
            self.pos, self.line = pos, line
            self.ref, self.ref_value, self.largest = ref, ref_value, largest

    def _layout(self, sep_start: int, start: int) -> _Layout:
        buf = self.w.buf
        opener = buf[start] if buf[start] in "{[" else ""
        nl = buf.rfind("\n", sep_start, start)
        if nl >= 0:
            lead: str | None = buf[nl + 1:start]
        elif self.w.base + sep_start == 0:
            lead = buf[:start]  # the file's first line
        else:
            lead = None
        if lead is None or not lead.strip(" \t\r"):
            return self._layout_for(lead, opener)
        lay = self._layout_for(None, opener)  # a comma or other text before it on its line
        if nl >= 0:
            self.layouts[(lead, opener)] = lay  # as _fast looks it up
        return lay

    def _layout_for(self, lead: str | None, opener: str) -> _Layout:
        lay = self.layouts.get((lead, opener))
        if lay is None:
            if len(self.layouts) > 64:
                self.layouts.clear()
            lay = self.layouts[(lead, opener)] = _Layout(lead, opener)
        return lay

    def _good(self, lay: _Layout, value: Any, start: int, end: int, trusted: bool = True) -> None:
        if end - start > self.largest:
            self.largest = end - start
        if 0 <= lay.state < _CHECKS:
            if lay.opener and self.w.buf.find(lay.needle, start, end) >= 0:
                lay.state = -1  # a record holds a line that looks like a record's start: layout not usable
            else:
                lay.state += 1
        if trusted and (lay.opener or self.ref is None or not self.ref.opener):
            self.ref, self.ref_value = lay, value  # a scalar never replaces a record

    def _checked(self, line: int, value: Any, start: int, end: int) -> JsonValue:
        """A record that parsed at buf[start:end]: its value, or an error when it nests too deep."""
        if nested_deeper(value):
            return JsonValue(line=line, error=f"invalid JSON: nested deeper than {MAX_DEPTH} levels at line {line}")
        return JsonValue(line=line, value=value)

    def _message(self, start: int, line: int, err: int, msg: str) -> str:
        buf = self.w.buf
        if self.w.eof and err >= len(buf) - 1:
            return "invalid JSON: the file ends inside this value"
        return f"invalid JSON: {msg} at line {line + buf.count(chr(10), start, err)}"

    def _decode(self, start: int, lay: _Layout, candidate: bool) -> tuple[str, Any, Any]:
        """("ok", value, end) | ("bad", error index, message) | ("sibling", next record, _) | ("probe", _, _)
        | ("deep", _, message): too deep to decode (`candidate` says "bad" instead)."""
        w = self.w
        seen = start + 1
        while True:
            buf = w.buf
            try:
                value, end = _DECODE(buf, start)
            except RecursionError:  # nested deeper than Python decodes: this record is lost, not the file
                return ("bad" if candidate else "deep"), start + 1, f"nested deeper than {MAX_DEPTH} levels"
            except json.JSONDecodeError as exc:
                if w.eof or (exc.pos < len(buf) - _MARGIN and not exc.msg.startswith("Unterminated string")):
                    return "bad", exc.pos, exc.msg
                # cut by the window's edge, or a record that never closes: read on, unless it runs into the next record
                if lay.state > 0 or (candidate and lay.state == 0):
                    q = self._sibling(seen, lay)
                    if q >= 0:
                        return "sibling", q, None
                    seen = max(seen, len(buf) - len(lay.needle))
                if 2 * (len(buf) - start) > self._limit():  # reading on would double it past the limit
                    if candidate:
                        return "bad", len(buf), "too long"
                    return "probe", None, None
                w.grow(len(buf) - start)
                continue
            if not w.eof and end > len(buf) - _MARGIN and type(value) in (int, float):
                w.grow()  # a number may go on past the edge
                continue
            return "ok", value, end

    def _sibling(self, i: int, lay: _Layout) -> int:
        """The first line-layout record start at or after buf[i] in the window, else -1."""
        buf, needle = self.w.buf, lay.needle
        off = len(needle) - 1 if lay.opener else len(needle)
        j = buf.find(needle, max(i - off, 0))
        while j >= 0:
            p = j + off
            if lay.opener or p >= len(buf) or buf[p] not in " \t\r\n":
                return p
            j = buf.find(needle, j + 1)
        return -1

    def _recover(self, start: int, line: int, msg: str, err: int, own: _Layout,
                 search: int | None = None) -> Iterator[JsonValue]:
        """The record at buf[start] is broken (first error at buf[err]): yield one error, resume at the next record.

        `search`: where a line-layout search for the next record begins (default: after `start`).
        """
        lay, keys = self._pick(start, own)
        if lay.lead is None:  # one long line: where its brackets balance again, if what follows reads on
            end = self._bad_end(start, keys)
            if end is not None:
                # unless a record starts inside that span (a cut string made two records look like one)
                yield from self._resync(line, msg, start + 1, lay, keys, stop=end)
                return
            search = None
        yield from self._resync(line, msg, start + 1 if search is None else search, lay, keys)

    def _pick(self, start: int, own: _Layout) -> tuple[_Layout, set[str] | None]:
        """How to find the record after a broken one at buf[start]: by line, else by '{' and shared keys."""
        if own.state >= 0 and own.opener:
            return own, None
        if self.ref is not None:
            if self.ref.state >= 0:
                return self.ref, None
        else:  # the first record: the least indented line in sight that starts with '{' or '['
            leads = [(len(m.group(1)), m.group(1), m.group(2)) for m in _LINE_OPENER.finditer(self.w.buf, start)
                     if not own.opener or m.group(2) == own.opener]
            if leads:
                _, lead, opener = min(leads)
                return self._layout_for(lead, opener), None
        if own.state >= 0:
            return own, None
        opener = self.ref.opener if self.ref is not None else own.opener
        return _Layout(None, opener), self._keys(start)

    def _bad_end(self, start: int, keys: set[str] | None) -> int | None:
        """Where a broken record on one long line ends: its brackets balance and a good record (or the end) follows."""
        w = self.w
        j = self._close(start)
        if j is None:
            return None
        if not self.array:
            return j
        k, c = self._peek_at(j)
        if c == ",":
            k = _end(_SEP, w.buf, k)
            k, c = self._peek_at(k)
            if c in ("", "]"):
                return j if self._follows(k) or c == "" else None
            kind, v, e = self._decode(k, _Layout(None, c if c in "{[" else ""), candidate=True)
            return j if kind == "ok" and _shares_key(v, keys) and self._follows(e) else None
        return j if self._follows(j) else None

    def _close(self, start: int) -> int | None:
        """Where the value at buf[start] closes, by a string-aware bracket scan (reading on); None if it
        cannot be JSON or would need more than the limit in memory."""
        w, i = self.w, start
        stack: list[str] = []
        while True:
            st, j = _scan(w.buf, i, stack, start)
            if st == "end":
                return j
            if st == "bad" or 2 * (len(w.buf) - start) > self._limit() or not w.grow(len(w.buf) - start):
                return None
            i = j

    def _peek_at(self, i: int) -> tuple[int, str]:
        """The first non-blank character from buf[i] on and where it is; ("", end of window) at EOF."""
        w = self.w
        while True:
            j = _end(_WS, w.buf, i)
            if j < len(w.buf):
                return j, w.buf[j]
            if not w.grow():
                return j, ""

    def _follows(self, end: int) -> bool:
        """In an array, may a record end at buf[end]? A ',' follows, or the array's last ']', or the file ends."""
        j, c = self._peek_at(end)
        if not self.array:
            return c != ":"
        if c == "]":
            c = self._peek_at(j + 1)[1]
            return c in ("", "[")
        return c in ("", ",")

    def _keys(self, start: int) -> set[str] | None:
        """Keys a record found on one long line must share: the previous record's, else the broken one's first."""
        if self.ref is not None:
            v = self.ref_value
            return set(v) if isinstance(v, dict) and v else None
        m = _KEY.search(self.w.buf, start, start + 512)
        try:
            return {json.loads(m.group(1))} if m else None
        except ValueError:
            return None

    def _resync(self, line: int, msg: str, i: int, lay: _Layout, keys: set[str] | None,
                stop: int | None = None) -> Iterator[JsonValue]:
        """Skip to the first record at or after buf[i] that parses; yield the error, then that record.

        With `stop`, look only before buf[stop] and resume there when nothing is found.
        """
        while True:
            if stop is None:
                c = self._next(i, lay)
            else:
                c = self.w.buf.find(lay.opener, i, stop) if lay.opener else -1
            if stop is not None and c < 0:
                self._goto(stop)
                yield JsonValue(line=line, error=msg)
                return
            if c < 0:
                self._goto(len(self.w.buf))
                self.ended = True
                yield JsonValue(line=line, error=f"{msg}; nothing after it could be read")
                return
            self._goto(c)
            d = self._compact()
            c -= d
            if stop is not None:
                stop -= d
            kind, a, b = self._decode(c, lay, candidate=True)
            if lay.lead is not None:  # a line that starts like a record: it is the next record, good or bad
                if kind == "ok" and (type(a) is not str or self._follows(b)):
                    yield JsonValue(line=line, error=f"{msg}; skipped to line {self.line}")
                    self._good(lay, a, c, b)
                    yield self._checked(self.line, a, c, b)
                    self._goto(b)
                    return
                yield JsonValue(line=line, error=f"{msg}; skipped to line {self.line}")
                line = self.line
                if kind == "bad":
                    msg = self._message(c, line, a, b)
                elif kind == "sibling":
                    msg = "invalid JSON: value never closed"
                else:
                    msg = f"invalid JSON: a key where a record should start at line {line}"
            elif kind == "ok" and _shares_key(a, keys) and self._follows(b):
                yield JsonValue(line=line, error=f"{msg}; skipped to line {self.line}")
                self.guessing = True  # a guess: records after it do not become the reference
                self._good(lay, a, c, b, trusted=False)
                yield self._checked(self.line, a, c, b)
                self._goto(b)
                return
            i = a if kind == "sibling" else c + 1

    def _next(self, i: int, lay: _Layout) -> int:
        """The next place a record may start at or after buf[i], reading on (dropping what is passed); -1 at EOF."""
        w = self.w
        while True:
            buf = w.buf
            keep = 0
            if lay.lead is not None:
                c = self._sibling(i, lay)
                keep = len(lay.needle)
            elif lay.opener:
                c = buf.find(lay.opener, i)
            else:
                c = buf.find(",", i)
                if c >= 0:
                    c = _end(_WS, buf, c + 1)
            if c >= 0:
                return c
            if w.eof:
                return -1
            to = max(self.pos, len(buf) - keep)
            self._goto(to)
            i = max(i, to) - self._compact()
            w.grow()

    def _probe(self, start: int, line: int, lay: _Layout) -> Iterator[JsonValue]:
        """A record too long to hold blindly: find its end with a scan that keeps no text, then re-read it."""
        w = self.w
        s_abs = w.base + start
        keys = self._keys(start)
        stack: list[str] = []
        i, lo = start, start
        while True:
            st, j = _scan(w.buf, i, stack, lo)
            if st != "more":
                break
            if w.eof:  # a scalar (a long string) may end with the file; anything else is cut
                st = "end" if not stack and j == len(w.buf) and j > lo else "bad"
                break
            w.drop(j, keep_marks=True)
            w.grow(len(w.buf))
            i, lo = 0, -1
        e_abs = w.base + j if st == "end" else None
        w.seek(s_abs)
        self.pos, self.line = 0, line
        if e_abs is None:  # it never closes: resume inside it, at the next record
            resync, _ = self._pick(0, lay)
            yield from self._resync(line, "invalid JSON: value never closed", 1, resync,
                                    None if resync.lead is not None else keys)
            return
        n = e_abs - s_abs
        while len(w.buf) < n and w.grow(n - len(w.buf)):
            pass
        try:
            value, end = _DECODE(w.buf, 0)
        except RecursionError:
            yield JsonValue(line=line, error=f"invalid JSON: nested deeper than {MAX_DEPTH} levels at line {line}")
            self._goto(min(n, len(w.buf)))
            return
        except json.JSONDecodeError as exc:
            yield JsonValue(line=line, error=self._message(0, line, exc.pos, exc.msg))
            self._goto(min(n, len(w.buf)))
            return
        self._good(lay, value, 0, end)
        yield self._checked(line, value, 0, end)
        self._goto(end)
