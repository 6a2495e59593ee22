"""The command capture: the runner runs a command after the step and keeps exit code, stdout, stderr."""

from __future__ import annotations

import base64

from referee.fsutil import atomic_write_bytes, atomic_write_text
from referee.rundir import CommandRecord, dump_record, record_file
from referee.runner.captures.base import CaptureKind, register
from referee.runner.procs import run_bounded

MAX_TEXT = 1 << 20  # the last 1 MB of stdout and of stderr is kept in the record
MAX_STDOUT_FILE = 64 << 20  # the first 64 MiB of stdout is kept as a `stdout_as` file (a screenshot)


def as_text(data: bytes, cut: bool) -> tuple[str, str | None]:
    """Searchable text of output bytes, plus their exact base64 when they are not UTF-8.

    >>> as_text(b"Saved\\xff ok", False)
    ('Saved\\ufffd ok', 'U2F2ZWT/IG9r')
    """
    skip = 0
    while cut and skip < 3 and skip < len(data) and 0x80 <= data[skip] < 0xC0:
        skip += 1  # a kept tail may begin inside a character: drop its continuation bytes
    data = data[skip:]
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), base64.b64encode(data).decode("ascii")


@register("command")
class CommandCapture(CaptureKind):
    def take(self, params, ctx):
        record = CommandRecord(command=ctx.shown(params.command))
        ran = run_bounded(ctx.expand(params.command), timeout_s=params.timeout_s, cwd=ctx.cwd,
                          env=ctx.env or None, keep=MAX_STDOUT_FILE if params.stdout_as else MAX_TEXT,
                          stdout_head=bool(params.stdout_as))
        record.exit_code, record.timed_out, record.stdout_bytes = ran.exit_code, ran.timed_out, ran.stdout_bytes
        stderr = ran.stderr[-MAX_TEXT:]
        record.stderr = ctx.scrub(as_text(stderr, ran.stderr_bytes > len(stderr))[0])
        files = []
        if params.stdout_as:
            raw = ctx.out_dir / params.stdout_as
            atomic_write_bytes(raw, ran.stdout)
            files.append(raw)
            record.stdout_file = params.stdout_as
        else:
            text, exact = as_text(ran.stdout, ran.stdout_bytes > len(ran.stdout))
            # the text is what validators search; the exact bytes stay beside it when they are not UTF-8
            record.stdout, record.stdout_base64 = ctx.scrub(text), exact
        meta = ctx.out_dir / record_file(params.name, "command")
        atomic_write_text(meta, dump_record(record))
        # with stdout_as the saved file is what validators read by the capture's name (OCR of a screen)
        return files + [meta]
