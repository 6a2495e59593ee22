"""Many plans at once: each in its own `referee run` process, so each has its own run directory, app and ports.

`run_plans` starts at most `-j` of them on threads here, or sends them to a Dask cluster whose
workers have the apps, agents and browsers the plans need (and the plan files at the same paths).
Each plan's output (its table, warnings, run directory) comes back as one block, shown when the
plan is done; the caller prints one combined summary and exits with the worst plan's code.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from referee.executors import ExecutorOptions, ThreadPool, make_pool, map_chunks

EXIT_INTERRUPTED = 130


@dataclass(frozen=True)
class PlanJob:
    """One plan to run: its file, where run directories go, the agent, strictness, the folder to run from."""

    plan: str
    out: str
    agent: str | None = None
    strict: bool = False
    cwd: str | None = None
    columns: int = 100  # the width the plan's table is drawn at
    label: str = ""     # the plan as the user named it
    extra: tuple[str, ...] = ()  # more `referee run` arguments: --only/-k/--fail-fast/--retries


@dataclass(frozen=True)
class PlanRun:
    """What one plan's `referee run --json` gave: exit code, its JSON runs, its output for people, where it ran."""

    plan: str
    code: int
    runs: list[dict] = field(default_factory=list)
    output: str = ""
    host: str = ""


def run_plan_process(job: PlanJob) -> PlanRun:
    """Run one plan as `referee run PLAN --json` in a process of its own (here, or on a Dask worker).

    Its own process means its own app on its own free port, its own run directory, its own signal
    handling: a crash or Ctrl-C in one plan leaves the others as they are.
    """
    cmd = [sys.executable, "-m", "referee.cli.main", "run", job.plan, "--out", job.out, "--json"]
    if job.agent:
        cmd += ["--agent", job.agent]
    if job.strict:
        cmd.append("--strict")
    cmd += list(job.extra)
    env = dict(os.environ, COLUMNS=str(job.columns))
    proc = subprocess.run(cmd, cwd=job.cwd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    try:
        runs = json.loads(proc.stdout)["runs"]
    except (ValueError, KeyError, TypeError):
        runs = []
    return PlanRun(job.label or job.plan, proc.returncode, runs, proc.stderr, socket.gethostname())


@dataclass
class Combined:
    """The plans' results together: per plan its run, and the exit code of them all."""

    runs: list[PlanRun] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        codes = [r.code for r in self.runs]
        if EXIT_INTERRUPTED in codes:
            return EXIT_INTERRUPTED
        return max(codes, default=0)

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
            dirs = ", ".join(str(run.get("run_dir")) for run in r.runs) or "no run directory"
            what = " ".join(f"{k} {v}" for k, v in counts.items()) or f"exit {r.code}"
            lines.append(f"  {r.plan}: {what} (exit {r.code}; {dirs}{'; on ' + r.host if r.host else ''})")
        lines.append(f"plans: {len(self.runs)}; " + (" ".join(f"{k} {v}" for k, v in total.items()) or "no steps")
                     + f"; exit {self.exit_code}")
        return lines


def run_plans(jobs: list[PlanJob], options: ExecutorOptions, *,
              on_done: Callable[[PlanRun], None] | None = None) -> Combined:
    """Run every plan, at most `options.n_workers` at once (threads here) or on Dask; results in plan order."""
    pool = make_pool(options) if options.kind == "dask" else ThreadPool(options.n_workers)
    done: dict[int, PlanRun] = {}
    try:
        for idx, run in _each(pool, jobs):
            done[idx] = run
            if on_done:
                on_done(run)
    finally:
        pool.close()
    return Combined([done[i] for i in sorted(done)])


def _each(pool, jobs: list[PlanJob]) -> Iterator[tuple[int, PlanRun]]:
    chunks = ((i, job) for i, job in enumerate(jobs))
    for idx, run in map_chunks(pool, run_plan_process, chunks, window=max(1, len(jobs)), ordered=False,
                               describe=lambda i: f"plan {jobs[i].plan}"):
        assert run is not None
        yield idx, run


def job_for(plan: str, out: str, agent: str | None, strict: bool, extra: tuple[str, ...] = ()) -> PlanJob:
    """A PlanJob run from this folder, with absolute paths (a Dask worker has another working folder)."""
    return PlanJob(plan=str(Path(plan).resolve()), out=str(Path(out).resolve()), agent=agent, strict=strict,
                   cwd=str(Path.cwd()), columns=shutil.get_terminal_size((100, 24)).columns, label=plan,
                   extra=tuple(extra))
