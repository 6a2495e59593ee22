"""The JSON stream reader: records parsed where they lie in the window by `json`'s C decoder (`raw_decode`),
and a broken record's recovery at the next line a record starts. What it does is told in
`referee.core.jsonio.values`."""

from __future__ import annotations

import json
import re
from typing import Any, BinaryIO, Iterator

from referee.core.jsonio.depth import (
    MAX_DEPTH,
    digits_message,
    nested_deeper,
    parsed_deeper,
    too_many_digits,
    without_lone_surrogates,
)
from referee.core.jsonio.window import JsonValue, Window, match_end, scan_brackets

_DECODE = json.JSONDecoder().raw_decode  # (value, end) of the value at an index: the one parser
_CHECKS = 32  # good records a line layout is checked on before it is trusted
_MARGIN = 64  # a parse error this close to the window's end may be the edge, not the record
_WS = re.compile(r"[ \t\r\n]*")
_LINE_OPENER = re.compile(r"\n([ \t]*)([\[{])")
_SEP = re.compile(r"[ \t\r\n,]*")


class _Layout:
    """Where records start: on their own line after `lead` (line layout), or anywhere (`lead` None)."""

    __slots__ = ("lead", "opener", "needle", "state")

    def __init__(self, lead: str | None, opener: str) -> None:
        self.lead, self.opener = lead, opener  # opener: "{" or "[", "" for a scalar record
        self.needle = "" if lead is None else "\n" + lead + opener  # how a record's first line starts
        # -1: records cannot be found by line (one long line, or records hold such lines inside);
        # 0: line layout, not yet seen on a good record; n > 0: seen on n (checked up to _CHECKS)
        self.state = -1 if lead is None else 0


def _one_value(buf: str, start: int, end: int) -> bool:
    """Whether buf[start:end] holds one JSON value and nothing else but blanks."""
    try:
        _, stop = _DECODE(buf, start)
    except (ValueError, RecursionError):
        return False
    return stop <= end and match_end(_WS, buf, stop) >= end


class Reader:
    """The records of a binary file, read in a sliding window (`run`); see `referee.core.jsonio.values`."""

    def __init__(self, raw: BinaryIO, chunk: int, *, first_line: int = 1, sig: bool = True) -> None:
        self.w = Window(raw, chunk, sig=sig)
        self.chunk = chunk
        self.pos, self.line = 0, first_line  # cursor in w.buf and the line it is on
        self.array = False
        self.ended = False
        self.largest = 0
        self.ref: _Layout | None = None  # layout of the last good record (what a broken one is resynced by)
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
            j = match_end(pattern, w.buf, self.pos)
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
        except json.JSONDecodeError:
            return self._cut_line(nl)
        except (RecursionError, ValueError):  # too deep or too long a number to decode: its brackets may still close
            st, stop = scan_brackets(buf[:nl], self.pos, [], self.pos)
            if st != "end":
                return False
            end = stop - self.pos
        j = match_end(_WS, buf, self.pos + end)
        return j > nl and j < len(buf) and buf[j] in "[{"

    def _cut_line(self, nl: int) -> bool:
        """Whether a first line that does not decode is a cut JSONL line, not the first line of an array: a string
        runs into its end (JSON strings hold no raw newline, so no value goes on past it) and the next line holds
        one whole value."""
        buf = self.w.buf
        st, i = scan_brackets(buf[:nl + 1], self.pos, [], self.pos)
        if st != "bad" or buf[i] != '"':
            return False
        j = match_end(_WS, buf, nl)
        end = buf.find("\n", j)
        if j >= len(buf) or buf[j] not in "[{" or (end < 0 and not self.w.eof):
            return False
        return _one_value(buf, j, len(buf) if end < 0 else end)

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
            self._good(lay, start, b)
            yield self._checked(line, a, start, b)
            self._goto(b)
        elif kind == "probe":
            yield from self._probe(start, line, lay)
        elif kind == "deep":  # well formed, maybe, but too deep (or a number too long) to decode: skip it
            msg = f"invalid JSON: {b} at line {line}"
            if self.w.buf[start] not in "{[":  # a bare number: the resync finds its end
                yield from self._recover(start, line, msg, a, lay)
                return
            end = self._close(start)
            if end is None and (far := self._far_end(start, line)) is not None:
                while self.w.base + len(self.w.buf) < far:  # the text up to there, its lines counted
                    self._goto(len(self.w.buf))
                    self._compact(0)
                    self.w.grow()
                end = far - self.w.base
            if end is None:
                yield from self._recover(self.pos, line, msg, a, lay)
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
        ref, largest = self.ref, self.largest
        if ref is None or not ref.opener:
            return
        opener = ref.opener
        sep, decode, count, find = _SEP.match, _DECODE, buf.count, buf.find
        end_ok = len(buf) - _MARGIN
        gap, gap_nl, lay = None, 0, ref  # the text between records: the same as last time means the same layout
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
                try:
                    value, end = decode(buf, j)
                except (ValueError, RecursionError):
                    return
                # the checks `_checked` makes, inlined: most records hold no escape and few brackets
                if find("\\u", j, end) >= 0:
                    value = without_lone_surrogates(value, buf, j, end)
                if end >= end_ok or count("[", j, end) + count("{", j, end) > MAX_DEPTH and nested_deeper(value):
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
                ref = lay
                line += gap_nl
                yield JsonValue(line, value)
                line += k
                pos = end
                if pos > chunk:
                    self.pos = pos
                    self._compact()
                    buf, pos = w.buf, self.pos
                    count, find = buf.count, buf.find
                    end_ok = len(buf) - _MARGIN
        finally:
            self.pos, self.line = pos, line
            self.ref, self.largest = ref, largest

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

    def _good(self, lay: _Layout, start: int, end: int) -> None:
        if end - start > self.largest:
            self.largest = end - start
        if 0 <= lay.state < _CHECKS:
            if lay.opener and self.w.buf.find(lay.needle, start, end) >= 0:
                lay.state = -1  # a record holds a line that looks like a record's start: layout not usable
            else:
                lay.state += 1
        if lay.opener or self.ref is None or not self.ref.opener:
            self.ref = lay  # a scalar never replaces a record

    def _checked(self, line: int, value: Any, start: int, end: int) -> JsonValue:
        """A record that parsed at buf[start:end]: its value, or an error when it nests too deep."""
        if parsed_deeper(value, self.w.buf, start, end):
            return JsonValue(line=line, error=f"invalid JSON: nested deeper than {MAX_DEPTH} levels at line {line}")
        return JsonValue(line=line, value=without_lone_surrogates(value, self.w.buf, start, end))

    def _message(self, start: int, line: int, err: int, msg: str) -> str:
        buf = self.w.buf
        if self.w.eof and err >= len(buf) - 1:
            return "invalid JSON: the file ends inside this value"
        # json says "Invalid control character at" (its own message ends in "at"): one "at", not two
        return f"invalid JSON: {msg.removesuffix(' at')} at line {line + buf.count(chr(10), start, err)}"

    def _decode(self, start: int, lay: _Layout, candidate: bool) -> tuple[str, Any, Any]:
        """("ok", value, end) | ("bad", error index, message) | ("sibling", next record, _) | ("probe", _, _)
        | ("deep", _, message): too deep, or a number too long, to decode (`candidate` says "bad" instead)."""
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
            except ValueError as exc:
                if not too_many_digits(exc):
                    raise
                # an integer longer than Python converts: this record is lost, not the file
                return ("bad" if candidate else "deep"), start + 1, digits_message()
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

        `search`: where the search for the next record's line begins (default: after `start`).
        """
        lay = self._pick(start, own)
        if lay is None:  # no line a record starts: one long line, resumed where its brackets balance again
            end = self._bad_end(start)
            self._goto(len(self.w.buf) if end is None else end)
            self.ended = end is None
            yield JsonValue(line=line, error=msg if end is not None else f"{msg}; nothing after it could be read")
            return
        yield from self._resync(line, msg, start + 1 if search is None else search, lay,
                                also=self._other_opener(lay))

    def _other_opener(self, lay: _Layout) -> _Layout | None:
        """For a line layout no good record has had yet, the one whose lines start with the other bracket, where
        good records did or no record has been read yet: one cut line that starts with '[' in a JSONL file of
        objects must not hide the lines after it."""
        if lay.lead is None or not lay.opener or lay.state != 0:
            return None
        key = (lay.lead, "{" if lay.opener == "[" else "[")
        other = self.layouts.get(key)
        if other is None:
            return self._layout_for(*key) if self.ref is None else None
        return other if other.state > 0 else None

    def _pick(self, start: int, own: _Layout) -> _Layout | None:
        """The line layout the record after a broken one at buf[start] is found by; None where records do not
        start lines (one long line)."""
        if own.state >= 0 and own.opener:
            return own
        if self.ref is not None:
            if self.ref.state >= 0:
                return self.ref
        else:  # the first record: the least indented line in sight that starts with '{' or '['
            leads = [(len(m.group(1)), m.group(1), m.group(2)) for m in _LINE_OPENER.finditer(self.w.buf, start)
                     if not own.opener or m.group(2) == own.opener]
            if leads:
                _, lead, opener = min(leads)
                return self._layout_for(lead, opener)
        return own if own.state >= 0 else None

    def _bad_end(self, start: int) -> int | None:
        """Where a broken record on one long line ends: its brackets balance and a good record (or the end) follows."""
        w = self.w
        j = self._close(start)
        if j is None:
            return None
        if not self.array:
            return j
        k, c = self._peek_at(j)
        if c == ",":
            k = match_end(_SEP, w.buf, k)
            k, c = self._peek_at(k)
            if c in ("", "]"):
                return j if self._follows(k) or c == "" else None
            kind, _, e = self._decode(k, _Layout(None, c if c in "{[" else ""), candidate=True)
            return j if kind == "ok" and self._follows(e) else None
        return j if self._follows(j) else None

    def _close(self, start: int) -> int | None:
        """Where the value at buf[start] closes, by a string-aware bracket scan (reading on); None if it
        cannot be JSON or would need more than the limit in memory."""
        w, i = self.w, start
        stack: list[str] = []
        while True:
            st, j = scan_brackets(w.buf, i, stack, start)
            if st == "end":
                return j
            if st == "bad" or 2 * (len(w.buf) - start) > self._limit() or not w.grow(len(w.buf) - start):
                return None
            i = j

    def _peek_at(self, i: int) -> tuple[int, str]:
        """The first non-blank character from buf[i] on and where it is; ("", end of window) at EOF."""
        w = self.w
        while True:
            j = match_end(_WS, w.buf, i)
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

    def _resync(self, line: int, msg: str, i: int, lay: _Layout, also: _Layout | None = None) -> Iterator[JsonValue]:
        """Skip to the first line at or after buf[i] that starts like a record (`lay`, or `also`: `_other_opener`);
        yield the error, then that record, or its own error and go on to the next such line."""
        own = lay
        while True:
            lay = own
            c = self._next(i, lay, also)
            if c < 0:
                self._goto(len(self.w.buf))
                self.ended = True
                yield JsonValue(line=line, error=f"{msg}; nothing after it could be read")
                return
            self._goto(c)
            c -= self._compact()
            if also is not None and self.w.buf[c] == also.opener:
                lay = also
            kind, a, b = self._decode(c, lay, candidate=True)
            yield JsonValue(line=line, error=f"{msg}; skipped to line {self.line}")
            if kind == "ok" and (type(a) is not str or self._follows(b)):
                self._good(lay, c, b)
                yield self._checked(self.line, a, c, b)
                self._goto(b)
                return
            line = self.line
            if kind == "bad":
                msg = self._message(c, line, a, b)
            elif kind == "sibling":
                msg = "invalid JSON: value never closed"
            else:
                msg = f"invalid JSON: a key where a record should start at line {line}"
            i = a if kind == "sibling" else c + 1

    def _next(self, i: int, lay: _Layout, also: _Layout | None = None) -> int:
        """The next line at or after buf[i] that starts like a record, reading on (dropping what is passed); -1 at
        EOF."""
        w = self.w
        while True:
            c = self._sibling(i, lay)
            if also is not None and (o := self._sibling(i, also)) >= 0 and (c < 0 or o < c):
                c = o  # the line that starts with the other bracket comes first
            if c >= 0:
                return c
            if w.eof:
                return -1
            to = max(self.pos, len(w.buf) - len(lay.needle))
            self._goto(to)
            i = max(i, to) - self._compact()
            w.grow()

    def _far_end(self, start: int, line: int) -> int | None:
        """Where the value at buf[start] (on `line`) ends, as a file offset, found by a scan that keeps no text
        however long it is; None when it never closes. The window is then back at buf[start], now buf[0]."""
        w = self.w
        s_abs = w.base + start
        stack: list[str] = []
        i, lo = start, start
        while True:
            st, j = scan_brackets(w.buf, i, stack, lo)
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
        return e_abs

    def _probe(self, start: int, line: int, lay: _Layout) -> Iterator[JsonValue]:
        """A record too long to hold blindly: find its end with a scan that keeps no text, then re-read it."""
        w = self.w
        s_abs = w.base + start
        e_abs = self._far_end(start, line)
        if e_abs is None:  # it never closes: resume inside it, at the next line a record starts
            resync = self._pick(0, lay)
            if resync is None:
                self.ended = True
                yield JsonValue(line=line, error="invalid JSON: value never closed; nothing after it could be read")
                return
            yield from self._resync(line, "invalid JSON: value never closed", 1, resync)
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
        except ValueError as exc:
            if not isinstance(exc, json.JSONDecodeError) and not too_many_digits(exc):
                raise
            why = self._message(0, line, exc.pos, exc.msg) if isinstance(exc, json.JSONDecodeError) else \
                f"invalid JSON: {digits_message()} at line {line}"
            yield JsonValue(line=line, error=why)
            self._goto(min(n, len(w.buf)))
            return
        self._good(lay, 0, end)
        yield self._checked(line, value, 0, end)
        self._goto(end)
