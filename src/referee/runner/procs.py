"""Child processes of the runner (the app, the agent, capture commands): own group, stopped as a group."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from referee.runner.reaper import kill_each, session_members


def stop_group(proc: subprocess.Popen, grace_s: float = 3.0) -> None:
    """SIGTERM the session of `proc`, then SIGKILL whatever is left after `grace_s`.

    The runner starts apps with `start_new_session=True`, so their children go too, and so do they when
    `proc` itself has already exited: a start command that crashed or returned (`server & exit 3`) leaves its
    server running, and nothing else would stop it once the runner is gone.

    >>> p = subprocess.Popen(["sh", "-c", "sleep 30 & exit 3"], start_new_session=True); _ = p.wait()
    >>> left = session_members(p.pid); stop_group(p); len(left), session_members(p.pid)
    (1, [])
    """
    sid = proc.pid
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(sid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        kill_each(session_members(sid), sig)  # members that left the group but not the session
        deadline = time.monotonic() + grace_s
        while (alive := session_members(sid)) and time.monotonic() < deadline:
            proc.poll()  # reap the leader once it exits (a zombie is not counted)
            time.sleep(0.05)
        if not alive:
            break
    proc.poll()


@dataclass(frozen=True)
class Ran:
    """What `run_bounded` saw: exit code (None: timed out), the kept part of each stream, their whole sizes."""

    exit_code: int | None
    timed_out: bool
    stdout: bytes
    stderr: bytes
    stdout_bytes: int
    stderr_bytes: int


class _Kept:
    """At most `limit` bytes of a stream: its last bytes (a tail) or, with `head`, its first ones."""

    def __init__(self, limit: int, head: bool) -> None:
        self.limit, self.head, self.size = limit, head, 0
        self.buf = bytearray()

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.head:
            self.buf += chunk[: max(0, self.limit - len(self.buf))]
        else:
            self.buf += chunk
            if len(self.buf) > 2 * self.limit:  # trim now and then, not on every chunk
                del self.buf[: len(self.buf) - self.limit]

    def value(self) -> bytes:
        return bytes(self.buf[: self.limit] if self.head else self.buf[-self.limit:])


COMMAND_VAR = "REFEREE_COMMAND"  # the environment variable that carries a command's text to its shell


def run_bounded(cmd: str | Sequence[str], *, timeout_s: float, keep: int, cwd=None, env=None,
                stdout_head: bool = False, drain_s: float = 1.0, prefix: Sequence[str] = (),
                on_start: Callable[[int], None] | None = None) -> Ran:
    """Run a shell command in its own session; keep the last `keep` bytes of stdout and stderr.

    The shell's exit code is what counts: once it has exited, what is already written is read for at most
    `drain_s` more (a daemon it left behind may hold the pipes open forever), then its whole process group
    is killed, as it is when `timeout_s` runs out. `stdout_head` keeps the first bytes instead (a file).
    `prefix` runs the shell through a launcher (an isolated account), which `on_start` gets the pid of.

    The shell reads the command's text from its environment (`COMMAND_VAR`), never from its arguments: a
    `${SECRET}` substituted into it would be in /proc/<pid>/cmdline, which every local user may read, while
    the environment is readable by the process's own user only. A list is an argv, run as it is with no shell
    (a program the runner found itself, with arguments no shell may reinterpret).

    >>> r = run_bounded("echo hi; sleep 30 & exit 3", timeout_s=5, keep=10); (r.exit_code, r.stdout, r.timed_out)
    (3, b'hi\\n', False)
    >>> run_bounded(["printf", "%s", "$HOME;x"], timeout_s=5, keep=10).stdout
    b'$HOME;x'
    """
    if isinstance(cmd, str):
        env = {**(os.environ if env is None else env), COMMAND_VAR: cmd}
        argv = [*prefix, "/bin/sh", "-c", f'eval "${COMMAND_VAR}"']
    else:
        argv = [*prefix, *cmd]
    proc = subprocess.Popen(argv, cwd=cwd, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    if on_start is not None:
        on_start(proc.pid)
    assert proc.stdout is not None and proc.stderr is not None
    out, err = _Kept(keep, stdout_head), _Kept(keep, False)
    kept = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    deadline = time.monotonic() + timeout_s
    code: int | None = None
    try:
        with selectors.DefaultSelector() as sel:
            for fd in kept:
                sel.register(fd, selectors.EVENT_READ)
            while sel.get_map():
                now = time.monotonic()
                if code is None:
                    code = proc.poll()
                    if code is not None:
                        deadline = min(deadline, now + drain_s)
                if now >= deadline:
                    break
                for key, _ in sel.select(timeout=min(0.05, deadline - now)):
                    chunk = os.read(key.fd, 1 << 16)
                    if chunk:
                        kept[key.fd].add(chunk)
                    else:
                        sel.unregister(key.fileobj)
        if code is None:
            code = proc.poll()
            if code is None:  # pipes closed, shell not yet reaped: wait for it within the deadline
                try:
                    code = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    code = None
    finally:
        # the group outlives its leader while a member is left, and its id is not reused meanwhile
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    return Ran(code, code is None, out.value(), err.value(), out.size, err.size)
