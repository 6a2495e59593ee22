"""Helpers for the runner's acceptance tests: write plans, run `referee run`, read the run directory.

Import as `from tests.runner.runner_helpers import ...`.

These tests drive the runner only through the CLI and the files it writes (DESIGN.md + the
runner contract); they never import the runner, the grader or the validators.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.conftest import AGENTS_DIR, APP_SCRIPT, run_cli

PY = sys.executable
VERDICTS = {"PASS", "FAIL", "SKIPPED", "ERROR", "FLAKY"}


def agent_cmd(name: str, *args: str) -> str:
    """The shell command line for a test agent in tests/support/agents (absolute paths)."""
    return " ".join(shlex.quote(x) for x in [PY, str(AGENTS_DIR / f"{name}.py"), *args])


def app_block(db: Path, pidfile: Path | None = None, *, extra: str = "", ready: str = "/health",
              ready_timeout_s: float = 20) -> dict:
    """The plan's `app:` section starting tests/support/app.py on {port} with this SQLite DB."""
    start = f"{shlex.quote(PY)} {shlex.quote(str(APP_SCRIPT))} --port {{port}} --db {shlex.quote(str(db))}"
    if pidfile is not None:
        start += f" --pidfile {shlex.quote(str(pidfile))}"
    if extra:
        start += " " + extra
    return {"start": start, "url": "http://127.0.0.1:{port}", "ready": ready, "ready_timeout_s": ready_timeout_s}


def write_plan(path: Path, plan) -> Path:
    """Write a plan (dict or list -> YAML; str -> as is)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(plan if isinstance(plan, str) else yaml.safe_dump(plan, sort_keys=False, width=1000))
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is dead for our purposes
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def wait_dead(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return not pid_alive(pid)


def kill_quietly(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def marked_pids(marker: str | Path, parts: tuple[str, ...] = ("environ",)) -> list[int]:
    """Live processes whose environment holds `marker` (a test's tmp_path: every agent's REFEREE_AGENT_DIR
    names it), or whichever of /proc/PID's `parts` is given (`cmdline` too: a runner or an app named by its
    paths). Found from outside, so this sees an agent in its own pid namespace (bwrap), where the pid
    it writes down means nothing out here, and a daemon that left its session."""
    m = str(marker).encode()
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        data = b""
        for part in parts:
            try:
                with open(f"/proc/{name}/{part}", "rb") as fh:
                    data += fh.read()
            except OSError:
                pass
        if m in data and pid_alive(int(name)):
            out.append(int(name))
    return out

def acting_agents(tmp_path: Path) -> set[bytes]:
    """The agent folders of a test's agents running now (`REFEREE_AGENT_DIR=<tmp_path>/...` in a live process's
    environment, read from outside: an agent in its own pid namespace is found too)."""
    key = f"REFEREE_AGENT_DIR={tmp_path}/"
    found: set[bytes] = set()
    for pid in marked_pids(key):
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                found |= {v for v in fh.read().split(b"\0") if v.startswith(key.encode())}
        except OSError:
            pass
    return found



def wait_unmarked(marker: str | Path, timeout: float = 10, parts: tuple[str, ...] = ("environ",)) -> list[int]:
    """Wait until no process holds `marker` (in its environment, or the `parts` given); the survivors."""
    deadline = time.monotonic() + timeout
    while True:
        left = marked_pids(marker, parts)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def kill_marked(marker: str | Path) -> None:
    """Clean up after a test: SIGKILL whatever still holds `marker` (never a pid an agent wrote down,
    which in a pid namespace is some other process out here)."""
    for pid in marked_pids(marker):
        kill_quietly(pid)


def assert_one_line_error(rc: int, out: str, err: str, expected_rc: int = 2) -> str:
    """A user error: exit code, one line on stderr starting `referee: error:`, no traceback anywhere."""
    assert "Traceback" not in err and "Traceback" not in out, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected one error line, got {len(lines)}:\n{err}"
    assert lines[0].startswith("referee: error:"), lines[0]
    assert rc == expected_rc, f"rc={rc}, expected {expected_rc}; stderr: {err}"
    return lines[0]


def find_run_dirs(out: Path) -> list[Path]:
    """Run directories under --out: OUT/<plan>/<UTC timestamp>/ (not the `latest` link beside them)."""
    return sorted(p for p in out.glob("*/*") if p.is_dir() and not p.is_symlink())


@dataclass
class Run:
    rc: int
    stdout: str
    stderr: str
    out: Path
    run_dir: Path | None
    seconds: float = 0.0
    _results: dict | None = field(default=None, repr=False)

    @property
    def results(self) -> dict:
        assert self.run_dir is not None, \
            f"no run directory under {self.out}\nstdout: {self.stdout}\nstderr: {self.stderr}"
        p = self.run_dir / "results.json"
        assert p.exists(), f"no results.json in {self.run_dir}\nstderr: {self.stderr[-3000:]}"
        return json.loads(p.read_text())

    @property
    def manifest(self) -> dict:
        assert self.run_dir is not None, f"no run directory\nstderr: {self.stderr}"
        return json.loads((self.run_dir / "manifest.json").read_text())

    def step(self, sid: str) -> dict:
        for s in self.results["steps"]:
            if s["id"] == sid:
                return s
        raise AssertionError(f"step {sid!r} not in results.json: {[s['id'] for s in self.results['steps']]}")

    def verdict(self, sid: str) -> str:
        return self.step(sid)["verdict"]

    def verdicts(self) -> dict[str, str]:
        return {s["id"]: s["verdict"] for s in self.results["steps"]}

    def reasons(self, sid: str) -> str:
        return " | ".join(str(v.get("reason") or "") for v in self.step(sid)["validators"])

    def explain(self) -> str:
        try:
            body = json.dumps(self.results["steps"], indent=1)[:6000]
        except AssertionError as exc:
            body = str(exc)
        return f"rc={self.rc}\nstderr: {self.stderr[-3000:]}\nresults: {body}"


def do_run(plan_path: Path, *, out: Path, cwd: Path, env: dict, agent: str | None = None,
           extra: list[str] = (), timeout: float = 120, process: bool = False) -> Run:
    """`referee run PLAN --out OUT`: in this process unless `process` (an agent that reads the runner's own
    process, as /proc/PPID/environ, needs the runner in a process started with `env`)."""
    args = ["run", str(plan_path), "--out", str(out)]
    if agent is not None:
        args += ["--agent", agent]
    args += list(extra)
    t0 = time.monotonic()
    rc, so, se = run_cli(args, cwd=cwd, env=env, timeout=timeout, process=process)
    dirs = find_run_dirs(out)
    return Run(rc, so, se, out, dirs[-1] if dirs else None, time.monotonic() - t0)
