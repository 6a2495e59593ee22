"""The audit JSONL on disk: stream its records (the last per run_id), mend a half-written end."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from referee.core.fsutil import open_regular
from referee.errors import RefereeError

if TYPE_CHECKING:
    from referee.audit.records import AuditRecord


class AuditFileError(RefereeError):
    """An audit JSONL that cannot be read as audit records."""


@dataclass
class LatestIndex:
    """Where each run_id's last record is, in a snapshot of an audit JSONL (see `index_latest`)."""

    last: dict[str, int] = field(default_factory=dict)           # run_id -> line of its last record
    superseded: list[tuple[str, int]] = field(default_factory=list)  # (run_id, line) a later record replaces
    lines: int = 0                                                 # lines in the snapshot


_RUN_ID = re.compile(rb'^\{"record_version":\d+,"run_id":("(?:[^"\\]|\\.)*")')  # how referee writes a record


def index_latest(path: Path) -> LatestIndex:
    """Find the last record of every run_id (one cheap pass: run_ids only, records are not validated).

    An audit file may hold several records of one run: a resume appends a new record for a run whose
    trace changed (or whose backend calls failed, or with `--reaudit-changed`) and never edits the file.
    The last one stands; every reader goes through `iter_records`, which applies this.
    """
    path = Path(path)
    idx = LatestIndex()
    try:  # a regular file only: a FIFO is one line naming it, never a wait
        fh = open_regular(path, error=AuditFileError)
    except OSError as exc:
        raise AuditFileError(f"cannot read audit records: {exc.strerror}", file=str(path),
                             fix="pass the JSONL that `referee audit` wrote") from None
    with fh:
        for lineno, line in enumerate(fh, start=1):
            idx.lines = lineno
            m = _RUN_ID.match(line)
            try:
                rid = loads_line(m.group(1)) if m else _peek_run_id(line)
            except ValueError:
                rid = None
            if not isinstance(rid, str):
                continue  # blank or bad: iter_records reports a bad line where it is
            prev = idx.last.get(rid)
            if prev is not None:
                idx.superseded.append((rid, prev))
            idx.last[rid] = lineno
    return idx


def iter_records(path: Path, *, index: LatestIndex | None = None, every: bool = False,
                 skip_damaged: bool = False) -> Iterator[tuple[int, AuditRecord]]:
    """Stream (line number, AuditRecord) from an audit JSONL: the last record of each run_id, in file order.

    A bad line raises naming file, line and run_id. `every=True` streams superseded records too.
    `skip_damaged=True` passes over a line that holds no run_id (not JSON, nested too deep, no object), as the
    resume that `referee audit` ran before has (`resume.scan`: it warned of that line once, and left it).
    Lines appended after the first pass (a writer still running) are not read.

    >>> import tempfile, pathlib
    >>> from referee.audit.run.pipeline import audit_trace
    >>> from referee.audit.trace import Trace
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.jsonl"
    >>> a = audit_trace(Trace(run_id="r", task="Delete note N42", steps=[], report="Done."))
    >>> b = a.model_copy(update={"task": "Delete note N43"})
    >>> _ = p.write_text(a.model_dump_json() + "\\n" + b.model_dump_json() + "\\n")
    >>> [(line, rec.task) for line, rec in iter_records(p)]
    [(2, 'Delete note N43')]
    """
    path = Path(path)
    if index is None and not every:
        index = index_latest(path)
    gone = {line for _, line in index.superseded} if index is not None else set()
    try:
        fh = open_regular(path, error=AuditFileError)  # decoded line by line: a bad byte is reported at its line
    except OSError as exc:
        raise AuditFileError(f"cannot read audit records: {exc.strerror}", file=str(path),
                             fix="pass the JSONL that `referee audit` wrote") from None
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            if index is not None and lineno > index.lines:
                break
            if lineno in gone:
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                if skip_damaged:
                    continue  # no run_id can be read of it: resume.scan counts it damaged
                raise AuditFileError("not UTF-8 text", file=str(path), place=f"line {lineno}",
                                     fix="pass the JSONL that `referee audit` wrote (UTF-8)") from None
            if not line.strip():
                continue
            try:
                rec = _record(path, lineno, line)
            except AuditFileError:
                if skip_damaged and not isinstance(_peek_run_id(line), str):
                    continue  # what resume.scan counts as damaged (and warned of)
                raise
            yield lineno, rec


def _record(path: Path, lineno: int, line: str) -> AuditRecord:
    from pydantic import ValidationError

    from referee.audit.records import AuditRecord  # its models load with the first record read

    try:
        return AuditRecord.model_validate_json(line)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "record"
        rid = _peek_run_id(line)
        place = f"line {lineno}" + (f" (run_id {rid})" if rid else "")
        raise AuditFileError(f"not an audit record: {loc}: {err['msg']}", file=str(path), place=place,
                             fix="pass the JSONL written by `referee audit` or `referee replay`") from None


def _peek_run_id(line: str | bytes) -> str | None:
    try:
        obj = loads_line(line)
        return obj.get("run_id") if isinstance(obj, dict) else None
    except ValueError:
        return None


def cut_partial_line(path: Path) -> int:
    """Cut a half-written last line (a killed process) off an audit JSONL; returns the bytes cut.

    Only the writer calls this, before it appends: reading never changes a file.
    """
    path = Path(path)
    if not path.exists() or path.stat().st_size == 0:
        return 0
    with open(path, "rb+") as fh:
        size = fh.seek(0, os.SEEK_END)
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) == b"\n":
            return 0
        keep, pos = 0, size
        while pos > 0:  # back from the end in blocks: a big audit file is never read whole
            start = max(0, pos - (1 << 16))
            fh.seek(start)
            nl = fh.read(pos - start).rfind(b"\n")
            if nl >= 0:
                keep = start + nl + 1
                break
            pos = start
        fh.truncate(keep)
        return size - keep


def done_run_ids(path: Path) -> set[str]:
    """Run ids already in an audit JSONL (read only; lines that do not parse are not counted).

    A resume reads more than run_ids (settings, content hashes, failed calls): `referee.audit.run.resume.scan`.
    """
    path = Path(path)
    return set(index_latest(path).last) if path.exists() else set()


def loads_line(line: str | bytes) -> Any:
    """A line's JSON, depth-bounded as every reader of user files; the JSON stack loads with the first line read
    (an audit of an empty input, into a new file, reads none).

    >>> loads_line('{"run_id": "r"}')
    {'run_id': 'r'}
    """
    from referee.core.jsonio.values import loads

    return loads(line)
