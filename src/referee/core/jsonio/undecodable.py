"""Bytes of a trace file that are not UTF-8: read as U+FFFD as before, but counted, so the audit says so.

The stream readers decode with `errors=ERRORS`, a handler that replaces exactly as `errors="replace"`
does and counts what it replaced for the innermost `counting` block; a `noting_undecodable` reading adds one
note per file, on the first record read after the bytes were met (the decoder reads ahead, so the bytes
lie in or after that record's text).
"""

from __future__ import annotations

import codecs
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from referee.core.fsutil import open_regular
from referee.errors import RefereeError, TraceError

ERRORS = "referee-replace"


class Count:
    """What one reading replaced: how many bytes, and the first of them with a few bytes either side."""

    def __init__(self) -> None:
        self.n = 0
        self.first: bytes | None = None


_COUNTS: list[Count] = []  # one per reading in progress; the innermost counts


@contextmanager
def counting(count: Count | None = None) -> Iterator[Count]:
    """Count into `count` (a new one when None) what the stream readers replace inside the block.

    >>> with counting() as bad:
    ...     _ = b"caf\\xe9 ok".decode("utf-8", errors=ERRORS)
    >>> bad.n, bad.first
    (1, b'caf\\xe9 ok')
    """
    count = count if count is not None else Count()
    _COUNTS.append(count)
    try:
        yield count
    finally:
        _COUNTS.pop()


def _replace(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    if _COUNTS:
        c = _COUNTS[-1]
        c.n += exc.end - exc.start
        if c.first is None:
            c.first = bytes(exc.object[max(exc.start - 24, 0):exc.end + 24])
    return "\ufffd", exc.end


codecs.register_error(ERRORS, _replace)


HEAD_BYTES = 4096  # of a file's start, looked at to tell a file that is no text at all

# compressed files and archives by their first bytes: (magic, what it is, how to get the text out; {name}: the file's)
_PACKED = ((b"\x1f\x8b", "gzip-compressed data", "decompress it first (e.g. gunzip -k {name})"),
           (b"PK\x03\x04", "a zip archive", "unpack it first (e.g. unzip {name})"),
           (b"BZh", "bzip2-compressed data", "decompress it first (e.g. bunzip2 -k {name})"),
           (b"\xfd7zXZ\x00", "xz-compressed data", "decompress it first (e.g. unxz -k {name})"),
           (b"\x28\xb5\x2f\xfd", "zstd-compressed data", "decompress it first (e.g. unzstd {name})"),
           (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "unpack it first (e.g. 7z x {name})"))
_JSON_START = frozenset(b'{["-0123456789tfn')
_CONTROL = bytes(b for b in range(32) if b not in b"\t\n\r")  # bytes JSON text never holds raw


def not_text(head: bytes, name: str) -> str | None:
    """Why a file whose first bytes are `head` is no text at all (compressed, an archive, binary data), with what to
    do; None for text, UTF-8 or not. A file that starts as JSON text is text (a NUL-filled tail left by a crash is
    its own bad lines); one that does not is binary when its first bytes hold a NUL or mostly bytes no text holds.

    >>> not_text(b"\\x1f\\x8b\\x08\\x00rest", "t.jsonl")
    'not a text file (gzip-compressed data): decompress it first (e.g. gunzip -k t.jsonl)'
    >>> not_text(b'{"task": "caf\\xe9"}\\n', "t.jsonl"), not_text(b'{"a": 1}\\n' + bytes(300), "t.jsonl")
    (None, None)
    >>> not_text(bytes(range(256)), "t.jsonl")  # doctest: +ELLIPSIS
    'not a text file (binary data: NUL bytes or bytes that are not UTF-8 in its first 256 bytes); ...'
    """
    for magic, what, fix in _PACKED:
        if head.startswith(magic):
            return f"not a text file ({what}): {fix.format(name=name)}"
    start = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")[:64].split(b"\n", 1)[0]  # its first line
    if not start or (start[0] in _JSON_START and start.translate(None, _CONTROL) == start
                     and not _undecodable(start, final=False)):
        return None
    bad = len(head) - len(head.translate(None, _CONTROL)) + _undecodable(head, final=False)
    if b"\x00" not in head and 10 * bad < len(head):  # a few odd bytes: text in another encoding, noted as such
        return None
    return (f"not a text file (binary data: NUL bytes or bytes that are not UTF-8 in its first {len(head)} bytes); "
            "referee reads JSON text in UTF-8: give it the trace file itself")


def _undecodable(data: bytes, final: bool = True) -> int:
    """How many bytes of `data` are not UTF-8 (a character cut at its end counts only when `final`)."""
    dec = codecs.getincrementaldecoder("utf-8")("ignore")
    kept = dec.decode(data, final=final)
    return len(data) - len(kept.encode("utf-8", "surrogatepass")) - len(dec.getstate()[0])


def first_bad_line(path: str | Path, block: int = 1 << 20) -> int | None:
    """The line (1-based) of a file's first byte that is not UTF-8; None when there is none or it is no regular
    file that can be read (a run folder). One streaming pass that stops there, made only for a file the audit
    found such bytes in.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.jsonl"
    >>> _ = p.write_bytes("ok\\nstill ok \u00e9\\n".encode() + b"caf\\xe9\\n")
    >>> first_bad_line(p), first_bad_line(p, block=2)
    (3, 3)
    """
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    lines = 1  # newlines passed, plus one
    try:
        with open_regular(Path(path), error=TraceError) as fh:
            while chunk := fh.read(block):
                pending = decoder.getstate()[0]  # the start of a character the last block cut: no newline in it
                try:
                    decoder.decode(chunk)
                except UnicodeDecodeError as exc:  # its offsets are in pending + chunk
                    return lines + (pending + chunk)[:exc.start].count(b"\n")
                lines += chunk.count(b"\n")
            decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return lines  # the file ends inside a character: its last line
    except (OSError, RefereeError):
        return None
    return None
