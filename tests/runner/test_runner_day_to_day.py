"""Day-to-day use of the runner (issue 11, points 1, 3, 4), through the CLI and the files it writes.

1. An agent's failure is visible: its exit code, a timeout and the last lines of its stderr in the
   console table, report.html and junit.xml; its output kept (bounded) in agent/<step>/; an agent
   that cannot be started makes the step ERROR even when the state already held.
3. `referee check` reports every error of a plan in one pass, and what would fail at run time.
4. --only/-k, --fail-fast, --retries (FLAKY), durations, and the `latest` link.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from tests.runner.runner_helpers import agent_cmd, app_block, assert_one_line_error, find_run_dirs, write_plan

MOODY = agent_cmd("moody")
HOLDS = {"kind": "command_exit_code", "command": "true"}  # already true before any agent acts


def steps(*ids_and_dos: tuple[str, str], validators=None) -> list[dict]:
    return [{"id": sid, "do": do, "validators": list(validators if validators is not None else [HOLDS])}
            for sid, do in ids_and_dos]


def plan_of(tmp_path: Path, steps_: list[dict], **actor) -> dict:
    return {"name": "daily", "actor": {"env": {"MOODY_DIR": str(tmp_path)}, **actor}, "steps": steps_}


def calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    return log.read_text().split() if log.exists() else []


# ============================================================== 1. agent failures are visible


def test_a_crashing_agent_shows_its_exit_code_and_stderr_everywhere(tmp_path, run_plan, cli_env):
    cli_env["COLUMNS"] = "200"  # a wide log: each stderr line on one line of the table
    plan = plan_of(tmp_path, steps(("crash", "SAY starting the step\nCRASH"),
                                   ("warn", "WARN <script>alert(1)</script> \\e[31mred\\0\nEXIT 3")))
    r = run_plan(plan, agent=MOODY)
    # the state already held, so the verdicts stand; but the failures are no longer invisible
    assert r.verdicts() == {"crash": "PASS", "warn": "PASS"} and r.rc == 0, r.explain()
    crash, warn = r.step("crash")["agent"], r.step("warn")["agent"]
    assert crash["exit_code"] == 1 and crash["timed_out"] is False and crash["started"] is True
    assert crash["stderr_tail"][-1] == "KeyError: 'api_key'" and len(crash["stderr_tail"]) == 5, crash
    assert warn["exit_code"] == 3 and warn["stderr_tail"] == ["<script>alert(1)</script> \\x1b[31mred\\x00"]
    # console: the table names the exit code and shows stderr's last lines, escaped
    assert "exit 1" in r.stdout and "exit 3" in r.stdout and "KeyError: 'api_key'" in r.stdout, r.stdout
    assert "\x1b[31m" not in r.stdout and "\x00" not in r.stdout and "\\x1b[31mred" in r.stdout
    assert "crash: agent exited 1" in r.stdout, r.stdout  # the line printed as the step ended
    # the output itself, kept in the agent's folder and listed with its hash
    d = r.run_dir
    assert (d / "agent/crash/stdout.txt").read_text() == "starting the step\n"
    assert b"KeyError: 'api_key'" in (d / "agent/crash/stderr.txt").read_bytes()
    assert (d / "agent/warn/stderr.txt").read_bytes() == b"<script>alert(1)</script> \x1b[31mred\x00\n"
    kinds = {f["path"]: f["kind"] for f in r.manifest["files"]}
    assert kinds["agent/crash/stdout.txt"] == "agent_stdout" and kinds["agent/crash/stderr.txt"] == "agent_stderr"
    assert r.manifest["steps"]["crash"]["stderr_bytes"] == (d / "agent/crash/stderr.txt").stat().st_size
    # report.html: a collapsible block with both tails, escaped
    html = (d / "report.html").read_text()
    assert "<details" in html and "agent: exit 1" in html and "KeyError: &#x27;api_key&#x27;" in html
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)&lt;/script&gt; \\x1b[31mred" in html
    assert "starting the step" in html and "\x1b" not in html
    # junit.xml: valid XML, stdout in system-out, exit code and stderr in system-err
    cases = {c.get("name"): c for c in ET.parse(d / "junit.xml").iter("testcase")}
    assert "starting the step" in cases["crash"].find("system-out").text
    err = cases["crash"].find("system-err").text
    assert err.startswith("agent: exit 1") and "KeyError: 'api_key'" in err
    err = cases["warn"].find("system-err").text
    assert err.startswith("agent: exit 3") and "\\x1b[31mred\\x00" in err and "\x1b" not in err


def test_agent_output_is_kept_bounded_with_its_size_noted(tmp_path, run_plan):
    r = run_plan(plan_of(tmp_path, steps(("talk", "BIG 1500000"))), agent=MOODY)
    kept = r.run_dir / "agent/talk/stdout.txt"
    assert kept.stat().st_size == 1 << 20, "the last 1 MB is kept"
    assert r.manifest["steps"]["talk"]["stdout_bytes"] == 1500000
    html = (r.run_dir / "report.html").read_text()
    assert "stdout 1.4 MB" in html and "the last 16.0 KB of 1.4 MB" in html


def test_a_missing_agent_program_stops_the_run_before_it_starts(tmp_path, run_plan):
    # issue 34: found before the app starts and before a run directory exists (tests/runner/test_plan_mistakes.py)
    r = run_plan(plan_of(tmp_path, steps(("make", "anything"), ("more", "anything"))), agent="/nonexistent/agent")
    assert r.rc == 2 and "/nonexistent/agent" in r.stderr and "no such file" in r.stderr, r.stderr
    assert r.run_dir is None


def test_an_agent_that_cannot_be_started_makes_the_step_error(tmp_path, run_plan):
    (tmp_path / "agent.sh").write_text("#!/bin/sh\nexit 0\n")
    (tmp_path / "agent.sh").chmod(0o644)
    r = run_plan(plan_of(tmp_path, steps(("make", "anything"), ("more", "anything"))), agent=str(tmp_path / "agent.sh"))
    # the validator holds (it held before the step), yet nobody acted: never PASS
    assert r.verdicts() == {"make": "ERROR", "more": "ERROR"} and r.rc == 1, r.explain()
    reason = r.step("make")["reason"]
    assert "the agent could not be started" in reason, reason
    assert "Permission denied" in reason, reason
    assert r.step("make")["agent"]["started"] is False
    assert "could not start" in r.stdout and "0 PASS · 0 FAIL · 0 SKIPPED · 2 ERROR" in r.stdout, r.stdout


def test_a_timing_out_agent_says_so(tmp_path, run_plan):
    r = run_plan(plan_of(tmp_path, steps(("wait", "WARN thinking hard\nSLEEP 30")), timeout_s=1), agent=MOODY,
                 timeout=60)
    step = r.step("wait")
    assert step["agent"]["timed_out"] is True and step["agent"]["timeout_s"] == 1, step
    assert step["agent"]["stderr_tail"] == ["thinking hard"]
    assert "timed out after 1s" in r.stdout and "thinking hard" in r.stdout, r.stdout
    err = ET.parse(r.run_dir / "junit.xml").find(".//system-err").text
    assert err.startswith("agent: timed out after 1s") and "thinking hard" in err
    assert "agent: timed out after 1s" in (r.run_dir / "report.html").read_text()


def test_a_run_dir_without_output_files_still_shows_what_the_manifest_has(tmp_path, referee_cli):
    from tests.runner.old_run_dir import write_old_run_dir

    run_dir = write_old_run_dir(tmp_path / "runs" / "legacy" / "20260101T000000Z")
    rc, out, err = referee_cli("grade", str(run_dir), "--json", "--allow-unsigned", cwd=tmp_path)
    assert rc in (0, 1) and "Traceback" not in err, err
    step = next(s for s in json.loads(out)["runs"][0]["steps"] if s["id"] == "web")
    assert step["agent"]["exit_code"] == 0 and step["agent"]["stderr_tail"] == []


# ============================================================== 3. check: every error, and what would fail later


def test_check_reports_every_error_of_a_plan_in_one_pass(tmp_path, referee_cli):
    write_plan(tmp_path / "plan.yaml", """\
name: many
actor: {kind: command, timeot_s: 3}
steps:
  - id: one
    do: x
    validators:
      - {kind: http_staus_eq, url: "http://127.0.0.1:9/", expected: 200}
      - {kind: text_contains, evidence: out.txt, txt: hi}
  - id: one
    do: y
""")
    rc, out, err = referee_cli("check", "plan.yaml", cwd=tmp_path)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and "Traceback" not in err, err
    assert all(ln.startswith("referee: error: plan.yaml:") for ln in lines), lines
    assert [re.match(r"referee: error: plan\.yaml:(\d+):", ln).group(1) for ln in lines] == ["2", "7", "8", "9"]
    assert "did you mean 'timeout_s'" in lines[0] and "did you mean 'http_status_eq'" in lines[1]
    assert "did you mean 'text'" in lines[2] and "duplicate step id 'one'" in lines[3]
    assert "plan.yaml: 4 errors" in out
    # run refuses the plan with the same errors, before anything starts
    rc, out, err2 = referee_cli("run", "plan.yaml", "--agent", "true", "--out", "out", cwd=tmp_path)
    assert rc == 2 and err2.splitlines() == err.splitlines(), err2
    assert not (tmp_path / "out").exists()


RUNTIME_PLAN = """\
name: later
steps:
  - id: shop
    do: buy it
    script:
      - goto: /
    capture:
      - {kind: screenshot, name: after_buy}
      - {kind: command, name: reply, command: "cat ${REFEREE_TEST_UNSET_DIR}/r.json"}
      - {kind: command, name: fine, command: "ls ${REFEREE_TEST_UNSET_DIR:-/tmp}"}
    validators:
      - {kind: text_contains, evidence: replyy, text: ok}
      - {kind: text_contains, evidence: listing, text: ok}
      - {kind: text_contains, evidence: savedbyagent, text: ok}
  - id: check
    do: look
    capture:
      - {kind: command, name: listing, command: "ls"}
    validators:
      - {kind: command_exit_code, evidence: listing}
"""


def test_check_catches_what_would_fail_at_run_time(tmp_path, referee_cli, cli_env):
    cli_env.pop("REFEREE_TEST_UNSET_DIR", None)
    write_plan(tmp_path / "plan.yaml", RUNTIME_PLAN)
    rc, out, err = referee_cli("check", "plan.yaml", cwd=tmp_path, env=cli_env)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2, (out, err)
    found = {re.match(r"referee: error: plan\.yaml:(\d+):\d+: (.*)", ln).groups() for ln in lines}
    assert any(n == "6" and "`script:` needs the browser actor" in m for n, m in found), found
    assert any(n == "8" and "screenshot capture needs the browser actor" in m for n, m in found), found
    assert any(n == "9" and "'REFEREE_TEST_UNSET_DIR' is not set" in m for n, m in found), found
    assert not any(n == "10" for n, _ in found), "a ${VAR:-default} is fine"
    assert any(n == "12" and "evidence 'replyy' names no capture" in m and "did you mean 'reply'" in m
               for n, m in found), found
    assert any(n == "13" and "'listing' is a capture of step 'check'" in m for n, m in found), found
    assert len(lines) == 5, lines
    # a bare name that may be a file the agent saves: a warning, not an error
    assert re.search(r"plan\.yaml:14:\d+: warning: evidence 'savedbyagent' names no capture", out), out
    # --json for editors and CI
    rc, out, err = referee_cli("check", "plan.yaml", "--json", cwd=tmp_path, env=cli_env)
    doc = json.loads(out)["plan.yaml"]
    assert rc == 2 and doc["ok"] is False and len(doc["errors"]) == 5 and len(doc["warnings"]) == 1
    assert {e["line"] for e in doc["errors"]} == {6, 8, 9, 12, 13}
    assert all(e["message"] and e["fix"] and e["file"] == "plan.yaml" for e in doc["errors"]), doc
    # with the variable set, that error goes and the rest stay
    cli_env["REFEREE_TEST_UNSET_DIR"] = str(tmp_path)
    rc, out, err = referee_cli("check", "plan.yaml", "--json", cwd=tmp_path, env=cli_env)
    assert {e["line"] for e in json.loads(out)["plan.yaml"]["errors"]} == {6, 8, 12, 13}


AGENT_MODULE = """\
import referee


class MyAgent(referee.Actor):
    def act(self, ctx):
        ctx.save("note.txt", "hello from the plan's folder")
        return ctx.claim(True, "saved it")
"""


def test_python_actor_target_is_found_beside_the_plan_by_check_and_run(tmp_path, referee_cli):
    plans = tmp_path / "plans"
    plans.mkdir()
    (plans / "my_agent.py").write_text(AGENT_MODULE)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def plan(target: str) -> str:
        return write_plan(plans / "p.yaml", {
            "name": "py", "actor": {"kind": "python", "target": target},
            "steps": [{"id": "s", "do": "save a note",
                       "validators": [{"kind": "text_contains", "evidence": "note.txt", "text": "hello"}]}]}).name

    plan("my_agent:MyAgent")
    rc, out, err = referee_cli("check", "../plans/p.yaml", cwd=elsewhere)
    assert rc == 0 and "ok" in out, err
    rc, out, err = referee_cli("run", "../plans/p.yaml", "--out", "out", cwd=elsewhere)
    assert rc == 0, (out, err)
    plan("my_agnt:MyAgent")
    rc, out, err = referee_cli("check", "../plans/p.yaml", cwd=elsewhere)
    line = assert_one_line_error(rc, out, err)
    assert "no module named 'my_agnt'" in line and "did you mean 'my_agent'" in line and "p.yaml:4:" in line, line
    plan("my_agent:MyAgnt")
    rc, out, err = referee_cli("check", "../plans/p.yaml", cwd=elsewhere)
    line = assert_one_line_error(rc, out, err)
    assert "defines no 'MyAgnt'" in line and "did you mean 'MyAgent'" in line, line


# ============================================================== 4. iterating


THREE = (("login", "SAY in"), ("login_admin", "SAY in as admin"), ("logout", "SAY out"))


def test_only_and_k_run_the_chosen_steps_and_say_which_were_not_run(tmp_path, run_plan):
    r = run_plan(plan_of(tmp_path, steps(*THREE)), agent=MOODY, extra=["--only", "logout,login", "--strict"])
    assert calls(tmp_path) == ["login", "logout"], "in plan order, and nothing else performed"
    assert r.verdicts() == {"login": "PASS", "login_admin": "SKIPPED", "logout": "PASS"}
    skipped = r.step("login_admin")
    assert skipped["reason"] == "not run: deselected by --only/-k" and skipped["not_run"] == "deselected"
    assert r.rc == 0, "a step left out on purpose does not fail the run, even with --strict"
    # one line says how many were left out; no row, no SKIPPED count for them (issue 34 item 9)
    assert "1 deselected by --only/-k" in r.stdout and "1 deselected" in r.stdout and "login_admin" not in r.stdout
    assert r.manifest["steps"]["login_admin"]["status"] == "not_run"
    assert r.manifest["options"]["only"] == ["logout", "login"]
    (tmp_path / "calls.log").unlink()
    r = run_plan(plan_of(tmp_path, steps(*THREE)), agent=MOODY, extra=["-k", "LOG and not (admin or out)"])
    assert calls(tmp_path) == ["login"] and r.verdict("logout") == "SKIPPED" and r.rc == 0


def test_only_across_plans_runs_only_the_plans_that_have_the_step(tmp_path, referee_cli):
    write_plan(tmp_path / "one.yaml", {**plan_of(tmp_path, steps(("login", "SAY in"))), "name": "one"})
    write_plan(tmp_path / "two.yaml", {**plan_of(tmp_path, steps(("logout", "SAY out"))), "name": "two"})
    rc, out, err = referee_cli("run", "one.yaml", "two.yaml", "--agent", MOODY, "--out", "runs", "--only", "logout",
                               cwd=tmp_path)
    assert rc == 0, err
    assert calls(tmp_path) == ["logout"]
    assert "one.yaml: no step matches --only/-k; not run" in out
    assert [d.parent.name for d in find_run_dirs(tmp_path / "runs")] == ["two"]
    # the same with the plans in parallel processes (-j): each child gets only its own plan's ids
    (tmp_path / "calls.log").unlink()
    rc, out, err = referee_cli("run", "one.yaml", "two.yaml", "--agent", MOODY, "--out", "par", "--only",
                               "logout,login", "--retries", "1", "-j", "2", "--json", cwd=tmp_path, process=True)
    assert rc == 0, err
    assert sorted(calls(tmp_path)) == ["login", "logout"]
    runs = json.loads(out)["runs"]
    assert sorted(r["plan"] for r in runs) == ["one", "two"] and all(r["summary"]["PASS"] == 1 for r in runs)


@pytest.mark.parametrize("args, needle", [
    (["--only", "logn"], "did you mean 'login'"),
    (["-k", "login and"], "-k 'login and'"),
    (["-k", "nothing_like_this"], "selects no step"),
])
def test_a_selection_that_cannot_be_met_is_a_usage_error(tmp_path, run_plan, args, needle):
    r = run_plan(plan_of(tmp_path, steps(*THREE)), agent=MOODY, extra=args)
    line = assert_one_line_error(r.rc, r.stdout, r.stderr)
    assert needle in line, line
    assert not calls(tmp_path) and r.run_dir is None


def test_fail_fast_stops_after_the_first_failure(tmp_path, run_plan):
    fails = [{"kind": "command_exit_code", "command": "false"}]
    plan = plan_of(tmp_path, [*steps(("first", "SAY a")), *steps(("second", "SAY b"), validators=fails),
                              *steps(("third", "SAY c"))])
    r = run_plan(plan, agent=MOODY, extra=["--fail-fast"])
    assert calls(tmp_path) == ["first", "second"]
    assert r.verdicts() == {"first": "PASS", "second": "FAIL", "third": "SKIPPED"} and r.rc == 1
    assert r.step("third")["reason"] == "not run: --fail-fast: stopped after second failed"
    assert "third: not run (--fail-fast: stopped after second failed)" in r.stdout


def test_retries_keep_each_attempt_and_a_late_pass_is_flaky(tmp_path, run_plan, referee_cli):
    db = tmp_path / "notes.db"
    plan = {"name": "daily", "app": app_block(db), "actor": {"env": {"MOODY_DIR": str(tmp_path)}},
            "steps": [{"id": "add", "do": "SAY adding\nFROM_ATTEMPT 2 POST /api/notes {\"title\": \"alpha\"}",
                       "validators": [{"kind": "http_status_eq", "url": "/api/notes/by-title/alpha",
                                       "expected": 200, "require_change": True}]},
                      {"id": "never", "do": "SAY nothing",
                       "validators": [{"kind": "http_status_eq", "url": "/api/notes/by-title/beta",
                                       "expected": 200}]}]}
    r = run_plan(plan, agent=MOODY, extra=["--retries", "2"])
    assert calls(tmp_path) == ["add", "add", "never", "never", "never"], calls(tmp_path)
    add = r.step("add")
    assert add["verdict"] == "FLAKY" and add["reason"].startswith("passed on attempt 2; attempt 1 was FAIL: "), add
    assert [(a["attempt"], a["verdict"]) for a in add["attempts"]] == [(1, "FAIL")]
    never = r.step("never")
    assert never["verdict"] == "FAIL" and [a["attempt"] for a in never["attempts"]] == [1, 2]
    assert never["reason"].endswith("(attempt 3 of 3; earlier: FAIL, FAIL)"), never["reason"]
    assert r.rc == 1  # `never` failed on every attempt
    # each attempt's evidence is kept in its own folder, listed with its hash and the attempt's claim
    rec = r.manifest["steps"]["add"]["attempts"][0]
    assert rec["attempt"] == 1 and rec["folder"] == "attempts/add/1" and rec["verdict"] == "FAIL"
    assert rec["claim"]["note"] == "done (call 1)"
    first = [f for f in rec["files"] if f["kind"] == "http" and f["phase"] == "after"]
    assert first and all(f["path"].startswith("attempts/add/1/evidence/add/after/") for f in first)
    assert json.loads((r.run_dir / first[0]["path"]).read_text())["status"] == 404
    import hashlib

    assert all(hashlib.sha256((r.run_dir / f["path"]).read_bytes()).hexdigest() == f["sha256"] for f in rec["files"])
    assert (r.run_dir / "attempts/add/1/agent/add/stdout.txt").read_text() == "adding\n"
    current = [f["path"] for f in r.manifest["files"] if f["step"] == "add"]
    assert current and not any(p.startswith("attempts/") for p in current)
    assert "add: FAIL; performing it again (attempt 2 of 3)" in r.stdout and "FLAKY" in r.stdout
    case = {c.get("name"): c for c in ET.parse(r.run_dir / "junit.xml").iter("testcase")}
    assert case["add"].find("flakyFailure") is not None and case["add"].find("failure") is None
    assert len(case["never"].findall("rerunFailure")) == 2 and case["never"].find("failure") is not None
    # re-grading later gives the same results, FLAKY included, from the plan's runs folder (its latest run)
    before = (r.run_dir / "results.json").read_bytes()
    rc, out, err = referee_cli("grade", str(r.out / "daily"), "--json", cwd=tmp_path)
    assert json.loads(out)["runs"][0]["run_dir"] == str(r.run_dir)
    assert (r.run_dir / "results.json").read_bytes() == before


def test_flaky_exits_zero_and_fails_only_under_strict(tmp_path, run_plan):
    plan = plan_of(tmp_path, steps(("make", f"FROM_ATTEMPT 2 WRITE {tmp_path / 'made.txt'} yes"),
                                   validators=[{"kind": "command_exit_code",
                                                "command": f"test -f {shlex.quote(str(tmp_path / 'made.txt'))}"}]))
    r = run_plan(plan, agent=MOODY, extra=["--retries", "1"])
    assert r.verdict("make") == "FLAKY" and r.rc == 0, r.explain()
    assert r.results["summary"]["FLAKY"] == 1 and r.results["summary"]["PASS"] == 0
    (tmp_path / "made.txt").unlink()
    (tmp_path / "make.count").unlink()
    r = run_plan(plan, agent=MOODY, extra=["--retries", "1", "--strict"])
    assert r.verdict("make") == "FLAKY" and r.rc == 1


def test_durations_in_console_results_and_junit(tmp_path, run_plan):
    r = run_plan(plan_of(tmp_path, steps(("slow", "SLEEP 0.4"), ("quick", "SAY hi"))), agent=MOODY)
    slow, quick = r.step("slow"), r.step("quick")
    assert slow["duration_s"] >= 0.4 and 0 <= quick["duration_s"] < slow["duration_s"], (slow, quick)
    cases = {c.get("name"): float(c.get("time")) for c in ET.parse(r.run_dir / "junit.xml").iter("testcase")}
    assert cases["slow"] == pytest.approx(slow["duration_s"], abs=0.001)
    suite = ET.parse(r.run_dir / "junit.xml").find("testsuite")
    assert float(suite.get("time")) == pytest.approx(slow["duration_s"] + quick["duration_s"], abs=0.002)
    assert re.search(r"^  slow: PASS · 0\.[4-9]\ds", r.stdout, re.M), r.stdout  # a log's verdict line (no terminal)


def test_latest_link_and_grade_or_report_of_a_plans_runs_folder(tmp_path, referee_cli):
    write_plan(tmp_path / "plan.yaml", plan_of(tmp_path, steps(("a", "SAY a"))))
    out = tmp_path / "runs"
    for _ in range(2):
        rc, so, se = referee_cli("run", "plan.yaml", "--agent", MOODY, "--out", str(out), cwd=tmp_path)
        assert rc == 0, se
    first, second = find_run_dirs(out)
    link = out / "daily" / "latest"
    assert link.is_symlink() and os.readlink(link) == second.name
    rc, so, se = referee_cli("grade", str(out / "daily"), "--json", cwd=tmp_path)
    assert rc == 0 and json.loads(so)["runs"][0]["run_dir"] == str(second), se
    (second / "report.html").unlink()
    rc, so, se = referee_cli("report", str(out / "daily"), cwd=tmp_path)
    assert rc == 0 and (second / "report.html").exists() and so.strip() == str(second / "report.html"), se
    # where links cannot be made, `latest` is a file naming the run: read the same way
    link.unlink()
    link.write_text(first.name + "\n")
    rc, so, se = referee_cli("grade", str(out / "daily"), "--json", cwd=tmp_path)
    assert rc == 0 and json.loads(so)["runs"][0]["run_dir"] == str(first), se
    # the folder above holds several plans' runs: say which to pass
    rc, so, se = referee_cli("grade", str(out), cwd=tmp_path)
    line = assert_one_line_error(rc, so, se)
    assert "several plans' runs" in line and str(out / "daily") in line
    # and the auditor, walking the runs folder, reads each run once (not again through `latest`)
    link.unlink()
    os.symlink(second.name, link)
    rc, so, se = referee_cli("audit", str(out), "--out", str(tmp_path / "audit.jsonl"), cwd=tmp_path)
    assert "Traceback" not in se, se
    assert "daily/latest" not in so + se and (so + se).count(str(out / "daily")) == 2, so + se



@pytest.mark.parametrize("name", ["referee.plan.selection", "referee.plan.preflight", "referee.grader.outcome",
                                  "referee.report.steplines", "referee.report.agentout", "referee.report.html_steps",
                                  "referee.rundir.folders", "referee.grader.results"])
def test_doctests(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted and not result.failed, result
