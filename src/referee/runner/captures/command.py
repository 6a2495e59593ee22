"""The command capture: the runner runs a command after the step and keeps exit code, stdout, stderr."""

from __future__ import annotations

import base64
import subprocess

from referee.fsutil import atomic_write_bytes, atomic_write_text
from referee.rundir import CommandRecord, dump_record, record_file
from referee.runner.captures.base import CaptureKind, register

MAX_TEXT = 1 << 20


@register("command")
class CommandCapture(CaptureKind):
    def take(self, params, ctx):
        cmd = ctx.expand(params.command)
        record = CommandRecord(command=ctx.shown(params.command))
        out = b""
        try:
            proc = subprocess.run(cmd, shell=True, cwd=ctx.cwd, env=ctx.env or None, capture_output=True,
                                  timeout=params.timeout_s, stdin=subprocess.DEVNULL)
            record.exit_code, out = proc.returncode, proc.stdout
            record.stderr = ctx.scrub(proc.stderr[-MAX_TEXT:].decode("utf-8", errors="replace"))
        except subprocess.TimeoutExpired as exc:
            record.timed_out = True
            out = exc.stdout or b""
        files = []
        if params.stdout_as:
            raw = ctx.out_dir / params.stdout_as
            atomic_write_bytes(raw, out)
            files.append(raw)
            record.stdout_file = params.stdout_as
        else:
            try:
                record.stdout = ctx.scrub(out[-MAX_TEXT:].decode("utf-8"))
            except UnicodeDecodeError:
                record.stdout_base64 = base64.b64encode(out[-MAX_TEXT:]).decode("ascii")
        meta = ctx.out_dir / record_file(params.name, "command")
        atomic_write_text(meta, dump_record(record))
        # with stdout_as the saved file is what validators read by the capture's name (OCR of a screen)
        return files + [meta]
