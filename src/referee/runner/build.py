"""`app.build`: the app built once per run, before it starts; its output kept as build.log, its end in the manifest.

The build runs as the runner (like `app.start`: it is the user's command, never the agent's) in its own
session, with `app.cwd` and `app.env`, bounded by `app.build_timeout_s` (SIGTERM to its whole session,
then SIGKILL). Its output goes to a file with no name while it runs and lands in the run directory as
`build.log` with every secret value replaced, as app.log does; the manifest records how it ended and
build.log's SHA-256, so the sealed manifest seals the log. A build that does not exit 0 stops the run
before the app and the agent start: every step is then ERROR, naming the exit and the log's last lines.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import BinaryIO

from referee.core.fsutil import sha256_bytes
from referee.errors import AppError
from referee.grader.outcome import tail_lines
from referee.plan.model import AppSpec
from referee.rundir.schema import BuildRecord
from referee.runner.envsubst import Secrets, expand
from referee.runner.procs import stop_group
from referee.runner.store import RunStore

__all__ = ["BUILD_LOG", "BuildFailed", "build_failure", "build_or_stop", "run_build"]

BUILD_LOG = "build.log"
STOP_GRACE_S = 2.0
TAIL_LINES = 10


class BuildFailed(AppError):
    """`app.build` did not exit 0: the run stops before the app starts (manifest.error says so)."""


def build_failure(rec: BuildRecord) -> str:
    """The line a failed build leaves in the manifest's `error`, and so in every step's reason.

    >>> build_failure(BuildRecord(command="make", exit_code=2, log_tail=["cc: error: x.c: no such file"]))
    'the build failed (exit 2); build.log ends: cc: error: x.c: no such file'
    """
    tail = " | ".join(rec.log_tail[-5:])
    return f"the build failed ({rec.status()})" + (f"; {BUILD_LOG} ends: {tail}" if tail else "")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _publish(log: BinaryIO, path: Path, secrets: Secrets) -> bytes:
    """build.log in the run directory, secrets replaced, written by temp file and rename; its bytes."""
    log.seek(0)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".build.log.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644 & ~_umask())
        with os.fdopen(fd, "w+b") as out:
            secrets.scrub_stream(log, out)
            out.flush()
            out.seek(0)
            data = out.read()
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return data


def run_build(spec: AppSpec, run_dir: Path, secrets: Secrets, cwd: Path | None = None) -> BuildRecord:
    """Run `spec.build` once (see the module docstring) and return its record; the caller seals it in the manifest."""
    assert spec.build, "run_build needs app.build"
    cmd = spec.build.replace("{python}", sys.executable)
    env = dict(os.environ)
    # as for app.start: app.env's `${NAME}` filled here, the command's expanded by the shell from this environment
    env.update({k: expand(v, os.environ).replace("{python}", sys.executable) for k, v in spec.env.items()})
    where = Path(spec.cwd) if spec.cwd else (cwd or Path.cwd())
    rec = BuildRecord(command=secrets.scrub(cmd), timeout_s=spec.build_timeout_s)
    began = time.monotonic()
    with tempfile.TemporaryFile(prefix=".referee-build-log-") as log:  # no name while it runs
        try:
            proc = subprocess.Popen(["/bin/sh", "-c", cmd], cwd=where, env=env, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            rec.error = secrets.scrub(f"{exc.strerror or exc} (cwd {where})")
        else:
            try:
                rec.exit_code = proc.wait(timeout=spec.build_timeout_s)
            except subprocess.TimeoutExpired:
                rec.timed_out = True
            finally:  # whatever it left running (a daemon, or all of it on a timeout or Ctrl-C) goes with it
                stop_group(proc, grace_s=STOP_GRACE_S)
            if rec.timed_out:
                rec.exit_code = None
        rec.seconds = round(time.monotonic() - began, 3)
        data = _publish(log, run_dir / BUILD_LOG, secrets)
    rec.log_sha256, rec.log_size = sha256_bytes(data), len(data)
    rec.log_tail = tail_lines(data, n=TAIL_LINES)
    return rec


def build_or_stop(spec: AppSpec, run_dir: Path, secrets: Secrets, store: RunStore) -> None:
    """Run the build, seal its record in the manifest, and raise BuildFailed when it did not exit 0, so neither the
    app nor the agent starts."""
    rec = run_build(spec, run_dir, secrets)
    store.manifest.build = rec
    store.flush()
    if rec.failed:
        raise BuildFailed(build_failure(rec), fix=f"see {BUILD_LOG} in the run directory")
