"""Stream JSON values out of a file in bounded memory: JSONL, concatenated/pretty JSON, or one big array.

How it reads. The file is decoded chunk by chunk into a sliding window and each record (an
element of a top-level array, else each top-level value) is parsed where it lies by one parser, the
C decoder of `json` (`json.JSONDecoder.raw_decode`, which says where a value ends), so memory is a
chunk or two plus the largest record, whatever the file size. A record cut by the window's edge is
told apart from a broken one by where the decoder stopped: only a stop in the last few characters of
the window (or an unterminated string) means "read on". ijson and pydantic-core were measured against it
(`benchmarks/bench_jsonstream.py`): neither says where a record starts (its line) nor reads on past a
broken one, which is what this module adds.

A broken record costs that record, not the rest of the file: it is yielded once, with `error` and
the line it starts on, and reading resumes at the next line a record starts:

* records that start their own lines at one indentation (JSONL, an array with one element per
  line, pretty-printed records; learnt from the good records): at the next such line. A record
  that never closes (a truncated write) ends there too, as soon as that line is read. Each such
  line that does not parse is an error of its own; other text goes with the error before it. After a
  broken line that starts with the other bracket (a cut `[...` among objects), lines starting with either;
* records on one long line: where the broken record's brackets balance again (string-aware) and a
  good record (or the end) follows; when they never do (a record cut inside a string or a list), no
  place after it is known to start a record, and the rest of that line is lost, said in the error;
* a record that would need more than `max(4 chunks, 4 x the largest record so far)` of text in
  memory is checked by a bracket scan that keeps no text, then re-read from its start when it
  closes (it is just large), so even a broken record that swallows the rest of the file (one cut
  inside a list, on one long line) keeps memory flat; that costs one more pass over the rest.

A record nested deeper than `MAX_DEPTH` levels is a broken record too (one error, never a
RecursionError): nothing downstream has to walk a tree that deep. A parsed record's brackets are
counted (in C) and its containers walked level by level only past MAX_DEPTH of them (`parsed_deeper`);
a deep record's end is found by the same bracket scan, however long it is.
A record holding an integer of more digits than Python converts (`sys.get_int_max_str_digits()`, 4300)
is a broken record too. A file that is no text at all (gzip, a zip, NUL bytes: `undecodable.not_text` of
its first 4 KiB) is one error saying so, not a line of "invalid JSON" per newline byte.

Separators are lenient: a missing, doubled or trailing comma between records costs nothing, and
arrays written one after another read as one. A file whose first line is a whole array with
another value after it is a sequence of values (JSONL of message lists), not one array; so is one whose
first line is cut inside a string (JSON strings hold no newline) and whose second line is a whole value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Generator, Iterator

from referee.core.fsutil import open_regular
from referee.core.jsonio.depth import MAX_DEPTH, loads, nested_deeper, too_deep  # noqa: F401 (re-export)
from referee.core.jsonio.reader import Reader
from referee.core.jsonio.undecodable import HEAD_BYTES, not_text
from referee.core.jsonio.window import CHUNK, JsonValue  # noqa: F401 (re-export)
from referee.errors import TraceError


def iter_json_values(path: Path, *, chunk: int = CHUNK) -> Generator[JsonValue, None, None]:
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
        head = raw.read(HEAD_BYTES)
        raw.seek(0)
        if (wide := _wide_text(head[:4])) is not None:  # read as UTF-8, every other byte a NUL: errors saying nothing
            yield JsonValue(line=1, error=f"{wide} text, not UTF-8: referee reads UTF-8 (convert it, e.g. "
                                          f"iconv -f {wide} -t UTF-8)")
            return
        if (why := not_text(head, Path(path).name)) is not None:  # a line of "invalid JSON" per newline byte, else
            yield JsonValue(line=1, error=why)
            return
        yield from Reader(raw, max(int(chunk), 1024)).run()


def _wide_text(head: bytes) -> str | None:
    """'UTF-16' or 'UTF-32' for a file that starts with their byte order mark, or with an ASCII character
    written in them ('{' and NULs: JSON text never holds a NUL); None for anything else.

    >>> _wide_text("[{".encode("utf-16")), _wide_text("{".encode("utf-32-le")), _wide_text(b'{"a"')
    ('UTF-16', 'UTF-32', None)
    """
    nuls = [b == 0 for b in head]
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")) or nuls in ([False, True, True, True],
                                                                               [True, True, True, False]):
        return "UTF-32"
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or nuls[:2] in ([False, True], [True, False]):
        return "UTF-16"
    return None


def iter_json_slice(data: bytes, *, first_line: int, at_start: bool, chunk: int = CHUNK) -> Iterator[JsonValue]:
    """`iter_json_values` of some whole lines of a file (`data`, in memory), numbered from `first_line`;
    `at_start`: the slice is the file's beginning (where a byte order mark is dropped).

    >>> [(v.line, v.value) for v in iter_json_slice(b'{"a": 1}\\n\\n{"a": 2}\\n', first_line=7, at_start=False)]
    [(7, {'a': 1}), (9, {'a': 2})]
    """
    import io

    yield from Reader(io.BytesIO(data), max(int(chunk), 1024), first_line=first_line, sig=at_start).run()
