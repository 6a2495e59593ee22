"""The referee CLI in the test's own process: what `python -m referee.cli.main ARGS` would print and return.

A child interpreter costs 0.5-0.8 s before any work (issue 31); this calls `referee.cli.main.main` instead,
with what the child would have had:

- the environment `env` (all of it, as a child gets it), the working folder `cwd`, the umask;
- file descriptors 0, 1 and 2: `input` (or nothing) on a pipe, two temporary files for the output, so the
  processes the CLI starts (agents, apps, validators' commands) write where the child's would have, and the
  test sees that output as it saw the child's (a secret an agent prints must not reach the console);
- `sys.stdin`, `sys.stdout` and `sys.stderr` on those descriptors: UTF-8, unbuffered, as PYTHONUNBUFFERED
  gives the child. A thread the test started before the call (a stub server) keeps the old streams;
- fresh caches that read the environment or files (a new process starts with none), and no forkserver left
  for the next command (its pool's workers would inherit this command's environment and folder);
- the signal handlers, the `ITIMER_REAL` timer (pytest-timeout's alarm: the auditor's record budget uses the
  same timer) and `sys.unraisablehook` as they were, whatever the command did.

`process_needed(env)` says when a child cannot be stood in for (other import paths, another locale or
interpreter setting, a call from a thread, an event loop running here): the callers then start the child as
before. A test about signals, process groups, what the runner's own process imports or shows an agent (its
/proc/PID/environ is the environment it was started with), `-j` workers or the console script starts the
child itself (`process=True`).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TextIO

# interpreter settings the child would read at start-up: in this process they are already fixed
_STARTUP_VARS = ("PYTHONSAFEPATH", "PYTHONHASHSEED", "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONWARNINGS",
                 "PYTHONMALLOC", "PYTHONHOME", "PYTHONNOUSERSITE", "PYTHONUSERBASE", "PYTHONSTARTUP",
                 "PYTHONDEVMODE", "PYTHONINSPECT", "PYTHONOPTIMIZE", "PYTHONPLATLIBDIR", "PYTHONEXECUTABLE",
                 "LC_ALL", "LC_CTYPE", "LANG")
_SIGNALS = [s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None), signal.SIGALRM,
                        signal.SIGCHLD, signal.SIGPIPE, signal.SIGUSR1, signal.SIGUSR2) if s is not None]


def process_needed(env: Mapping[str, str] | None) -> str | None:
    """Why `env`, or this process's state, needs a child interpreter (None when this process can stand in).

    >>> process_needed(None) is None
    True
    >>> process_needed({**os.environ, "PYTHONSAFEPATH": "1"})
    'PYTHONSAFEPATH differs'
    >>> process_needed({**os.environ, "PYTHONPATH": "/plugins"})
    'PYTHONPATH names /plugins'
    """
    if threading.current_thread() is not threading.main_thread():
        return "called from a thread (the environment, folder and descriptors are the whole process's)"
    try:  # a running event loop here (Playwright's sync API, which the screens tests hold open): the CLI's
        asyncio.get_running_loop()  # own Playwright or asyncio.run would refuse to start under it
        return "an asyncio loop runs in this thread"
    except RuntimeError:
        pass
    if env is None:
        return None
    for var in _STARTUP_VARS:
        if env.get(var) != os.environ.get(var):
            return f"{var} differs"
    here = {os.path.realpath(p or ".") for p in sys.path}
    for entry in (env.get("PYTHONPATH") or "").split(os.pathsep):
        if entry and os.path.realpath(entry) not in here:
            return f"PYTHONPATH names {entry}"
    return None


def run_in_process(args: Sequence[Any], *, cwd: str | os.PathLike[str] | None = None,
                   env: Mapping[str, str] | None = None, input: str | bytes | None = None) -> tuple[int, bytes, bytes]:
    """`referee ARGS` in this process: (exit code, stdout bytes, stderr bytes), as a child would give them.

    >>> rc, out, err = run_in_process(["--version"])
    >>> rc, out.startswith(b"referee"), err
    (0, True, b'')
    """
    from referee.cli.main import main

    assert threading.current_thread() is threading.main_thread(), "in-process CLI from a thread: see process_needed"
    with _environment(env), _folder(cwd), _kept_process_state(), _fresh_caches(), _own_forkserver(), \
            _std_fds(input) as got:
        try:
            rc = main([os.fspath(a) if isinstance(a, os.PathLike) else str(a) for a in args])
        except SystemExit as exc:  # what the child's interpreter would turn it into
            code = exc.code
            rc = code if isinstance(code, int) else (0 if code is None else 1)
            if code is not None and not isinstance(code, int):
                print(code, file=sys.stderr)
        except BaseException:  # REFEREE_DEBUG re-raises: the child would print the traceback, exit 1
            traceback.print_exc()
            rc = 1
    return rc, got["out"], got["err"]


def completed(args: Sequence[Any], *, cwd: str | os.PathLike[str] | None = None,
              env: Mapping[str, str] | None = None, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """`referee ARGS` in this process (in a child where `process_needed`), as `subprocess.run(["referee", *ARGS],
    capture_output=True, text=True)` returns it.

    >>> completed(["kinds", "--no-such-option"]).returncode
    2
    """
    if process_needed(env) is not None:
        return subprocess.run([sys.executable, "-m", "referee.cli.main", *map(str, args)], cwd=cwd, env=env,
                              input=input, capture_output=True, text=True, timeout=600)
    rc, out, err = run_in_process(args, cwd=cwd, env=env, input=input)
    return subprocess.CompletedProcess(["referee", *map(str, args)], rc, text_of(out), text_of(err))


def text_of(data: bytes, *, universal_newlines: bool = True) -> str:
    """Bytes as `subprocess.run(..., text=True)` gives them: UTF-8, newlines translated."""
    text = data.decode("utf-8", "replace")
    return text.replace("\r\n", "\n").replace("\r", "\n") if universal_newlines else text


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None) -> Iterator[None]:
    before = dict(os.environ)  # restored also after env=None: a command may set a variable (`referee demo` does)
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(before)


@contextlib.contextmanager
def _folder(cwd: str | os.PathLike[str] | None) -> Iterator[None]:
    before = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(before)


@contextlib.contextmanager
def _kept_process_state() -> Iterator[None]:
    handlers = {s: signal.getsignal(s) for s in _SIGNALS}
    alarm, started = signal.getitimer(signal.ITIMER_REAL), time.monotonic()
    hook, mask = sys.unraisablehook, os.umask(0)
    os.umask(mask)
    try:
        yield
    finally:
        for s, h in handlers.items():
            if h is not None and signal.getsignal(s) is not h:
                signal.signal(s, h)
        if alarm[0] > 0 and signal.getitimer(signal.ITIMER_REAL)[0] == 0:  # the command reset pytest-timeout's
            signal.setitimer(signal.ITIMER_REAL, max(alarm[0] - (time.monotonic() - started), 0.01), alarm[1])
        sys.unraisablehook = hook
        os.umask(mask)


@contextlib.contextmanager
def _fresh_caches() -> Iterator[None]:
    """Empty the caches that read the environment or a file, as a new process has them (the others hold
    pure functions of their arguments, or facts of this machine)."""
    for module, name in (("referee.runner.reaper", "cgroup_base"), ("referee.runner.isolation", "bwrap_problem"),
                         ("referee.audit.decide.policyfile", "load_policy")):
        fn = getattr(sys.modules.get(module), name, None)
        if fn is not None:
            fn.cache_clear()
    yield


@contextlib.contextmanager
def _own_forkserver() -> Iterator[None]:
    """Stop a forkserver the command started: the next command's pool workers must fork from one with its
    own environment and working folder, as a new process's would, not this one's."""
    from multiprocessing import forkserver

    server = forkserver._forkserver
    before = server._forkserver_pid
    try:
        yield
    finally:
        if before is None and server._forkserver_pid is not None:
            server._stop()


class _Router:
    """sys.stdout or sys.stderr during the call: the command's threads write to its descriptor, threads the
    test started before the call (servers) to the stream they had."""

    def __init__(self, mine: io.TextIOWrapper, old: TextIO, foreign: set[threading.Thread]) -> None:
        self._mine, self._old, self._foreign = mine, old, foreign

    def _target(self) -> Any:
        return self._old if threading.current_thread() in self._foreign else self._mine

    def write(self, s: str) -> int:
        return self._target().write(s)

    def writelines(self, lines: Any) -> None:
        self._target().writelines(lines)

    def flush(self) -> None:
        self._target().flush()

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target(), name)


def _feed(fd: int, data: bytes) -> None:
    try:
        with open(fd, "wb", closefd=True) as pipe:
            pipe.write(data)
    except OSError:  # the command stopped reading
        pass


@contextlib.contextmanager
def _std_fds(input: str | bytes | None) -> Iterator[dict[str, bytes]]:
    got: dict[str, bytes] = {"out": b"", "err": b""}
    foreign = {t for t in threading.enumerate() if t is not threading.main_thread()}
    old_streams = sys.stdin, sys.stdout, sys.stderr
    for stream in old_streams[1:]:
        with contextlib.suppress(Exception):
            stream.flush()
    saved = [os.dup(fd) for fd in (0, 1, 2)]
    files = [tempfile.TemporaryFile(), tempfile.TemporaryFile()]
    feeder = None
    try:
        if input is None:
            src = os.open(os.devnull, os.O_RDONLY)
        else:
            src, w = os.pipe()
            data = input.encode() if isinstance(input, str) else input
            feeder = threading.Thread(target=_feed, args=(w, data), daemon=True)
            feeder.start()
        os.dup2(src, 0)
        os.close(src)
        os.dup2(files[0].fileno(), 1)
        os.dup2(files[1].fileno(), 2)
        sys.stdin = io.TextIOWrapper(io.FileIO(os.dup(0), "r"), encoding="utf-8", errors="surrogateescape")
        outs = [io.TextIOWrapper(io.FileIO(os.dup(fd), "w"), encoding="utf-8", errors="surrogateescape",
                                 write_through=True, line_buffering=True) for fd in (1, 2)]
        sys.stdout = _Router(outs[0], old_streams[1], foreign)  # type: ignore[assignment]
        sys.stderr = _Router(outs[1], old_streams[2], foreign)  # type: ignore[assignment]
        try:
            yield got
        finally:
            for stream in (*outs, sys.stdin):
                with contextlib.suppress(Exception):
                    stream.close()
    finally:
        sys.stdin, sys.stdout, sys.stderr = old_streams
        for fd, keep in zip((0, 1, 2), saved):
            os.dup2(keep, fd)
            os.close(keep)
        if feeder is not None:
            feeder.join(5)
        for key, fh in zip(("out", "err"), files):
            fh.seek(0)
            got[key] = fh.read()
            fh.close()
