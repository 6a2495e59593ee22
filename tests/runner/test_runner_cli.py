"""The `referee` CLI for the runner: kinds, exit codes, --strict, several plans, --agent, and the
app's lifecycle (started, waited for, stopped on success, failure, Ctrl-C, never-ready)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from tests.runner.runner_helpers import (
    agent_cmd,
    app_block,
    assert_one_line_error,
    find_run_dirs,
    kill_marked,
    kill_quietly,
    pid_alive,
    wait_dead,
    wait_unmarked,
    write_plan,
)
from tests.support.signals import default_stop_signals

VALIDATOR_KINDS = ["http_status_eq", "http_body_contains", "json_path_eq", "file_exists", "text_contains",
                   "regex_match", "command_exit_code", "sql_row_present", "ddb_row_present"]
CAPTURE_KINDS = ["http", "command", "sql", "ddb", "file"]


def test_kinds_lists_validators_and_captures_with_parameters(referee_cli, tmp_path):
    rc, out, err = referee_cli("kinds", cwd=tmp_path)
    assert rc == 0, err
    for kind in VALIDATOR_KINDS:
        assert kind in out, f"{kind} missing from `referee kinds`"
    lowered = out.lower()
    assert "capture" in lowered
    words = set(out.replace(",", " ").replace(":", " ").replace("(", " ").replace(")", " ").split())
    for kind in CAPTURE_KINDS:
        assert kind in words, f"capture kind {kind} missing from `referee kinds`"
    for param in ("expected", "pattern", "endpoint_url", "where", "params", "require_change"):
        assert param in out, f"parameter {param} missing from `referee kinds`"


def _one_step(validators, do="SAVE a.txt hello"):
    return [{"id": "s", "do": do, "validators": validators}]


@pytest.mark.parametrize("case,extra,want", [
    ("pass", [], 0),
    ("fail", [], 1),
    ("error", [], 1),
    ("skipped", [], 0),
    ("skipped", ["--strict"], 1),
    ("pass", ["--strict"], 0),
])
def test_exit_codes(run_plan, case, extra, want):
    validators = {
        "pass": [{"kind": "text_contains", "evidence": "a.txt", "text": "hello"}],
        "fail": [{"kind": "text_contains", "evidence": "a.txt", "text": "goodbye"}],
        "error": [{"kind": "text_contains", "evidence": "missing.txt", "text": "hello"}],
        "skipped": [],
    }[case]
    run = run_plan(_one_step(validators), agent=agent_cmd("honest"), extra=extra)
    assert run.rc == want, run.explain()
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize("args", [["run"], ["run", "--bogus-option"], ["grade"], ["no-such-command"]])
def test_usage_errors_exit_2_in_one_line(referee_cli, tmp_path, args):
    rc, out, err = referee_cli(*args, cwd=tmp_path)
    assert_one_line_error(rc, out, err)


def test_several_plans_in_one_run(tmp_path, cli_env, referee_cli):
    write_plan(tmp_path / "one.yaml", _one_step([{"kind": "text_contains", "evidence": "a.txt", "text": "hello"}]))
    write_plan(tmp_path / "two.yaml", _one_step([{"kind": "text_contains", "evidence": "a.txt", "text": "nope"}]))
    rc, out, err = referee_cli("run", "one.yaml", "two.yaml", "--agent", agent_cmd("honest"), "--out", "out", "--json",
                               cwd=tmp_path)
    assert rc == 1, err
    doc = json.loads(out)
    assert [r["plan"] for r in doc["runs"]] == ["one", "two"]
    assert [r["summary"]["PASS"] for r in doc["runs"]] == [1, 0]
    assert {d.parent.name for d in find_run_dirs(tmp_path / "out")} == {"one", "two"}


def test_agent_option_overrides_the_plans_command_actor(tmp_path, run_plan):
    plan = {"name": "override", "actor": {"kind": "command", "command": agent_cmd("liar")},
            "steps": _one_step([{"kind": "text_contains", "evidence": "a.txt", "text": "hello"}])}
    run = run_plan(plan, agent=agent_cmd("honest"))
    assert run.verdict("s") == "PASS", run.explain()
    assert not (run.run_dir / "agent/s/proof.json").exists(), "the plan's agent ran despite --agent"
    run2 = run_plan(plan)  # and without --agent the plan's actor runs
    assert run2.verdict("s") == "ERROR", run2.explain()
    assert (run2.run_dir / "agent/s/proof.json").exists()


def test_no_actor_at_all_is_a_usage_error(tmp_path, referee_cli):
    write_plan(tmp_path / "p.yaml", _one_step([{"kind": "text_contains", "evidence": "a.txt", "text": "hello"}]))
    rc, out, err = referee_cli("run", "p.yaml", "--out", "out", cwd=tmp_path)
    line = assert_one_line_error(rc, out, err)
    assert "--agent" in line or "actor" in line, line


# ------------------------------------------------------------ the app's lifecycle


def _app_plan(W, validators, do='POST /api/notes {"title": "alpha"}', **app_kw) -> dict:
    return {"name": "lifecycle", "app": app_block(W / "app.db", W / "app.pid", **app_kw),
            "steps": [{"id": "s", "do": do, "validators": validators}]}


@pytest.mark.parametrize("holds", [True, False])
def test_app_is_started_on_a_free_port_and_stopped_after_the_run(tmp_path, run_plan, holds):
    title = "alpha" if holds else "ghost"
    run = run_plan(_app_plan(tmp_path, [{"kind": "http_status_eq", "url": f"/api/notes/by-title/{title}",
                                         "expected": 200}]), agent=agent_cmd("honest"))
    assert run.verdict("s") == ("PASS" if holds else "FAIL"), run.explain()
    assert run.rc == (0 if holds else 1)
    pid = int((tmp_path / "app.pid").read_text())
    assert wait_dead(pid, 10), f"the app (pid {pid}) is still running after the run"


def test_app_that_never_gets_ready_is_stopped_and_reported(tmp_path, run_plan):
    run = run_plan(_app_plan(tmp_path, [{"kind": "http_status_eq", "url": "/health", "expected": 200}],
                             extra="--not-ready", ready_timeout_s=3), agent=agent_cmd("honest"), timeout=60)
    pid = int((tmp_path / "app.pid").read_text()) if (tmp_path / "app.pid").exists() else None
    try:
        assert run.rc in (1, 2), run.explain()
        assert "Traceback" not in run.stderr
        assert "ready" in (run.stdout + run.stderr).lower(), "the user is not told the app never got ready"
        if run.run_dir is not None and (run.run_dir / "results.json").exists():  # reported as a run of ERRORs
            assert run.rc == 1 and set(run.verdicts().values()) == {"ERROR"}, run.explain()
            assert "ready" in run.results["steps"][0].get("reason", run.reasons("s")).lower(), run.explain()
        else:  # or as one error line
            lines = [ln for ln in run.stderr.splitlines() if ln.startswith("referee: error:")]
            assert len(lines) == 1 and "ready" in lines[0].lower(), run.stderr
        said = " ".join((run.stdout + run.stderr).split())  # the console wraps long lines
        assert "was not ready at" in said and "after 3s" in said, said[-2000:]  # it waited the plan's 3 s, no more
        assert pid is not None, "the app never started"
        assert wait_dead(pid, 10), "the app that never got ready was left running"
    finally:
        if pid and pid_alive(pid):
            kill_quietly(pid)


def test_app_that_exits_at_once_is_reported_quickly(tmp_path, run_plan):
    plan = {"name": "crash", "app": {"start": f"{sys.executable} -c 'import sys; sys.exit(5)' {{port}}",
                                     "url": "http://127.0.0.1:{port}", "ready": "/health", "ready_timeout_s": 20},
            "steps": _one_step([{"kind": "http_status_eq", "url": "/health", "expected": 200}])}
    run = run_plan(plan, agent=agent_cmd("honest"), timeout=60)
    assert run.rc in (1, 2), run.explain()
    assert "Traceback" not in run.stderr
    said = " ".join((run.stdout + run.stderr).split())
    # noticed as dead, not waited for until ready_timeout_s (20 s)
    assert "the app exited with code 5 before it was ready" in said and "after 20s" not in said, said[-2000:]


def test_ctrl_c_stops_the_app_and_agent_exits_130_and_leaves_a_gradeable_run(tmp_path, cli_env, referee_cli):
    plan = _app_plan(tmp_path, [{"kind": "http_status_eq", "url": "/api/notes/by-title/alpha", "expected": 200}],
                     do="RUN echo $PPID > {agent_dir}/pid\nSAVE started yes\nSLEEP 60")
    plan["steps"].append({"id": "later", "do": "x", "validators": [{"kind": "file_exists", "path": "x"}]})
    path = write_plan(tmp_path / "lifecycle.yaml", plan)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "referee.cli.main", "run", str(path), "--agent", agent_cmd("honest"),
                             "--out", str(out)], cwd=tmp_path, env=cli_env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=default_stop_signals)
    app_pid = None
    try:
        deadline = time.monotonic() + 60
        started = []
        while time.monotonic() < deadline and not started:
            assert proc.poll() is None, f"referee exited early: {proc.returncode} {proc.communicate()}"
            started = list(out.glob("*/*/agent/s/started"))
            time.sleep(0.05)
        assert started, "the step never started"
        run_dir = started[0].parents[2]
        assert (run_dir / "agent/s/pid").read_text().strip(), "the agent did not start"
        app_pid = int((tmp_path / "app.pid").read_text())
        proc.send_signal(signal.SIGINT)
        try:
            so, se = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail("referee did not stop within 30 s of Ctrl-C")
        assert proc.returncode == 130, f"rc={proc.returncode}\n{se}"
        assert "Traceback" not in se, se
        assert wait_dead(app_pid, 10), "Ctrl-C left the app running"
        assert not wait_unmarked(tmp_path, 10), "Ctrl-C left the agent running"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_marked(tmp_path)
        if app_pid and pid_alive(app_pid):
            kill_quietly(app_pid)
    rc, so, se = referee_cli("grade", str(run_dir), cwd=tmp_path, timeout=60)
    assert "Traceback" not in se and rc in (0, 1), se
    res = json.loads((run_dir / "results.json").read_text())
    verdicts = {s["id"]: s["verdict"] for s in res["steps"]}
    assert verdicts.get("s") in ("ERROR", "SKIPPED", "FAIL") and verdicts.get("later") in ("ERROR", "SKIPPED"), verdicts
