"""The audit JSONL on disk: stream its records, see which runs it already holds, mend a half-written end."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator

from pydantic import ValidationError

from referee.audit.records import AuditRecord
from referee.errors import RefereeError


class AuditFileError(RefereeError):
    """An audit JSONL that cannot be read as audit records."""


def iter_records(path: Path) -> Iterator[tuple[int, AuditRecord]]:
    """Stream (line number, AuditRecord) from an audit JSONL; a bad line raises naming file, line and run_id."""
    path = Path(path)
    try:
        fh = open(path, "rb")  # decoded line by line, so a bad byte is reported at its own line
    except OSError as exc:
        raise AuditFileError(f"cannot read audit records: {exc.strerror}", file=str(path),
                             fix="pass the JSONL that `referee audit` wrote") from None
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise AuditFileError("not UTF-8 text", file=str(path), place=f"line {lineno}",
                                     fix="pass the JSONL that `referee audit` wrote (UTF-8)") from None
            if line.strip():
                yield lineno, _record(path, lineno, line)


def _record(path: Path, lineno: int, line: str) -> AuditRecord:
    try:
        return AuditRecord.model_validate_json(line)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "record"
        rid = _peek_run_id(line)
        place = f"line {lineno}" + (f" (run_id {rid})" if rid else "")
        raise AuditFileError(f"not an audit record: {loc}: {err['msg']}", file=str(path), place=place,
                             fix="pass the JSONL written by `referee audit` or `referee replay`") from None


def _peek_run_id(line: str) -> str | None:
    try:
        obj = json.loads(line)
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
    """Run ids already in an audit JSONL (read only; lines that do not parse are not counted)."""
    path = Path(path)
    ids: set[str] = set()
    if not path.exists():
        return ids
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            try:
                ids.add(json.loads(line)["run_id"])
            except (ValueError, KeyError, TypeError):
                continue
    return ids
