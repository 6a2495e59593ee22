"""The file capture: the runner copies a file the app wrote into the evidence, with a small record beside it."""

from __future__ import annotations

import shutil
from pathlib import Path

from referee.errors import EvidenceError
from referee.fsutil import atomic_write_text, open_regular
from referee.rundir import FileRecord, dump_record, record_file
from referee.runner.captures.base import CaptureFailed, CaptureKind, register

MAX_COPY = 256 << 20


@register("file")
class FileCapture(CaptureKind):
    def take(self, params, ctx):
        src, where = (_resolve(p, ctx.cwd) for p in (ctx.expand(params.path), ctx.shown(params.path)))
        # `where` is the path as written down: a secret `${VAR}` in it stays a name
        record = FileRecord(path=params.path, resolved=str(where), exists=src.is_file())
        files = []
        if src.is_file():
            record.size = src.stat().st_size
            if record.size <= MAX_COPY:
                name = where.name or "file"
                copy = ctx.out_dir / f"{params.name}.data" / name
                copy.parent.mkdir(parents=True, exist_ok=True)
                try:  # opened as a regular file: swapped for a FIFO since the look, it is refused, not waited on
                    with open_regular(src, max_bytes=MAX_COPY) as fh, open(copy, "wb") as out:
                        shutil.copyfileobj(fh, out)
                except EvidenceError as exc:
                    raise CaptureFailed(exc.message, {"path": params.path}) from None
                files.append(copy)
                record.copy_ = f"{params.name}.data/{name}"
        meta = ctx.out_dir / record_file(params.name, "file")
        atomic_write_text(meta, dump_record(record))
        return [meta] + files


def _resolve(path: str, cwd: Path | None) -> Path:
    src = Path(path).expanduser()
    return Path(cwd) / src if not src.is_absolute() and cwd else src
