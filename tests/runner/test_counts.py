"""Issue 34 items 4, 5 and 6: the summary and `--json` count what a FAIL or a retry would hide: ERROR validators
inside FAIL steps (plan errors), agents that crashed, timed out or never started, and overclaims in every attempt.

One plan, one command agent whose behaviour per step is set in the plan's `do:`."""

from __future__ import annotations

import json
import shlex
import sqlite3
import sys

import pytest

from referee.grader.results import AgentOutcome, Attempt, RunResults, StepResult, ValidatorResult, summarize
from tests.runner.inprocess import home as _home
from tests.runner.inprocess import referee, run_in_process
from tests.runner.runner_helpers import write_plan

AGENT = '''\
import json, os, pathlib, sys, time
home = pathlib.Path(sys.argv[1])
do = os.environ["REFEREE_STEP_DO"]
claim = pathlib.Path(os.environ["REFEREE_CLAIM_FILE"])
if do == "crash":
    sys.exit(1)
if do == "hang":
    time.sleep(30)
if do == "count":  # attempt n writes n: the validator wants 2
    n = home / "counter"
    n.write_text(str(int(n.read_text()) + 1 if n.exists() else 1))
    claim.write_text(json.dumps({"pass": True, "note": "counted"}))
    sys.exit(0)
claim.write_text(json.dumps({"pass": False, "note": "not sure"}))
'''


@pytest.fixture(scope="module")
def counted(_agent_reachable_base):
    tmp_path = _home(_agent_reachable_base)
    db = tmp_path / "shop.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total INTEGER)")
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    db.chmod(0o644)
    (tmp_path / "agent.py").write_text(AGENT)
    agent = f"{shlex.quote(sys.executable)} {shlex.quote(str(tmp_path / 'agent.py'))} {shlex.quote(str(tmp_path))}"
    holds = {"kind": "command_exit_code", "command": "true"}  # a weak validator: holds whatever the agent did
    plan = write_plan(tmp_path / "counts.yaml", {
        "name": "counts", "actor": {"kind": "command", "command": agent},
        "steps": [
            {"id": "crashed", "do": "crash", "validators": [holds]},
            # only the hanging step is meant to time out: 1 s there, the default for the steps that work
            {"id": "timed_out", "do": "hang", "timeout_s": 1, "validators": [holds]},
            # the case: three plan mistakes beside one real failure
            {"id": "mixed", "do": "check", "validators": [
                {"kind": "command_exit_code", "command": "false"},
                {"kind": "sql_row_present", "url": f"sqlite:///{db}", "table": "order", "where": {"id": 1}},
                {"kind": "sql_row_present", "url": f"sqlite:///{tmp_path / 'nope.db'}", "table": "orders",
                 "where": {"id": 1}},
                {"kind": "sql_row_present", "url": f"sqlite:///{db}", "table": "orders", "where": {"totl": 1}}]},
            {"id": "flaky", "do": "count",
             "validators": [{"kind": "command_exit_code", "command": f"grep -qx 2 {tmp_path / 'counter'}"}]},
        ]})
    ran = run_in_process(tmp_path, plan, tmp_path / "runs", "--retries", "1", "--json")
    return ran, plan


def test_the_summary_counts_plan_errors_agent_failures_and_every_attempts_overclaim(counted):
    ran, _ = counted
    verdicts = {s["id"]: s["verdict"] for s in ran.results["steps"]}
    assert verdicts == {"crashed": "PASS", "timed_out": "PASS", "mixed": "FAIL", "flaky": "FLAKY"}, ran.results
    summary = ran.results["summary"]
    assert summary["plan_errors"] == 3, ran.step("mixed")
    assert summary["agent_failures"] == 2
    assert summary["overclaims"] == 1  # attempt 1 of `flaky` claimed pass and failed
    payload = json.loads(ran.out)
    assert payload["runs"][0]["summary"] == summary


def test_a_retried_steps_first_claim_is_kept_and_marked(counted):
    ran, _ = counted
    (first,) = ran.step("flaky")["attempts"]
    assert first["verdict"] == "FAIL" and first["claim"]["pass"] is True and first["overclaim"] is True
    assert "OVERCLAIM" in (ran.run_dir / "report.html").read_text()
    assert "OVERCLAIM" in ran.junit_text("flaky")
    assert ran.junit_properties()["referee.overclaims"] == "1"


def test_the_console_summary_says_plan_errors_and_agent_failures(counted):
    ran, _ = counted
    code, out, err = referee(ran.run_dir, "grade", ran.run_dir)
    assert code == 1, err
    assert "3 plan errors" in out and "2 agent failures" in out and "1 overclaim" in out, out
    assert "(OVERCLAIM in attempt 1)" in out, out


def test_the_job_summary_says_them_too(counted):
    from referee.report.markdown import run_summary

    ran, _ = counted
    md = run_summary(RunResults.model_validate(ran.results), ran.run_dir, ran.run_dir.parent)
    assert "1 overclaim · 3 plan errors · 2 agent failures" in md, md


def test_strict_fails_on_agent_failures(counted):
    ran, _ = counted
    results = RunResults.model_validate(ran.results)
    assert results.exit_code() == 1  # the FAIL of `mixed`
    fine = RunResults(plan="p", steps=[], summary={"PASS": 2, "agent_failures": 1})
    assert fine.exit_code() == 0 and fine.exit_code(strict=True) == 1


def test_strict_fails_a_run_whose_only_fault_is_a_crashed_agent(tmp_path):
    agent = f"{shlex.quote(sys.executable)} -c 'import sys; sys.exit(1)'"
    plan = write_plan(tmp_path / "crash.yaml", {"name": "crash", "actor": {"kind": "command", "command": agent},
                      "steps": [{"id": "s", "do": "anything",
                                 "validators": [{"kind": "command_exit_code", "command": "true"}]}]})
    ran = run_in_process(tmp_path, plan, tmp_path / "runs")
    assert ran.code == 0 and ran.results["summary"]["agent_failures"] == 1, ran.err
    assert "1 agent failure" in ran.out
    code, out, err = referee(tmp_path, "grade", "--strict", ran.run_dir)
    assert code == 1, out + err
    code, out, err = referee(tmp_path, "grade", ran.run_dir)
    assert code == 0, out + err


def _v(status: str) -> ValidatorResult:
    return ValidatorResult(name="v", kind="k", status=status, reason="r")  # type: ignore[arg-type]


COUNT_CASES = [
    # (steps, plan_errors, agent_failures, overclaims)
    ([StepResult(id="a", verdict="FAIL", validators=[_v("FAIL"), _v("ERROR"), _v("ERROR")])], 2, 0, 0),
    ([StepResult(id="a", verdict="ERROR", validators=[_v("ERROR")])], 0, 0, 0),  # counted as ERROR already
    ([StepResult(id="a", verdict="PASS", agent=AgentOutcome(exit_code=1))], 0, 1, 0),
    ([StepResult(id="a", verdict="PASS", agent=AgentOutcome(exit_code=0, timed_out=True))], 0, 1, 0),
    ([StepResult(id="a", verdict="ERROR", agent=AgentOutcome(started=False))], 0, 1, 0),
    ([StepResult(id="a", verdict="PASS", agent=AgentOutcome(exit_code=0))], 0, 0, 0),
    ([StepResult(id="a", verdict="FLAKY", attempts=[Attempt(attempt=1, verdict="FAIL", overclaim=True)])], 0, 0, 1),
    ([StepResult(id="a", verdict="FAIL", overclaim=True,
                 attempts=[Attempt(attempt=1, verdict="FAIL", overclaim=True)])], 0, 0, 2),
]


@pytest.mark.parametrize("steps,plan_errors,agent_failures,overclaims", COUNT_CASES)
def test_summarize_counts(steps, plan_errors, agent_failures, overclaims):
    s = summarize(steps)
    assert (s["plan_errors"], s["agent_failures"], s["overclaims"]) == (plan_errors, agent_failures, overclaims)


def test_results_written_before_these_counts_still_load():
    old = {"results_version": 2, "plan": "p", "summary": {"PASS": 1, "FAIL": 0, "SKIPPED": 0, "ERROR": 0,
                                                          "overclaims": 0},
           "steps": [{"id": "a", "verdict": "FLAKY", "attempts": [{"attempt": 1, "verdict": "FAIL", "reason": "x"}]}]}
    r = RunResults.model_validate(old)
    assert r.steps[0].attempts[0].claim is None and r.exit_code() == 0
