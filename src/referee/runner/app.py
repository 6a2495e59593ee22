"""The app launcher: start the app under test on a free loopback port, wait until ready, always stop it.

The app's log is the runner's: it may quote what the captures sent (a URL with a `${VAR}` expanded), so
while the run goes on it is a file with no name (unlinked, 0600), which no agent can open, and when the
app stops it is written to `app.log` in the run directory with every secret value replaced by its name.
A runner killed with SIGKILL leaves no app.log.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlsplit

from referee.errors import AppError
from referee.plan.model import AppSpec
from referee.runner.agentproc import LAUNCHER
from referee.runner.envsubst import Secrets, expand
from referee.runner.procs import stop_group
from referee.runner.reaper import Tracker, new_tracker

STOP_GRACE_S = 5.0  # after SIGTERM, before SIGKILL


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def fill(template: str, port: int) -> str:
    """Substitute `{port}` and `{python}` in an app command or URL.

    >>> fill("http://127.0.0.1:{port}", 8080)
    'http://127.0.0.1:8080'
    """
    return template.replace("{port}", str(port)).replace("{python}", sys.executable)


class App:
    """The app under test as a context manager; `url` is app.url with the port filled in."""

    def __init__(self, spec: AppSpec, log_path: Path, secrets: Secrets | None = None) -> None:
        self.spec, self.log_path = spec, log_path
        self.secrets = secrets or Secrets()
        self.port = free_port()
        self.url = fill(spec.url, self.port) if spec.url else None
        self.proc: subprocess.Popen | None = None
        self._tracker: Tracker | None = None
        self._log: BinaryIO | None = None

    def __enter__(self) -> "App":
        if self.spec.start:
            try:
                self.start()
            except BaseException:  # Ctrl-C or SIGTERM while it starts: `with` calls no __exit__ for us
                self.stop()
                raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        if not self.spec.start:
            return  # no app.start: the app is already up at app.url
        self.check_port_free()
        cmd = fill(self.spec.start, self.port)
        env = dict(os.environ)
        # `${NAME}` in app.env: filled from the runner's environment; in app.start the shell expands it from this
        # environment, so a value is never pasted into the command line (the loader checked every one is set)
        env.update({k: fill(expand(v, os.environ), self.port) for k, v in self.spec.env.items()})
        env["PORT"] = str(self.port)
        cwd = Path(self.spec.cwd) if self.spec.cwd else Path.cwd()
        # no name while the run goes on (O_TMPFILE, or made and unlinked at once): not in the run directory,
        # not under /tmp; only this process and the app hold it
        self._log = log = tempfile.TemporaryFile(prefix=".referee-app-log-")
        # a cgroup of its own where the runner may make one: a start command that daemonizes (`setsid app &`)
        # leaves the session stop_group ends, not the cgroup; and a runner killed with SIGKILL leaves it to the
        # next runner's sweep of dead runners' cgroups, as it does an agent's
        self._tracker = tracker = new_tracker("session")
        argv = [sys.executable, "-I", "-S", "-c", LAUNCHER, tracker.join_path, "", "", "", "/bin/sh", "-c", cmd]
        env["REFEREE_LAUNCHED"] = "the app"  # the launcher's word if it cannot (in app.log)
        try:
            self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            raise AppError(f"cannot start the app: {exc}", fix="check app.start in the plan") from None
        self.wait_ready()

    def check_port_free(self) -> None:
        """An app.url with a port of its own (no `{port}`): nothing may answer there before the app starts.
        If something does, the app cannot bind the port and dies, and the readiness probe and every capture
        would be answered by whatever holds it: the plan would be graded against another server."""
        if not self.spec.url or "{port}" in self.spec.url:
            return  # referee picked a free port
        parts = urlsplit(self.url or "")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            return  # not a port: the readiness probe will say so
        if not parts.hostname:
            return
        try:
            with socket.create_connection((parts.hostname, port), timeout=1.0):
                pass
        except OSError:
            return  # nothing answers: free (or unreachable, which the readiness probe reports)
        raise AppError(f"port {port} is in use by another process ({parts.hostname}:{port} answers before the app "
                       "started)", fix="stop it, or let referee pick a port: put {port} in app.start and app.url")

    def check_alive(self) -> None:
        """AppError if the app's process ended with a failure (a crash, a kill): whatever answers at its URL
        now is not the app. A start command that exits 0 once the app is ready (one that starts it in the
        background) is fine."""
        code = self.proc.poll() if self.proc is not None else None
        if code is not None and code != 0:
            tail = self.log_tail()
            raise AppError(f"the app exited with code {code} during the run"
                           + (f" (its log ends: {tail})" if tail else ""),
                           fix="see app.log in the run directory")

    def wait_ready(self) -> None:
        if not self.url:
            return
        import httpx

        ready = self.spec.ready or "/"
        target = ready if "://" in ready else self.url.rstrip("/") + "/" + ready.lstrip("/")
        deadline = time.monotonic() + self.spec.ready_timeout_s
        last = "no answer"
        while time.monotonic() < deadline:
            # exit 0: a start command that put the app in the background and returned, maybe a moment before
            # the app answered; only a failed start is known to be over
            if self.proc is not None and self.proc.poll() not in (None, 0):
                tail = self.log_tail()
                raise AppError(f"the app exited with code {self.proc.returncode} before it was ready"
                               + (f" (its log ends: {tail})" if tail else ""),
                               fix=f"run `{fill(self.spec.start or '', self.port)}` by hand to see why")
            try:
                r = httpx.get(target, timeout=2.0, trust_env=False)
                if r.status_code == 200:
                    self.check_alive()  # the answer came from the app, not from whatever holds its port
                    return
                last = f"HTTP {r.status_code}"
            except httpx.HTTPError as exc:
                last = type(exc).__name__
            time.sleep(0.1)
        returned = self.proc is not None and self.proc.poll() == 0
        self.stop()
        raise AppError(f"the app was not ready at {target} after {self.spec.ready_timeout_s:g}s ({last})"
                       + ("; its start command exited 0 and left nothing answering there" if returned else ""),
                       fix="raise app.ready_timeout_s or check app.ready")

    def log_tail(self, n: int = 300) -> str:
        """The end of the app's log as one line, secrets replaced (it goes into errors and the manifest)."""
        try:
            if self._log is not None:
                size = os.fstat(self._log.fileno()).st_size
                data = os.pread(self._log.fileno(), n, max(0, size - n))
            else:
                data = self.log_path.read_bytes()[-n:]
        except OSError:
            return ""
        return self.secrets.scrub(data.decode("utf-8", errors="replace").strip().replace("\n", " | "))

    def _publish_log(self, log: BinaryIO) -> None:
        """Write the app's log into the run directory, redacted, streamed (the app has stopped: it writes no
        more); a temp file and a rename, like every write there."""
        tmp = None
        try:
            log.seek(0)
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.log_path.parent, prefix=".app.log.", suffix=".tmp")
            os.fchmod(fd, 0o644 & ~_umask())
            with os.fdopen(fd, "wb") as out:
                self.secrets.scrub_stream(log, out)
            os.replace(tmp, self.log_path)
        except OSError:  # no log is better than a run that cannot finish
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        tracker, self._tracker = self._tracker, None
        if tracker is not None:  # what left the session (setsid) gets its SIGTERM and grace with the rest
            tracker.signal_all(signal.SIGTERM)
        if proc is not None:
            stop_group(proc, grace_s=STOP_GRACE_S)
        if tracker is not None:
            deadline = time.monotonic() + STOP_GRACE_S
            while tracker.pids() and time.monotonic() < deadline:
                time.sleep(0.05)
            tracker.kill_all()
            tracker.close()
        log, self._log = self._log, None
        if log is not None:
            self._publish_log(log)
            log.close()
