"""Stream JSON values out of a file in bounded memory: JSONL, concatenated/pretty JSON, or one big array."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

CHUNK = 1 << 20  # 1 MiB reads: memory is one chunk plus the largest single record


@dataclass(frozen=True)
class JsonValue:
    """One top-level value (or array element) and the 1-based line it starts on; `error` if it did not parse."""

    line: int
    value: Any = None
    error: str | None = None


_WS = " \t\r\n"


def iter_json_values(path: Path, *, chunk: int = CHUNK) -> Iterator[JsonValue]:
    """Yield the records of a JSON file: elements of a top-level array, else each top-level value.

    A value that does not parse is yielded with `error` and reading resumes at the next line that
    starts with `{` (JSONL and pretty-printed files); inside a top-level array a syntax error ends
    the file, since nothing marks where the next element starts.

    >>> import tempfile, pathlib; p = pathlib.Path(tempfile.mkdtemp()) / "a.json"
    >>> _ = p.write_text('[{"a": 1},\\n {"a": 2}]')
    >>> [(v.line, v.value) for v in iter_json_values(p)]
    [(1, {'a': 1}), (2, {'a': 2})]
    """
    with open(path, "r", encoding="utf-8", errors="replace") as fh:
        first = ""
        while True:
            c = fh.read(1)
            if not c or c not in _WS:
                first = c
                break
        if not first:
            return
        fh.seek(0)
        if first == "[":
            yield from _iter_array(fh, chunk)
        else:
            yield from _iter_values(fh)


def _iter_array(fh, chunk: int) -> Iterator[JsonValue]:
    dec = json.JSONDecoder()
    buf = fh.read(chunk)
    eof = len(buf) < chunk
    line = 1
    pos = buf.index("[") + 1
    line += buf.count("\n", 0, pos)
    need_sep = False
    while True:
        # skip whitespace and one comma between elements
        while True:
            while pos < len(buf) and buf[pos] in _WS:
                if buf[pos] == "\n":
                    line += 1
                pos += 1
            if pos < len(buf) or eof:
                break
            buf, pos, eof = _refill(fh, buf, pos, chunk)
        if pos >= len(buf):
            yield JsonValue(line=line, error="unexpected end of file inside the top-level array")
            return
        ch = buf[pos]
        if ch == "]":
            return
        if need_sep:
            if ch != ",":
                yield JsonValue(line=line, error=f"expected ',' or ']' between array elements, found {ch!r}")
                return
            pos += 1
            need_sep = False
            continue
        while True:
            try:
                value, end = dec.raw_decode(buf, pos)
            except json.JSONDecodeError as exc:
                if eof:
                    yield JsonValue(line=line, error=f"invalid JSON: {exc.msg}")
                    return
                # the element may just be cut by the chunk edge: read more (geometrically) and retry
                buf, pos, eof = _refill(fh, buf, pos, max(chunk, len(buf) - pos))
                continue
            if end >= len(buf) and not eof and isinstance(value, (int, float)):
                buf, pos, eof = _refill(fh, buf, pos, chunk)  # a number cut at the edge
                continue
            break
        yield JsonValue(line=line, value=value)
        line += buf.count("\n", pos, end)
        pos = end
        need_sep = True
        if pos > chunk:  # drop what was consumed so memory stays bounded
            buf, pos = buf[pos:], 0


def _refill(fh, buf: str, pos: int, n: int) -> tuple[str, int, bool]:
    more = fh.read(n)
    return buf[pos:] + more, 0, len(more) < n


def _iter_values(fh) -> Iterator[JsonValue]:
    # line-oriented: JSONL lines parse alone; a pretty-printed value is gathered until its closing line
    pending: list[str] = []
    start = 0
    for lineno, raw in enumerate(fh, start=1):
        stripped = raw.strip()
        if not pending:
            if not stripped:
                continue
            try:
                yield JsonValue(line=lineno, value=json.loads(stripped))
                continue
            except ValueError as exc:
                if not raw.startswith(("{", "[")) or stripped.endswith(("}", "]")):
                    yield JsonValue(line=lineno, error=f"invalid JSON: {exc}")
                    continue
                pending, start = [raw], lineno
                continue
        if raw.startswith(("{", "[")) and not raw.startswith(("{}", "[]")):
            # a new top-level value starts: the gathered one never closed
            yield JsonValue(line=start, error="invalid JSON: value never closed")
            pending, start = [raw], lineno
            try:
                yield JsonValue(line=lineno, value=json.loads(stripped))
                pending = []
            except ValueError:
                pass
            continue
        pending.append(raw)
        if raw.startswith(("}", "]")):
            try:
                value = json.loads("".join(pending))
            except ValueError as exc:
                yield JsonValue(line=start, error=f"invalid JSON: {exc}")
            else:
                yield JsonValue(line=start, value=value)
            pending = []
    if pending:
        yield JsonValue(line=start, error="invalid JSON: unexpected end of file")
