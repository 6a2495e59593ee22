"""The plan is graded against its own app, never against whatever else answers at the app's URL: a fixed port
another process holds stops the run before the app starts, and an app that dies during the run stops it
before the next step (even when something else then answers on its port)."""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
from pathlib import Path

import pytest

from tests.conftest import APP_SCRIPT
from tests.runner.runner_helpers import PY

HEALTH = [{"kind": "http_status_eq", "url": "/health", "expected": 200}]


def _app(port: str, db: Path, *more: str) -> str:
    return " ".join([shlex.quote(PY), shlex.quote(str(APP_SCRIPT)), "--port", port, "--db",
                     shlex.quote(str(db)), *more])


def test_a_fixed_port_that_another_process_holds_stops_the_run_before_the_app_starts(tmp_path, run_plan, test_app):
    marker = tmp_path / "app-started"
    start = f"touch {shlex.quote(str(marker))} && " + _app(str(test_app.port), tmp_path / "mine.db")
    run = run_plan({"name": "port", "app": {"start": start, "url": test_app.url, "ready": "/health"},
                    "steps": [{"id": "s1", "do": "look", "validators": HEALTH}]}, agent="true")
    assert test_app.proc.poll() is None  # the other server is untouched
    assert not marker.exists(), "the app was started on a port another process holds"
    said = " ".join((run.stdout + run.stderr).split())  # the console wraps long lines
    assert f"port {test_app.port} is in use by another process" in said, said[-2000:]
    assert "let referee pick a port: put {port} in app.start and app.url" in said, said[-2000:]
    assert run.verdicts() == {"s1": "ERROR"} and run.rc == 1, run.explain()


def test_an_app_that_dies_during_the_run_is_not_replaced_by_what_answers_on_its_port(tmp_path, run_plan):
    """The app's start command runs the app until the agent of step s1 says so, then puts another server on
    the same port and exits 3: step s2 must not be graded against that other server."""
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o1777)
    shared.chmod(0o1777)  # the isolated agent writes its signal here
    die, other_pid = shared / "die", shared / "other.pid"
    q = shlex.quote
    start = (f"{_app('{port}', tmp_path / 'app.db')} & A=$!; "
             f"while [ ! -e {q(str(die))} ]; do sleep 0.1; done; kill $A; wait $A; "
             f"{_app('{port}', tmp_path / 'other.db', '--pidfile', q(str(other_pid)))} & "
             f"while [ ! -s {q(str(other_pid))} ]; do sleep 0.1; done; exit 3")
    agent = tmp_path / "agent.sh"
    agent.write_text("#!/bin/sh\n"
                     f'if [ "$REFEREE_STEP_ID" = s1 ]; then touch {q(str(die))}; i=0; '
                     f'while [ ! -s {q(str(other_pid))} ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; '
                     "sleep 1; fi\n")
    agent.chmod(0o755)
    run = run_plan({"name": "dies", "app": {"start": f"sh -c {q(start)}", "url": "http://127.0.0.1:{port}",
                                            "ready": "/health"},
                    "steps": [{"id": "s1", "do": "stop the app", "validators": HEALTH},
                              {"id": "s2", "do": "look", "validators": HEALTH}]},
                   agent=f"sh {q(str(agent))}")
    assert other_pid.exists(), f"the other server never started\n{run.explain()}"
    verdicts = run.verdicts()
    assert verdicts["s2"] == "ERROR", run.explain()
    s2 = run.step("s2")
    assert "the app exited with code 3 during the run" in json.dumps(s2), json.dumps(s2)[:2000]
    assert run.rc == 1
    # the server the start command left behind when it exited is stopped with the run, not left running
    other = int(other_pid.read_text())
    try:
        state = Path(f"/proc/{other}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        state = "gone"
    if state not in ("gone", "Z", "X"):  # a zombie is ended; only its parent (init here) has yet to reap it
        os.kill(other, signal.SIGKILL)
        pytest.fail(f"the app's other server (pid {other}) was still running after the run ended")


def test_a_start_command_that_backgrounds_the_app_and_returns_at_once_is_waited_for(tmp_path, run_plan):
    """`app & exit 0` returns before the app answers: the runner polls `ready` until it does (docs/runner.md:
    a start command that exits 0 once it started the app in the background is fine). Found by a black-box
    tester as a race: 6 of 10 such runs stopped with "the app exited with code 0 before it was ready"."""
    start = f"sh -c {shlex.quote('(sleep 1; exec ' + _app('{port}', tmp_path / 'app.db') + ') > /dev/null 2>&1 &')}"
    run = run_plan({"name": "bg", "app": {"start": start, "url": "http://127.0.0.1:{port}", "ready": "/health"},
                    "steps": [{"id": "s1", "do": "look", "validators": HEALTH}]}, agent="true")
    assert run.verdicts() == {"s1": "PASS"} and run.rc == 0, run.explain()


def test_a_start_command_that_returns_and_starts_nothing_says_so_at_the_ready_timeout(tmp_path, run_plan):
    run = run_plan({"name": "none", "app": {"start": "true", "url": "http://127.0.0.1:{port}", "ready": "/health",
                                            "ready_timeout_s": 1},  # nothing will answer: the side meant to expire
                    "steps": [{"id": "s1", "do": "look", "validators": HEALTH}]}, agent="true")
    said = " ".join((run.stdout + run.stderr).split())
    assert "was not ready" in said and "its start command exited 0 and left nothing answering there" in said, said
    assert run.verdicts() == {"s1": "ERROR"} and run.rc == 1, run.explain()


def test_an_app_that_daemonizes_with_setsid_is_stopped_with_the_run(tmp_path, run_plan):
    """`setsid server &` leaves the session the runner stops at the end; the app's cgroup (where the runner may
    make one) still holds it. Before, the server ran on under PID 1 after a passing run."""
    from referee.runner.reaper import cgroup_base
    from tests.runner.runner_helpers import kill_quietly, wait_dead

    if cgroup_base() is None:
        pytest.skip("no cgroup here: a daemon that leaves the session is out of reach (docs say so)")
    pidfile = tmp_path / "daemon.pid"
    server = f"{sys.executable} -m http.server {{port}} --bind 127.0.0.1 --directory {tmp_path}"
    start = f"setsid sh -c 'echo $$ > {pidfile}; exec {server}' > /dev/null 2>&1 &"
    plan = {"name": "daemon", "app": {"start": start, "url": "http://127.0.0.1:{port}", "ready": "/"},
            "steps": [{"id": "s", "do": "x", "validators": [{"kind": "http_status_eq", "url": "/", "expected": 200}]}]}
    run = run_plan(plan, agent="true")
    pid = int(pidfile.read_text())
    try:
        assert run.verdict("s") == "PASS", run.explain()
        assert wait_dead(pid, 10), "the daemonized app outlived the run"
    finally:
        kill_quietly(pid)
