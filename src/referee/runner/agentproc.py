"""One agent step as processes: start it isolated, stop it at its timeout, end every process it made, keep its output.

The agent's stdin, stdout and stderr are unlinked temporary files the runner opened, never pipes:
a grandchild that keeps stdout open cannot make the runner wait, and nothing the agent writes can
block it. The last `OUTPUT_KEEP` bytes of each are kept; the total size is recorded.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from referee.core.fstree import remove_tree
from referee.runner.isolation import Sandbox
from referee.runner.limits import launcher_arg, limit_reached
from referee.runner.reaper import Tracker

OUTPUT_KEEP = 1 << 20  # bytes of stdout and of stderr kept in agent/<step>/
GRACE_S = 2.0  # after SIGTERM at the timeout, before SIGKILL
NOT_STARTED = 125  # the launcher's exit code when it could not become the agent

# Runs as the runner, becomes the agent: joins the step's cgroup (so nothing it forks escapes), sets the
# plan's limits (hard ones too: the agent cannot raise them), drops to the agent's account, forbids any
# way back (no_new_privs: setuid programs stay unprivileged), execs; for a bwrap sandbox of a root runner it hands
# bwrap the seccomp filter (REFEREE_SECCOMP, `privileges.setid_filter`). The one way referee drops to another account:
# the browser's launcher (browseruser) execs it too, naming what it starts in REFEREE_LAUNCHED.
LAUNCHER = r"""
import os, sys
what = os.environ.pop("REFEREE_LAUNCHED", "the agent")
seccomp = os.environ.pop("REFEREE_SECCOMP", "")
procs, limits, uid, gid = sys.argv[1:5]
argv = sys.argv[5:]
try:
    if "@REFEREE_SECCOMP_FD@" in argv:
        # bwrap reads its seccomp program from a file descriptor: one it inherits, holding the runner's filter
        if not seccomp:
            raise OSError("no seccomp filter was given for the sandbox")
        fd = os.memfd_create("referee-seccomp", 0)
        os.write(fd, bytes.fromhex(seccomp))
        os.lseek(fd, 0, 0)
        os.set_inheritable(fd, True)
        argv = [str(fd) if a == "@REFEREE_SECCOMP_FD@" else a for a in argv]
    if procs:
        fd = os.open(procs, os.O_WRONLY)
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
    if limits:
        import resource
        for item in limits.split(","):
            name, _, soft_hard = item.partition("=")
            soft, _, hard = soft_hard.partition(":")
            resource.setrlimit(getattr(resource, "RLIMIT_" + name), (int(soft), int(hard)))
    if uid:
        # no_new_privs before the drop: ctypes is imported while the interpreter's files are still readable (as
        # the agent's account an interpreter under /root cannot import it), and a failure stops the start
        import ctypes
        if ctypes.CDLL(None, use_errno=True).prctl(38, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        os.setgroups([])
        os.setgid(int(gid))
        os.setuid(int(uid))
    os.execv(argv[0], argv)
except (OSError, ImportError) as exc:
    sys.stderr.write("referee: cannot start %s: %s\n" % (what, exc))
    os._exit(125)
"""

_SHELL_CANNOT = re.compile(r"^(/bin/)?sh: .*(not found|Permission denied|No such file or directory|cannot execute)")


def launch_line(sandbox: Sandbox, argv: list[str], limits: str = "") -> tuple[list[str], Tracker]:
    """The command line that runs `argv` (already `sandbox.wrap`ped) as the sandbox's agent, and the tracker of
    its processes: start it, then `tracker.started(pid)`; `kill_all` and `close` the tracker when done."""
    tracker = sandbox.tracker()
    ident = sandbox.identity()
    return [sys.executable, "-I", "-S", "-c", LAUNCHER, tracker.join_path, limits,
            str(ident[0]) if ident else "", str(ident[1]) if ident else "", *argv], tracker


@dataclass(frozen=True)
class AgentOutput:
    """What one agent step left: exit status, whether it was started at all, and its output's tail."""

    exit_code: int | None
    timed_out: bool
    started: bool
    killed: int  # processes still alive when the step ended, killed by the runner
    stdout: bytes  # the last OUTPUT_KEEP bytes
    stderr: bytes
    stdout_bytes: int
    stderr_bytes: int
    error: str | None = None


def _tail(fh: BinaryIO) -> tuple[bytes, int]:
    size = os.fstat(fh.fileno()).st_size
    fh.seek(max(0, size - OUTPUT_KEEP))
    return fh.read(OUTPUT_KEEP), size


def _could_not_start(code: int | None, stderr: bytes) -> str | None:
    """Why the agent never ran: the launcher failed, or the shell found no such program (126/127)."""
    lines = stderr.decode("utf-8", errors="replace").strip().splitlines()
    last = lines[-1] if lines else ""
    if code == NOT_STARTED and last.startswith("referee: cannot start the agent"):
        return last.removeprefix("referee: ")
    if code in (126, 127) and _SHELL_CANNOT.match(last):
        return f"the agent could not be started: {last}"
    return None


def run_agent(argv: list[str], *, sandbox: Sandbox, agent_dir: Path, cwd: Path, env: dict[str, str],
              stdin: bytes, timeout_s: float) -> AgentOutput:
    """Run one agent step in `sandbox` and wait for it; when it exits or its time is up, end every
    process it started (SIGTERM, `GRACE_S`, then SIGKILL at the timeout; SIGKILL for leftovers).

    >>> from referee.runner.isolation import Sandbox
    >>> sb = Sandbox("none", "none", "", Path("."), Path("."))
    >>> out = run_agent(["/bin/sh", "-c", "echo hi"], sandbox=sb, agent_dir=Path("."), cwd=Path("."),
    ...                 env={}, stdin=b"", timeout_s=10)
    >>> out.exit_code, out.stdout
    (0, b'hi\\n')
    """
    sandbox.prepare(agent_dir)
    chosen, _ = sandbox.applied_limits()
    launcher, tracker = launch_line(sandbox, sandbox.wrap(argv, agent_dir), launcher_arg(chosen))
    timed_out, killed = False, 0
    with tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout, tempfile.TemporaryFile() as ferr:
        fin.write(stdin)
        fin.seek(0)
        proc: subprocess.Popen | None = None
        # the start is inside the try: a Ctrl-C or SIGTERM to the runner while Popen waits for the exec still ends
        # whatever of the agent has joined the tracker (Popen forgets the child it forked when it is interrupted)
        try:
            try:
                proc = subprocess.Popen(launcher, cwd=cwd, env=sandbox.env(env), stdin=fin, stdout=fout,
                                        stderr=ferr, start_new_session=True)
            except OSError as exc:
                return AgentOutput(None, False, False, 0, b"", b"", 0, 0, error=f"cannot start the agent: {exc}")
            tracker.started(proc.pid)
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                tracker.signal_all(signal.SIGTERM)
                try:
                    proc.wait(timeout=GRACE_S)
                except subprocess.TimeoutExpired:
                    pass
        finally:  # also on Ctrl-C / SIGTERM to the runner: nothing of the agent outlives the step
            killed = tracker.kill_all()
            if proc is not None:
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
            tracker.close()
        out, out_size = _tail(fout)
        err, err_size = _tail(ferr)
    code = proc.returncode
    why = _could_not_start(code, err)
    error = why or (f"timed out after {timeout_s:g}s" if timed_out else None) or limit_reached(code, chosen)
    return AgentOutput(code, timed_out, why is None, killed, out, err, out_size, err_size, error=error)


def write_output(agent_dir: Path, name: str, data: bytes) -> Path:
    """Write the runner's copy of the agent's output into its folder, replacing whatever the agent left
    under that name (a link, a folder, a pipe) rather than writing through it; no bytes, no file."""
    path = agent_dir / name
    if os.path.lexists(path):
        remove_tree(path)  # a link is removed, not followed; a folder however deep, without recursion
    if not data:
        return path
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return path
