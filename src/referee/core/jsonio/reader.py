"""The JSON stream reader: records read where they lie in the window (a fast path for the usual file, a general
one for the rest), and a broken record's recovery. What it does is told in `referee.core.jsonio.values`."""

from __future__ import annotations

import json
import re
from typing import Any, BinaryIO, Iterator

from referee.core.jsonio.depth import MAX_DEPTH, digits_message, parsed_deeper, too_many_digits, without_lone_surrogates
from referee.core.jsonio.window import (
    _CHECKS,
    _DECODE,
    _KEY,
    _LINE_OPENER,
    _MARGIN,
    _NONE,
    _SCAN,
    _SEP,
    _WS,
    JsonValue,
    _end,
    _Layout,
    _scan,
    _shares_key,
    _whole_line,
    _Window,
)


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
        self.whole: Any = None  # the container `_decode` last parsed as a whole line: checked already

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
        except json.JSONDecodeError:
            return self._cut_line(nl)
        except (RecursionError, ValueError):  # too deep or too long a number to decode: its brackets may still close
            st, stop = _scan(buf[:nl], self.pos, [], self.pos)
            if st != "end":
                return False
            end = stop - self.pos
        j = _end(_WS, buf, self.pos + end)
        return j > nl and j < len(buf) and buf[j] in "[{"

    def _cut_line(self, nl: int) -> bool:
        """Whether a first line that does not decode is a cut JSONL line, not the first line of an array: a string
        runs into its end (JSON strings hold no raw newline, so no value goes on past it) and the next line holds
        one whole value."""
        buf = self.w.buf
        st, i = _scan(buf[:nl + 1], self.pos, [], self.pos)
        if st != "bad" or buf[i] != '"':
            return False
        j = _end(_WS, buf, nl)
        end = buf.find("\n", j)
        if j >= len(buf) or buf[j] not in "[{" or (end < 0 and not self.w.eof):
            return False
        return _whole_line(buf, j, len(buf) if end < 0 else end)[0] is not _NONE

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
        elif kind == "deep":  # well formed, maybe, but too deep (or a number too long) to decode: skip it
            msg = f"invalid JSON: {b} at line {line}"
            end = self._close(start) if self.w.buf[start] in "{[" else None  # a bare number: resync finds its end
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
                value, shallow = _NONE, False
                if jit and gap_nl and (nl := buf.find("\n", j, end_ok)) > 0:
                    value, end = _whole_line(buf, j, nl)
                    jit = value is not _NONE  # a layout whose lines hold more than one value: scan it
                    shallow = jit  # _whole_line gives back no value nested too deep
                if value is _NONE:
                    try:
                        value, end = scan(buf, j)
                    except (StopIteration, ValueError, RecursionError):
                        return
                    value = without_lone_surrogates(value, buf, j, end)
                if end >= end_ok or not shallow and parsed_deeper(value, buf, j, end):
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
        if value is self.whole:  # pydantic-core parsed it (`_whole_line`): no deeper value, no lone surrogate
            return JsonValue(line=line, value=value)
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
        # a record alone on its line (a small file's only record, the first of a JSONL file): pydantic-core
        # parses the line, about twice as fast as `json`, and bounds its depth as it parses (no walk after);
        # anything else on the line, or what pydantic-core refuses, is read below as before
        buf, self.whole = w.buf, None
        nl = buf.find("\n", start)
        if nl > start or (nl < 0 and w.eof and len(buf) > start):
            value, end = _whole_line(buf, start, len(buf) if nl < 0 else nl)
            if value is not _NONE:
                if type(value) is dict or type(value) is list:
                    self.whole = value
                return "ok", value, end
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
        yield from self._resync(line, msg, start + 1 if search is None else search, lay, keys,
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
                stop: int | None = None, also: _Layout | None = None) -> Iterator[JsonValue]:
        """Skip to the first record at or after buf[i] that parses; yield the error, then that record.

        With `stop`, look only before buf[stop] and resume there when nothing is found. `also`: a line layout
        whose lines are looked at too (`_other_opener`).
        """
        own = lay
        while True:
            lay = own
            if stop is None:
                c = self._next(i, lay, also)
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
            if also is not None and self.w.buf[c] == also.opener:
                lay = also
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

    def _next(self, i: int, lay: _Layout, also: _Layout | None = None) -> int:
        """The next place a record may start at or after buf[i], reading on (dropping what is passed); -1 at EOF."""
        w = self.w
        while True:
            buf = w.buf
            keep = 0
            if lay.lead is not None:
                c = self._sibling(i, lay)
                if also is not None and (o := self._sibling(i, also)) >= 0 and (c < 0 or o < c):
                    c = o  # the line that starts with the other bracket comes first
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
        except ValueError as exc:
            if not isinstance(exc, json.JSONDecodeError) and not too_many_digits(exc):
                raise
            why = self._message(0, line, exc.pos, exc.msg) if isinstance(exc, json.JSONDecodeError) else \
                f"invalid JSON: {digits_message()} at line {line}"
            yield JsonValue(line=line, error=why)
            self._goto(min(n, len(w.buf)))
            return
        self._good(lay, value, 0, end)
        yield self._checked(line, value, 0, end)
        self._goto(end)
