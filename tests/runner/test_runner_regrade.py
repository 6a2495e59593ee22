"""`referee grade RUN_DIR`: the same verdicts later, elsewhere, with the app and its state gone;
and a run killed with SIGKILL mid-way leaves a directory that grades (nothing corrupt)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import base_cli_env, run_cli
from tests.runner.runner_helpers import (
    agent_cmd,
    app_block,
    assert_one_line_error,
    do_run,
    kill_marked,
    kill_quietly,
    pid_alive,
    sha256,
    wait_dead,
    write_plan,
)


def _mixed_plan(W: Path) -> dict:
    sqlite_url = f"sqlite:///{W}/app.db"
    return {
        "name": "mixed",
        "app": app_block(W / "app.db", W / "app.pid"),
        "steps": [
            {"id": "p", "do": 'POST /api/notes {"title": "alpha", "body": "hello"}',
             "validators": [{"kind": "http_status_eq", "url": "/api/notes/by-title/alpha", "expected": 200},
                            {"kind": "sql_row_present", "url": sqlite_url, "table": "notes",
                             "where": {"title": "alpha"}}]},
            {"id": "f", "do": "nothing",
             "validators": [{"kind": "http_body_contains", "url": "/api/notes", "text": "nonexistent"}]},
            {"id": "sk", "do": "Nothing to check here."},
            {"id": "e", "do": "nothing",
             "validators": [{"kind": "text_contains", "evidence": "missing.txt", "text": "x"}]},
            {"id": "rc", "do": 'POST /api/notes {"title": "beta"}',
             "validators": [{"kind": "http_status_eq", "url": "/api/notes/by-title/beta", "expected": 200,
                             "require_change": True}]},
            {"id": "rcf", "do": "nothing",
             "validators": [{"kind": "http_status_eq", "url": "/api/notes/by-title/alpha", "expected": 200,
                                          "require_change": True}]},
            {"id": "cmd", "do": f"WRITE {W}/made.txt x",
             "validators": [{"kind": "command_exit_code", "command": "test -f made.txt"}]},
        ],
    }


EXPECTED = {"p": "PASS", "f": "FAIL", "sk": "SKIPPED", "e": "ERROR", "rc": "PASS", "rcf": "FAIL", "cmd": "PASS"}


@pytest.fixture(scope="module")
def mrun(tmp_path_factory):
    W = tmp_path_factory.mktemp("mixed")
    path = write_plan(W / "mixed.yaml", _mixed_plan(W))
    run = do_run(path, out=W / "out", cwd=W, env=base_cli_env(), agent=agent_cmd("honest"))
    run.W = W
    return run


def test_mixed_run_verdicts(mrun):
    assert mrun.verdicts() == EXPECTED, mrun.explain()
    assert mrun.rc == 1


def test_the_app_was_stopped_after_the_run(mrun):
    pid = int((mrun.W / "app.pid").read_text())
    assert wait_dead(pid, 10), f"the app (pid {pid}) is still running after `referee run` returned"


def test_grade_of_a_copied_run_dir_reproduces_the_verdicts_with_the_app_and_its_state_gone(mrun, tmp_path):
    original = json.loads((mrun.run_dir / "results.json").read_text())
    assert wait_dead(int((mrun.W / "app.pid").read_text()), 10)
    copy = tmp_path / "elsewhere" / "copy"
    shutil.copytree(mrun.run_dir, copy, symlinks=True)
    for name in ("results.json", "junit.xml", "report.html"):
        (copy / name).unlink(missing_ok=True)
    # the live state is gone too: grading must read the persisted evidence only
    work_state = tmp_path / "moved-state"
    work_state.mkdir()
    for name in ("app.db", "made.txt"):
        if (mrun.W / name).exists():
            shutil.move(str(mrun.W / name), str(work_state / name))
    try:
        other_cwd = tmp_path / "other-cwd"
        other_cwd.mkdir()
        rc, out, err = run_cli(["grade", str(copy)], cwd=other_cwd, env=base_cli_env(), timeout=60)
    finally:
        for name in ("app.db", "made.txt"):
            if (work_state / name).exists():
                shutil.move(str(work_state / name), str(mrun.W / name))
    assert "Traceback" not in err, err
    assert rc == mrun.rc, f"grade rc {rc} != run rc {mrun.rc}: {err}"
    regraded = json.loads((copy / "results.json").read_text())
    assert regraded["steps"] == original["steps"]
    assert regraded["summary"] == original["summary"]


def test_grade_in_place_rewrites_the_same_results(mrun):
    before = (mrun.run_dir / "results.json").read_text()
    rc, out, err = run_cli(["grade", str(mrun.run_dir)], cwd=mrun.W, env=base_cli_env(), timeout=60)
    assert rc == 1, err
    assert json.loads((mrun.run_dir / "results.json").read_text()) == json.loads(before)


def test_grade_of_a_missing_directory_is_a_usage_error(tmp_path, referee_cli):
    rc, out, err = referee_cli("grade", str(tmp_path / "nope"), cwd=tmp_path)
    line = assert_one_line_error(rc, out, err)
    assert "nope" in line


def test_grade_of_a_directory_that_is_not_a_run_is_a_usage_error(tmp_path, referee_cli):
    (tmp_path / "empty").mkdir()
    rc, out, err = referee_cli("grade", str(tmp_path / "empty"), cwd=tmp_path)
    line = assert_one_line_error(rc, out, err)
    assert "empty" in line


# ------------------------------------------------------------ SIGKILL mid-run


def test_a_run_killed_with_sigkill_midway_leaves_a_gradeable_directory(tmp_path, cli_env):
    W = tmp_path
    plan = {
        "name": "killed",
        "app": app_block(W / "app.db", W / "app.pid"),
        "steps": [
            {"id": "s1", "do": 'POST /api/notes {"title": "alpha"}',
             "validators": [{"kind": "http_status_eq", "url": "/api/notes/by-title/alpha", "expected": 200}]},
            {"id": "s2", "do": "RUN echo $PPID > {agent_dir}/pid\nSAVE started yes\nSLEEP 60\n"
                               'POST /api/notes {"title": "beta"}',
             "validators": [{"kind": "http_status_eq", "url": "/api/notes/by-title/beta", "expected": 200}]},
            {"id": "s3", "do": 'POST /api/notes {"title": "gamma"}',
             "validators": [{"kind": "http_status_eq", "url": "/api/notes/by-title/gamma", "expected": 200}]},
            {"id": "s4", "do": "Nothing to check."},
        ],
    }
    path = write_plan(W / "killed.yaml", plan)
    out = W / "out"
    cmd = [sys.executable, "-m", "referee.cli.main", "run", str(path), "--agent", agent_cmd("honest"),
           "--out", str(out)]
    proc = subprocess.Popen(cmd, cwd=W, env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    app_pid = None
    try:
        deadline = time.monotonic() + 60
        started = []
        while time.monotonic() < deadline and not started:
            assert proc.poll() is None, f"referee exited early: {proc.returncode} {proc.stderr.read().decode()}"
            started = list(out.glob("*/*/agent/s2/started"))
            time.sleep(0.05)
        assert started, "step s2 never started"
        time.sleep(0.3)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        run_dir = started[0].parents[2]
        app_pid = int((W / "app.pid").read_text())
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_marked(W)  # SIGKILL cannot be caught: clean up what the runner left (the agent, the app)
        if app_pid and pid_alive(app_pid):
            kill_quietly(app_pid)

    # nothing corrupt: every JSON file parses, every manifest entry is intact
    for p in run_dir.rglob("*.json"):
        json.loads(p.read_text())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    for f in manifest["files"]:
        p = run_dir / f["path"]
        assert p.is_file() and sha256(p) == f["sha256"], f
    assert manifest["steps"]["s1"]["status"] == "done"
    assert manifest["steps"].get("s2", {}).get("status") in ("started", None), manifest["steps"]

    (run_dir / "results.json").unlink(missing_ok=True)
    rc, so, se = run_cli(["grade", str(run_dir)], cwd=W, env=base_cli_env(), timeout=60)
    assert "Traceback" not in se, se
    assert rc in (0, 1), f"rc={rc}: {se}"
    res = json.loads((run_dir / "results.json").read_text())
    verdicts = {s["id"]: s["verdict"] for s in res["steps"]}
    assert verdicts.get("s1") == "PASS", verdicts
    for sid in ("s2", "s3"):
        assert verdicts.get(sid) in ("ERROR", "SKIPPED"), verdicts
    assert verdicts.get("s4") in ("ERROR", "SKIPPED"), verdicts
    assert rc == (1 if "ERROR" in verdicts.values() else 0)
    # and grading again gives the same answer
    first = res["steps"]
    rc2, _, se2 = run_cli(["grade", str(run_dir)], cwd=W, env=base_cli_env(), timeout=60)
    assert rc2 == rc and json.loads((run_dir / "results.json").read_text())["steps"] == first, se2
