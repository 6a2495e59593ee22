"""Issue 34 items 6 and 7: mistakes that went unsaid. An unknown claim key (`{"passed": true}`) is a warning with the
nearest known key; a step without `do:` is a plan error of `check` and `run` before anything starts; a missing agent
program is an error before the app starts."""

from __future__ import annotations

import shlex
import sqlite3
import sys

import pytest

from tests.runner.inprocess import home as _home
from tests.runner.inprocess import referee, run_in_process
from tests.runner.runner_helpers import app_block, write_plan

CLAIMS = {  # step -> the claim file the agent writes
    "misspelt": '{"passed": true, "note": "done"}',
    "good": '{"pass": true, "note": "done"}',
    "odd": '{"pass": true, "verdict": "ok"}',
}
AGENT = '''\
import json, os, sys
claims = json.loads(sys.argv[1])
open(os.environ["REFEREE_CLAIM_FILE"], "w").write(claims[os.environ["REFEREE_STEP_ID"]])
'''


@pytest.fixture(scope="module")
def claimed(_agent_reachable_base):
    home = _home(_agent_reachable_base)
    (home / "agent.py").write_text(AGENT)
    import json

    agent = " ".join(shlex.quote(w) for w in (sys.executable, str(home / "agent.py"), json.dumps(CLAIMS)))
    plan = write_plan(home / "claims.yaml", {
        "name": "claims", "actor": {"kind": "command", "command": agent},
        "steps": [{"id": s, "do": f"do {s}", "validators": [{"kind": "command_exit_code", "command": "true"}]}
                  for s in CLAIMS]})
    return run_in_process(home, plan, home / "runs")


WARNINGS = [
    ("misspelt", "unknown key 'passed' in the claim file (did you mean 'pass'?)"),
    ("odd", "unknown key 'verdict' in the claim file"),
]


@pytest.mark.parametrize("sid,warning", WARNINGS, ids=[w[0] for w in WARNINGS])
def test_an_unknown_claim_key_is_a_warning_with_the_nearest_known_key(claimed, sid, warning):
    step = claimed.step(sid)
    assert warning in (step["agent"]["claim_warning"] or ""), step
    assert warning in claimed.out, claimed.out
    assert warning in claimed.junit_text(sid)
    assert warning.replace("'", "&#x27;") in (claimed.run_dir / "report.html").read_text()


def test_a_claim_with_known_keys_has_no_warning(claimed):
    assert claimed.step("good")["agent"]["claim_warning"] is None
    assert claimed.step("misspelt")["claim"]["pass"] is None  # still no claim of pass: the warning says why


NO_DO = """\
name: nodo
steps:
  - id: first
    do: "make a note"
    validators: [{kind: command_exit_code, command: "true"}]
  - id: empty
    validators: [{kind: command_exit_code, command: "true"}]
"""


def test_check_names_a_step_without_do_as_a_plan_error(tmp_path):
    plan = write_plan(tmp_path / "nodo.yaml", NO_DO)
    code, out, err = referee(tmp_path, "check", plan)
    line = next((ln for ln in (out + err).splitlines() if "without `do:`" in ln), "")
    assert code == 2 and f"{plan}:6:5:" in line and "warning" not in line, out + err
    assert "step 'empty'" in line and "add `do: <what the agent should do>`" in line, out + err


def test_run_refuses_a_step_without_do_before_it_starts(tmp_path):
    plan = write_plan(tmp_path / "nodo.yaml", NO_DO)
    agent = f"{shlex.quote(sys.executable)} -c pass"
    ran = run_in_process(tmp_path, plan, tmp_path / "runs", "--agent", agent)
    assert ran.code == 2 and ran.run_dir is None, ran.out + ran.err
    assert "without `do:`" in ran.err and "step 'empty'" in ran.err, ran.out + ran.err


def test_a_frozen_plan_without_do_still_grades():
    """A run directory written before `do:` was required keeps its plan: grading loads it as it is."""
    from referee.plan.loader import load_plan_text

    lp = load_plan_text(NO_DO, "plan.yaml", frozen=True)
    assert [s.id for s in lp.plan.steps] == ["first", "empty"]


def test_a_missing_agent_program_is_an_error_before_the_app_starts(tmp_path):
    db, pidfile = tmp_path / "app.db", tmp_path / "app.pid"
    sqlite3.connect(db).close()
    plan = write_plan(tmp_path / "p.yaml", {"name": "p", "app": app_block(db, pidfile), "steps": [
        {"id": "a", "do": "x", "validators": [{"kind": "http_status_eq", "url": "/health", "expected": 200}]}]})
    ran = run_in_process(tmp_path, plan, tmp_path / "runs", "--agent", "no-such-agent-xyz --fast")
    lines = [ln for ln in ran.err.splitlines() if ln.strip()]
    assert ran.code == 2 and len(lines) == 1 and "Traceback" not in ran.err, ran.err
    assert "no-such-agent-xyz" in lines[0] and "not on PATH" in lines[0] and "--agent" in lines[0], lines[0]
    assert not pidfile.exists()  # the app was never started
    assert ran.run_dir is None  # and no run directory was made


@pytest.mark.parametrize("command", [
    f"{shlex.quote(sys.executable)} -c pass",  # a program by its path
    "sh -c 'exit 0'",  # on PATH
    "cd . && sh -c true",  # the shell resolves what comes first: not second-guessed
    "FOO=1 sh -c true",
])
def test_an_agent_command_that_can_start_is_not_refused(command):
    from pathlib import Path

    from referee.runner.actors.command import missing_program

    assert missing_program(command, "/usr/bin:/bin", Path.cwd()) is None
