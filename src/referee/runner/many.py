"""Many plans at once: each in its own `referee run` process, so each has its own run directory, app and ports.

`run_plans` starts at most `-j` of them on threads here, or sends them to a Dask cluster whose
workers have the apps, agents and browsers the plans need. Each child runs the plan text the
parent validated (sent on its stdin with its SHA-256), never the file again: a plan's agent that
rewrites a later plan's file changes nothing. Children import referee from where this process did
and nothing from the working directory (the agent's workspace). A stop signal (SIGINT, SIGTERM,
SIGHUP) to this process reaches every running plan once, as SIGTERM, so each stops its app and
agent and leaves a gradeable run directory; plans not started are not run. Each plan's output for
people (its progress, verdicts, warnings, run directory) comes up line by line as the plan runs when it
runs here (`on_line`), as one block when it is done on a Dask worker; the caller prints one combined
summary and exits with the worst plan's code (130 when interrupted).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO, Callable, Iterator

from referee.core.executors import ExecutorOptions, ThreadPool, make_pool, map_chunks
from referee.core.fsutil import sha256_bytes
from referee.core.stopsignals import handling
from referee.errors import PlanError
from referee.plan.loader import MAX_PLAN_BYTES  # a plan on stdin is bounded like a plan file

EXIT_INTERRUPTED = 130
STOP_GRACE_S = 30.0  # after a stop signal, how long a plan's runner has to stop its app and agent before SIGKILL
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

# What a child interpreter runs: the import path it is given (argv[1]) and nothing else, then the CLI.
# `-I` already left out the working directory, PYTHONPATH and the user's site folder. The child asks for a
# SIGTERM when the thread that started it goes (PR_SET_PDEATHSIG): a parent killed with SIGKILL, or a Dask
# worker taken down with its cluster, would otherwise leave the plan, its app and its agent running as orphans
# with no result; a SIGTERM makes the child stop them and leave a gradeable run directory. argv[2] is the
# parent's pid: a parent gone before the request was made is seen as a changed parent pid.
_BOOT = ("import sys, json, os, signal\n"
         "sys.path[:] = json.loads(sys.argv.pop(1)); parent = int(sys.argv.pop(1)); sys.argv[0] = 'referee'\n"
         "try:\n"
         "    import ctypes; ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)\n"
         "except (ImportError, OSError, AttributeError):\n"
         "    pass\n"
         "if os.getppid() != parent:\n"
         "    sys.exit('referee: the process that started this plan is gone; not run')\n"
         "from referee.cli.main import main; sys.exit(main())")


@dataclass(frozen=True)
class PlanJob:
    """One plan to run: its file, where run directories go, the agent, strictness, the folder to run from.

    `text`: the plan's text as validated; the child runs it (None: the child reads `plan` itself)."""

    plan: str
    out: str
    agent: str | None = None
    strict: bool = False
    cwd: str | None = None
    columns: int = 100  # its runner's COLUMNS (its output is no terminal: plain lines, never cut at this width)
    label: str = ""     # the plan as the user named it
    extra: tuple[str, ...] = ()  # more `referee run` arguments: --only/-k/--fail-fast/--retries
    text: str | None = None


@dataclass(frozen=True)
class PlanRun:
    """What one plan's `referee run --json` gave: exit code, its JSON runs, its output for people, where it ran.

    `note`: why it has no result of its own (not started, stopped), shown in the summary instead of counts."""

    plan: str
    code: int
    runs: list[dict] = field(default_factory=list)
    output: str = ""
    host: str = ""
    note: str = ""


def import_path(path: list[str] | None = None, cwd: str | None = None) -> list[str]:
    """The import path for a child referee: this process's, without the working directory (or a relative
    entry), with the folder referee was imported from first.

    >>> import_path(["/w", "", "lib", "/usr/lib/python3"], cwd="/w")[1:]
    ['/usr/lib/python3']
    """
    import referee

    cwd = os.path.normpath(cwd or os.getcwd())
    here = str(Path(referee.__file__).resolve().parent.parent)
    out = [here]
    for p in sys.path if path is None else path:
        if p and os.path.isabs(p) and os.path.normpath(p) != cwd and p not in out:
            out.append(p)
    return out


def child_argv(*args: str) -> list[str]:
    """`referee ARGS` as a child process that imports nothing from its working directory.

    `python -m referee` started in the agent's workspace would put that folder first on sys.path: a
    `yaml.py` the agent left there would run as the runner. `-I` leaves out the working directory,
    PYTHONPATH and the user site; the child gets this process's import path instead (`import_path`),
    so an editable install or a PYTHONPATH checkout imports the same referee here and there.

    >>> child_argv("run", "p.yaml")[1:3]
    ['-I', '-X']
    """
    flags = ["-I", "-X", "utf8"]  # utf8: the child's output is decoded as UTF-8 here, whatever the locale
    if sys.flags.dont_write_bytecode:
        flags.append("-B")
    flags += [f"-W{w}" for w in sys.warnoptions]
    return [sys.executable, *flags, "-c", _BOOT, json.dumps(import_path()), str(os.getpid()), *args]


def read_frozen_plan(stream: IO[bytes], sha256: str, name: str) -> str:
    """The plan text a `-j` parent sent on stdin, checked against the SHA-256 it validated (PlanError if not)."""
    data = stream.read(MAX_PLAN_BYTES + 1)
    if len(data) > MAX_PLAN_BYTES or sha256_bytes(data) != sha256.lower():
        raise PlanError("the plan text on stdin is not the text that was validated (its SHA-256 differs)",
                        file=name, fix="run the plan file directly: `referee run PLAN`")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PlanError(f"cannot read plan: {exc}", file=name) from None


class Children:
    """The `referee run` processes of this process's plans: started unless a stop came, stopped once each."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # RLock: the stop comes from a signal handler on the main thread
        self._live: set[subprocess.Popen] = set()
        self.stopped_by: str | None = None  # the signal's name, once one came
        self.killed: list[int] = []         # runners that outlived STOP_GRACE_S
        self._timer: threading.Timer | None = None

    def start(self, cmd: list[str], **kw) -> subprocess.Popen | None:
        """Popen(cmd) in a session of its own (a terminal's Ctrl-C reaches only the parent, which forwards
        it once); None once a stop came."""
        with self._lock:
            if self.stopped_by is not None:
                return None
            proc = subprocess.Popen(cmd, start_new_session=True, **kw)
            self._live.add(proc)
            return proc

    def done(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._live.discard(proc)

    def stop(self, why: str, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM every running plan's runner (it stops its app and agent and grades what it has), once;
        SIGKILL those still running after `grace_s`."""
        with self._lock:
            if self.stopped_by is not None:
                return
            self.stopped_by = why
            live = list(self._live)
        for proc in live:
            _signal(proc, signal.SIGTERM)
        self._timer = threading.Timer(grace_s, self._kill_left)
        self._timer.daemon = True
        self._timer.start()

    def close(self) -> None:
        """Every plan has ended: no SIGKILL is due any more."""
        if self._timer is not None:
            self._timer.cancel()

    def _kill_left(self) -> None:
        with self._lock:
            live = [p for p in self._live if p.poll() is None]
        for proc in live:
            self.killed.append(proc.pid)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _signal(proc: subprocess.Popen, sig: int) -> None:
    try:
        if proc.poll() is None:
            os.kill(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def run_plan_process(job: PlanJob, children: Children | None = None,
                     on_line: Callable[[str], None] | None = None) -> PlanRun:
    """Run one plan as `referee run PLAN --json` in a process of its own (here, or on a Dask worker).

    Its own process means its own app on its own free port, its own run directory, its own signal
    handling: a crash in one plan leaves the others as they are. `children`: where this process keeps
    its running plans, so a stop reaches them (None: a registry of this call alone, as on a Dask worker).
    `on_line`: hears each line of its output for people (stderr) as it is written.
    """
    children = children if children is not None else Children()
    host = socket.gethostname()
    args = ["run", job.plan, "--out", job.out, "--json"]
    data = None
    if job.text is not None:
        data = job.text.encode("utf-8")
        args += ["--plan-on-stdin", sha256_bytes(data)]
    if job.agent:
        args += ["--agent", job.agent]
    if job.strict:
        args.append("--strict")
    args += list(job.extra)
    env = dict(os.environ, COLUMNS=str(job.columns))
    proc = children.start(child_argv(*args), cwd=job.cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL)
    if proc is None:
        return PlanRun(job.label or job.plan, EXIT_INTERRUPTED, [], "", host, note="not run: interrupted")
    try:
        out, err = proc.communicate(input=data) if on_line is None else _streamed(proc, data, on_line)
    finally:
        children.done(proc)
    try:
        runs = json.loads(out.decode("utf-8", "replace"))["runs"]
    except (ValueError, KeyError, TypeError):
        runs = []
    note = f"stopped by signal {-proc.returncode}" if proc.returncode < 0 else ""
    return PlanRun(job.label or job.plan, proc.returncode, runs, err.decode("utf-8", "replace"), host, note)


def _streamed(proc: subprocess.Popen, data: bytes | None, on_line: Callable[[str], None]) -> tuple[bytes, bytes]:
    """`proc.communicate(data)`, with each line of its stderr handed to `on_line` as it comes (its stdout is the
    JSON object, read whole). Its stdin is written and its stdout read on threads of their own, so no pipe fills
    while another is waited on."""
    out: list[bytes] = []
    err: list[bytes] = []

    def feed() -> None:
        assert proc.stdin is not None
        try:
            proc.stdin.write(data or b"")
        except (BrokenPipeError, OSError):  # it stopped before reading its plan: its stderr says why
            pass
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass

    def drain() -> None:
        assert proc.stdout is not None
        out.append(proc.stdout.read())

    threads = [threading.Thread(target=drain, daemon=True)]
    if proc.stdin is not None:
        threads.append(threading.Thread(target=feed, daemon=True))
    for t in threads:
        t.start()
    assert proc.stderr is not None
    for raw in proc.stderr:
        err.append(raw)
        try:
            on_line(raw.decode("utf-8", "replace").rstrip("\r\n"))
        except Exception:  # a line that cannot be shown is kept in the output all the same
            pass
    for t in threads:
        t.join()
    proc.wait()
    return b"".join(out), b"".join(err)


@dataclass
class Combined:
    """The plans' results together: per plan its run, and the exit code of them all."""

    runs: list[PlanRun] = field(default_factory=list)
    interrupted: str | None = None  # the signal that stopped the plans (or "interrupt")
    remote: bool = False  # on a running Dask scheduler's workers, which no signal from here reaches

    @property
    def exit_code(self) -> int:
        codes = [r.code for r in self.runs]
        if self.interrupted or EXIT_INTERRUPTED in codes:
            return EXIT_INTERRUPTED
        return max([c if c >= 0 else 1 for c in codes], default=0)

    def summary_lines(self) -> list[str]:
        """One line per plan (its verdict counts, or its exit code when it ran no step), then the total."""
        lines: list[str] = []
        total: dict[str, int] = {}
        for r in self.runs:
            counts: dict[str, int] = {}
            for run in r.runs:
                for k, v in (run.get("summary") or {}).items():
                    counts[k] = counts.get(k, 0) + int(v)
                    total[k] = total.get(k, 0) + int(v)
            # a plan stopped before it answered may have made its run directory (under --out) all the same
            dirs = ", ".join(str(run.get("run_dir")) for run in r.runs) or (
                "its run directory, if it started one, is under --out" if r.code == EXIT_INTERRUPTED
                else "no run directory")
            what = " ".join(f"{k} {v}" for k, v in counts.items()) or r.note or f"exit {r.code}"
            lines.append(f"  {r.plan}: {what} (exit {r.code}; {dirs}{'; on ' + r.host if r.host else ''})")
        lines.append(f"plans: {len(self.runs)}; " + (" ".join(f"{k} {v}" for k, v in total.items()) or "no steps")
                     + f"; exit {self.exit_code}")
        if self.interrupted and self.remote:
            lines.append(f"interrupted ({self.interrupted}): plans already running on the scheduler's workers "
                         "cannot be signalled from here and run to their end there")
        elif self.interrupted:
            lines.append(f"interrupted ({self.interrupted}): the plans that were running were stopped, with their "
                         "apps and agents; their run directories are gradeable with `referee grade`")
        return lines


def run_plans(jobs: list[PlanJob], options: ExecutorOptions, *,
              on_done: Callable[[PlanRun], None] | None = None,
              on_line: Callable[[PlanJob, str], None] | None = None) -> Combined:
    """Run every plan, at most `options.n_workers` at once (threads here) or on Dask; results in plan order.

    Here, a stop signal is passed on to the running plans (see `Children.stop`) and waited for; on Dask,
    an interrupt cancels what has not finished (a worker's processes cannot be signalled from here).
    `on_line(job, line)`: each line of a plan's output for people as it comes, from the thread that runs
    it (here only: a Dask worker's plan comes back whole, in `PlanRun.output`)."""
    done: dict[int, PlanRun] = {}
    combined = Combined(remote=options.kind == "dask" and bool(options.scheduler))

    def collect(pool, fn: Callable[[PlanJob], PlanRun]) -> None:
        for idx, run in _each(pool, fn, jobs):
            done[idx] = run
            if on_done:
                on_done(run)

    if options.kind == "dask":
        # closing a LocalCluster ends its workers, and so (by the parent-death signal, _BOOT) the plans they run
        pool = make_pool(options)

        def interrupt(name: str) -> None:
            combined.interrupted = name
            raise KeyboardInterrupt

        try:
            with _stop_on_signals(interrupt):
                collect(pool, run_plan_process)
        except KeyboardInterrupt:
            combined.interrupted = combined.interrupted or "SIGINT"
        finally:
            pool.close()
    else:
        children = Children()
        local = ThreadPool(options.n_workers)
        try:
            with _stop_on_signals(children.stop):
                collect(local, partial(_run_here, children=children, on_line=on_line))
        finally:
            local.close()
            children.close()
        combined.interrupted = children.stopped_by
    note = "no result: interrupted"
    combined.runs = [done.get(i) or PlanRun(j.label or j.plan, EXIT_INTERRUPTED, note=note) for i, j in enumerate(jobs)]
    return combined


def _run_here(job: PlanJob, *, children: Children, on_line: Callable[[PlanJob, str], None] | None) -> PlanRun:
    """`run_plan_process` on a thread of this process, its lines handed up with the job they come from."""
    return run_plan_process(job, children, on_line=None if on_line is None else partial(on_line, job))


def _stop_on_signals(stop: Callable[[str], None]) -> AbstractContextManager[None]:
    """While the plans run, a stop signal calls `stop(its name)` (`Children.stop`: pass it on to the plans)
    instead of ending this process at once and leaving their runners, apps and agents behind. A signal
    ignored when we started (nohup, a background job) stays ignored."""
    return handling(STOP_SIGNALS, lambda signum, frame: stop(signal.Signals(signum).name))


def _each(pool, fn: Callable[[PlanJob], PlanRun], jobs: list[PlanJob]) -> Iterator[tuple[int, PlanRun]]:
    chunks = ((i, job) for i, job in enumerate(jobs))
    for idx, run in map_chunks(pool, fn, chunks, window=max(1, len(jobs)), ordered=False,
                               describe=lambda i: f"plan {jobs[i].plan}"):
        assert run is not None
        yield idx, run


def job_for(plan: str, out: str, agent: str | None, strict: bool, extra: tuple[str, ...] = (), *,
            text: str | None = None) -> PlanJob:
    """A PlanJob run from this folder, with absolute paths (a Dask worker has another working folder).

    `text`: the plan's text as validated here; the child runs exactly that."""
    return PlanJob(plan=str(Path(plan).resolve()), out=str(Path(out).resolve()), agent=agent, strict=strict,
                   cwd=str(Path.cwd()), columns=shutil.get_terminal_size((100, 24)).columns, label=plan,
                   extra=tuple(extra), text=text)
