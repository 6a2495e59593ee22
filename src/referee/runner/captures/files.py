"""The file capture: the runner copies a file the app wrote into the evidence, with a small record beside it.

The file may lie where the agent writes, so it is opened as `captures.sources` says (no link the
agent could have made is followed, never the signing key), and the copy is no more readable than
the file was (a file only its owner may read is copied with mode 0600).
"""

from __future__ import annotations

import os
import stat

from referee.core.fsutil import atomic_write_text, file_kind, hash_regular
from referee.errors import EvidenceError, HoldsSecret
from referee.rundir.schema import FileRecord, dump_record, record_file
from referee.runner.captures.base import CaptureFailed, CaptureKind, register
from referee.runner.captures.sources import open_source, source_path

MAX_COPY = 256 << 20


@register("file")
class FileCapture(CaptureKind):
    def take(self, params, ctx):
        src, where = source_path(ctx.expand(params.path), ctx.cwd), source_path(ctx.shown(params.path), ctx.cwd)
        # `where` is the path as written down: a secret `${VAR}` in it stays a name
        record = FileRecord(path=params.path, resolved=str(where), exists=False)
        files = []
        fh = open_source(src, ctx.cwd, ctx.shown(params.path))  # CaptureFailed for a link or the key
        if fh is not None:
            with fh:
                st = os.fstat(fh.fileno())
                record.exists, record.size = True, st.st_size
                if record.size <= MAX_COPY:
                    _admit(ctx, st, where)
                    name = where.name or "file"
                    copy = ctx.out_dir / f"{params.name}.data" / name
                    copy.parent.mkdir(parents=True, exist_ok=True)
                    _copy(fh, copy, stat.S_IMODE(st.st_mode))
                    _no_secret(ctx, copy, where)
                    files.append(copy)
                    record.copy_ = f"{params.name}.data/{name}"
        else:
            record.not_regular = _what_is(src)
        meta = ctx.out_dir / record_file(params.name, "file")
        atomic_write_text(meta, dump_record(record))
        return [meta] + files


def _admit(ctx, st: os.stat_result, where) -> None:
    """Refuse, before a byte is copied, what the run's hashing budget refuses of the agent's own files: a file
    that is mostly holes, or one past the step's or the run's budget (its copy is counted in both)."""
    if ctx.admit is None:
        return
    try:
        ctx.admit(st)
    except EvidenceError as exc:
        raise CaptureFailed(f"{where.name or where}: {exc.message}") from None


def _no_secret(ctx, copy, where) -> None:
    """Remove the copy, and fail the capture, when it holds a secret value of the run: the file may be the agent's,
    and an agent file holding one is removed and not taken (`RunStore.add_agent_files`); nothing is stored redacted."""
    forms = ctx.secrets.forms()
    if not forms:
        return
    try:
        hash_regular(copy, refuse=tuple(f for f, _ in forms),
                     refused_as=tuple(f"a secret value of the run ({shown})" for _, shown in forms))
    except HoldsSecret as exc:
        os.unlink(copy)
        raise CaptureFailed(f"{where.name or where}: {exc.message}; not copied into evidence, not taken") from None


def _what_is(path) -> str | None:
    """What stands at `path` when no regular file does ("a FIFO"); None when nothing is there."""
    try:
        return file_kind(os.lstat(path).st_mode)
    except OSError:
        return None


def _copy(fh, copy, mode: int) -> None:
    """Copy at most MAX_COPY bytes into a new file (a retried step's old copy is replaced, never written
    through) that its group and others may read only if they could read the original (`mode`)."""
    if os.path.lexists(copy):
        os.unlink(copy)
    fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666 & (mode | 0o600))
    with os.fdopen(fd, "wb") as out:
        left = MAX_COPY  # a file that grows while it is copied is cut
        while left > 0 and (chunk := fh.read(min(1 << 20, left))):
            out.write(chunk)
            left -= len(chunk)
