"""The two containers of an Inspect AI log, read one sample at a time: `.eval` (a zip) and `.json`.

An `.eval` file is a zip with one member per sample (`samples/<id>_epoch_<n>.json`) beside
`header.json` (or, for a run that did not finish, `_journal/start.json`). Recent Inspect versions
compress members with zstd (zip method 93), which `zipfile` cannot open before Python 3.14: such a
member is located from its local header and decompressed with the `zstandard` package (the
`referee[inspect]` extra), its CRC checked. Inspect itself is never imported.

A `.json` log is one object (`version`, `status`, `eval`, ..., `samples`, `reductions`). It is
read as a stream: the header members are decoded one by one, and the `samples` array element by
element, so memory holds one sample at a time, whatever the file size.
"""

from __future__ import annotations

import codecs
import io
import json
import re
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from referee.core.jsonio.depth import digits_message, too_many_digits
from referee.core.jsonio.undecodable import ERRORS
from referee.core.jsonio.values import MAX_DEPTH, loads, too_deep
from referee.core.jsonio.window import scan_brackets
from referee.errors import require

ZIP_ZSTD = 93  # the zip method id of zstd (APPNOTE 4.4.5)
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")
CHUNK = 1 << 20


@dataclass(frozen=True)
class LogPart:
    """One piece of a log: the header (`eval`, `status`, ...), or one sample (`where` names it: member or line)."""

    kind: str  # "header" | "sample" | "error"
    value: Any = None
    where: str | None = None  # zip member name, or "line N" in a .json log
    line: int | None = None
    error: str | None = None


def is_eval_zip(path: Path) -> bool:
    """True for a zip whose members look like an Inspect `.eval` log (header, journal or samples).

    >>> import tempfile, zipfile; p = Path(tempfile.mkdtemp()) / "x.eval"
    >>> with zipfile.ZipFile(p, "w") as z: z.writestr("header.json", "{}")
    >>> is_eval_zip(p), is_eval_zip(Path(__file__))
    (True, False)
    """
    try:
        with open(path, "rb") as fh:
            if fh.read(4) != b"PK\x03\x04":
                return False
            fh.seek(0)
            with zipfile.ZipFile(fh) as zf:
                return any(n in ("header.json", "_journal/start.json") or n.startswith("samples/")
                           for n in zf.namelist())
    except (OSError, zipfile.BadZipFile, ValueError):
        return False


def _zstd_member(fh: BinaryIO, info: zipfile.ZipInfo) -> bytes:
    fh.seek(info.header_offset)
    head = fh.read(_LOCAL_HEADER.size)
    if len(head) < _LOCAL_HEADER.size:
        raise ValueError("the member's local header is cut short")
    fields = _LOCAL_HEADER.unpack(head)
    if fields[0] != b"PK\x03\x04":
        raise ValueError("no local header where the zip directory says the member starts")
    fh.seek(info.header_offset + _LOCAL_HEADER.size + fields[-2] + fields[-1])
    compressed = fh.read(info.compress_size)
    zstandard = require("zstandard", "inspect")
    with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(compressed), read_across_frames=True) as r:
        data = r.read(info.file_size + 1)  # one byte over says the directory's size is wrong
    if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
        raise ValueError("the member does not decompress to what the zip directory says (a corrupt file?)")
    return data


class MemberTooBig(ValueError):
    """A zip member that would inflate past what referee reads of one member (a zip bomb, or a log that huge)."""


def _member(fh: BinaryIO, zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> Any:
    # as much as referee reads of a run directory's results.json: a 1 MB member may inflate to gigabytes, and
    # both readers stop at the size the zip directory gives, so a member is never inflated past this
    from referee.rundir.schema import MAX_RESULTS_BYTES

    if info.file_size > MAX_RESULTS_BYTES:
        raise MemberTooBig(f"it inflates to {info.file_size} bytes, more than referee reads of one member "
                           f"({MAX_RESULTS_BYTES} bytes); not read")
    data = _zstd_member(fh, info) if info.compress_type == ZIP_ZSTD else zf.read(info)
    return loads(data)  # a member nested past jsonio.values.MAX_DEPTH is a ValueError: one bad part


def _unread(name: str, exc: BaseException) -> str:
    """Why a member did not read, in one line."""
    return f"{name}: {exc}" if isinstance(exc, MemberTooBig) else f"{name}: {type(exc).__name__}: {str(exc)[:160]}"


_READ_ERRORS = (OSError, ValueError, zipfile.BadZipFile, NotImplementedError, EOFError, zlib.error, RecursionError)


def iter_eval_zip(path: Path) -> Iterator[LogPart]:
    """The header, then each sample member of an `.eval` file, in the order they were written.

    A member that cannot be read is one `error` part; the other samples still come.
    """
    try:
        fh = open(path, "rb")
    except OSError as exc:
        yield LogPart("error", error=f"cannot read: {exc.strerror}")
        return
    with fh:
        try:
            zf = zipfile.ZipFile(fh)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            yield LogPart("error", error=f"not a readable .eval (zip) file ({exc}); an unfinished run's log has no "
                                         "zip directory yet")
            return
        with zf:
            infos = zf.infolist()
            by_name = {i.filename: i for i in infos}
            header: Any = {}
            for name in ("header.json", "_journal/start.json"):
                if name in by_name:
                    try:
                        header = _member(fh, zf, by_name[name])
                    except _READ_ERRORS as exc:
                        yield LogPart("error", where=name, error=_unread(name, exc))
                        continue
                    break
            yield LogPart("header", value=header if isinstance(header, dict) else {})
            for info in infos:
                if not (info.filename.startswith("samples/") and info.filename.endswith(".json")):
                    continue
                try:
                    yield LogPart("sample", value=_member(fh, zf, info), where=info.filename)
                except _READ_ERRORS as exc:
                    yield LogPart("error", where=info.filename, error=_unread(info.filename, exc))


class _Stream:
    """Decoded text of a file with a cursor; what lies before the cursor is let go as it advances."""

    _WS = re.compile(r"[ \t\r\n]*")
    _DECODE = json.JSONDecoder().raw_decode

    def __init__(self, raw: BinaryIO, chunk: int = CHUNK) -> None:
        self.raw, self.chunk = raw, chunk
        self.dec = codecs.getincrementaldecoder("utf-8-sig")(errors=ERRORS)
        self.buf, self.pos, self.line, self.eof = "", 0, 1, False
        self.last = (0, 0)

    def _more(self, want: int) -> bool:
        if self.eof:
            return False
        data = self.raw.read(max(want, self.chunk))
        self.eof = not data
        self.buf = self.buf[self.pos:] + self.dec.decode(data, final=self.eof)
        self.pos = 0
        return True

    def peek(self, skip: str = "") -> str | None:
        """The next character that is neither whitespace nor in `skip` (None at the end)."""
        while True:
            m = self._WS.match(self.buf, self.pos)
            end = m.end() if m else self.pos
            while end < len(self.buf) and self.buf[end] in skip:
                end = self._WS.match(self.buf, end + 1).end()  # type: ignore[union-attr]
            self.line += self.buf.count("\n", self.pos, end)
            self.pos = end
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._more(self.chunk):
                return None

    def take(self, char: str) -> None:
        if self.peek() != char:
            raise ValueError(f"expected {char!r} at line {self.line}")
        self.pos += 1

    def value(self) -> Any:
        """The JSON value at the cursor; reads on (doubling) while it is cut by the window's edge."""
        self.peek()
        while True:
            try:
                val, end = self._DECODE(self.buf, self.pos)
            except json.JSONDecodeError:
                if self._more(max(self.chunk, len(self.buf) - self.pos)):
                    continue
                raise
            if end == len(self.buf) and self._more(self.chunk):  # a number may go on past the edge
                continue
            self.line += self.buf.count("\n", self.pos, end)
            self.last = (self.pos, end)  # where its text lies in buf, until the cursor moves on
            self.pos = end
            return val

    def skip(self) -> None:
        """Move the cursor past the value there, found by a string-aware bracket scan (one `value` cannot decode)."""
        self.peek()
        stack: list[str] = []
        i = lo = self.pos
        while True:
            st, j = scan_brackets(self.buf, i, stack, lo)
            if st == "end":
                break
            shift = self.pos
            if st == "bad" or not self._more(self.chunk):
                raise ValueError(f"a value that never closes at line {self.line}")
            i, lo = j - shift, lo - shift
        self.line += self.buf.count("\n", self.pos, j)
        self.pos = j


def iter_json_log(path: Path, *, chunk: int = CHUNK) -> Iterator[LogPart]:
    """The header members (before `samples`), then each element of `samples`, of a `.json` log.

    >>> import tempfile; p = Path(tempfile.mkdtemp()) / "log.json"
    >>> _ = p.write_text('{"version": 2, "eval": {"task": "t"},\\n "samples": [\\n {"id": 1},\\n {"id": 2}]}')
    >>> [(x.kind, x.value, x.line) for x in iter_json_log(p)]
    [('header', {'version': 2, 'eval': {'task': 't'}}, 1), ('sample', {'id': 1}, 3), ('sample', {'id': 2}, 4)]
    """
    header: dict[str, Any] = {}
    s: _Stream | None = None
    try:
        with open(path, "rb") as raw:
            s = _Stream(raw, chunk)
            s.take("{")
            while s.peek(",") not in ("}", None):
                key = s.value()
                s.take(":")
                if key != "samples" or s.peek() != "[":
                    header[str(key)] = s.value()
                    continue
                yield LogPart("header", value=header, line=1)
                s.take("[")
                while s.peek(",") not in ("]", None):
                    line = s.line
                    try:
                        value = s.value()
                    except ValueError as exc:
                        if not too_many_digits(exc):
                            raise
                        s.skip()  # a sample with an integer too long to convert: that sample is lost, not the log
                        yield LogPart("error", where=f"line {line}", line=line,
                                      error=f"a sample with {digits_message()}")
                        continue
                    if too_deep(s.buf, *s.last):  # read whole, but too deep to hand on: one bad sample
                        yield LogPart("error", where=f"line {line}", line=line,
                                      error=f"a sample nested deeper than {MAX_DEPTH} levels")
                        continue
                    yield LogPart("sample", value=value, where=f"line {line}", line=line)
                return  # what follows the samples (reductions) says nothing about a run
    except OSError as exc:
        yield LogPart("error", error=f"cannot read: {exc.strerror}")
        return
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        at = s.line if s is not None else None
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)[:160]
        yield LogPart("error", line=at, error=f"not a whole Inspect AI JSON log ({why}); the samples before "
                                              f"line {at} were read")
        return
    yield LogPart("header", value=header, line=1)  # a log written without samples
