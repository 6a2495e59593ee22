"""Actors: the command-actor protocol (env, stdin, agent dir), no secrets leak to the agent, the
agent's exit code decides nothing, per-step timeouts, a lying agent earns no PASS, and the Python
actor API (`referee.Actor`, `StepContext`)."""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.runner.runner_helpers import agent_cmd, app_block, kill_marked, wait_unmarked

SECRETS = {"REFEREE_TEST_SECRET": "rt-secret-5f1e9a77", "DATABASE_PASSWORD": "dbpw-0c3d2b19",
           "AWS_SECRET_ACCESS_KEY": "aws-secret-7e6a11f0", "GITHUB_TOKEN": "ghp_fake_4d4d4d4d"}


def test_agent_env_carries_the_protocol_and_nothing_of_the_runners_secrets(tmp_path, cli_env, run_plan):
    env = {**cli_env, **SECRETS}
    plan = {
        "name": "envcheck",
        "app": app_block(tmp_path / "app.db"),
        "actor": {"kind": "command", "command": agent_cmd("envdump"), "env": {"GREETING": "hello-agent"}},
        "steps": [{"id": "look", "do": "Look at the environment.",
                   "validators": [{"kind": "text_contains", "evidence": "env.json", "text": "REFEREE_STEP_ID"}]}],
    }
    run = run_plan(plan, env=env)
    assert run.run_dir is not None, run.explain()
    agent_dir = run.run_dir / "agent" / "look"
    seen = json.loads((agent_dir / "env.json").read_text())
    for key, value in SECRETS.items():
        assert key not in seen, f"the runner's {key} reached the agent"
        assert value not in json.dumps(seen), f"the value of {key} reached the agent"
    assert seen["REFEREE_STEP_ID"] == "look"
    assert seen["REFEREE_STEP_DO"].strip() == "Look at the environment."
    assert seen["REFEREE_APP_URL"].startswith("http://127.0.0.1:") and "{port}" not in seen["REFEREE_APP_URL"]
    from pathlib import Path

    assert Path(seen["REFEREE_AGENT_DIR"]).resolve() == agent_dir.resolve()
    assert seen.get("REFEREE_CLAIM_FILE"), "no claim file path given"
    assert seen.get("GREETING") == "hello-agent", "actor.env was not passed to the agent"
    stdin = json.loads((agent_dir / "stdin.json").read_text())
    assert isinstance(stdin, dict) and stdin.get("id") == "look", stdin
    assert "Look at the environment." in (stdin.get("do") or ""), stdin
    # no secret anywhere in the run directory
    for p in run.run_dir.rglob("*"):
        if p.is_file():
            data = p.read_bytes()
            for key, value in SECRETS.items():
                assert value.encode() not in data, f"{key}'s value is in {p}"
    assert run.verdict("look") == "PASS", run.explain()


def test_agent_exit_code_decides_nothing(tmp_path, run_plan):
    plan = {"name": "exitcode", "steps": [
        {"id": "did_it_then_crashed", "do": "SAVE out.txt done\nEXIT 7",
         "validators": [{"kind": "text_contains", "evidence": "out.txt", "text": "done"}]},
        {"id": "clean_exit_no_work", "do": "Nothing.",
         "validators": [{"kind": "text_contains", "evidence": "out.txt", "text": "done"}]},
    ]}
    run = run_plan(plan, agent=agent_cmd("honest"))
    assert run.verdict("did_it_then_crashed") == "PASS", run.explain()
    assert run.verdict("clean_exit_no_work") == "ERROR", run.explain()  # its evidence is missing
    assert run.manifest["steps"]["did_it_then_crashed"]["status"] == "done"


def test_agent_that_cannot_be_started_is_no_pass(tmp_path, run_plan):
    plan = {"name": "noagent", "steps": [
        {"id": "s1", "do": "x", "validators": [{"kind": "command_exit_code", "command": "true"}]},
        {"id": "s2", "do": "x", "validators": [{"kind": "file_exists", "path": "never.txt"}]}]}
    run = run_plan(plan, agent=str(tmp_path / "no-such-agent-binary"))
    assert "Traceback" not in run.stderr, run.stderr
    assert run.rc != 0, run.explain()
    if run.run_dir is not None and (run.run_dir / "results.json").exists():
        assert run.verdict("s2") != "PASS"


def test_step_timeout_kills_the_agent_and_its_children_and_the_run_goes_on(tmp_path, run_plan):
    plan = {
        "name": "timeouts",
        "app": app_block(tmp_path / "app.db"),
        "actor": {"kind": "command", "command": agent_cmd("sleeper", "120"), "timeout_s": 2},
        "steps": [
            {"id": "slow", "do": 'POST /api/notes {"title": "slow"}',
             "validators": [{"kind": "http_status_eq", "url": "/api/notes/by-title/never", "expected": 200}]},
            {"id": "after", "do": 'POST /api/notes {"title": "after"}',
             "validators": [{"kind": "http_status_eq", "url": "/api/notes/by-title/after", "expected": 200}]},
        ],
    }
    run = run_plan(plan, timeout=90)
    pids = []
    try:
        assert run.run_dir is not None, run.explain()
        for sid in ("slow", "after"):
            for name in ("pid", "child_pid"):
                p = run.run_dir / "agent" / sid / name
                if p.exists():
                    pids.append(int(p.read_text()))
        for sid in ("slow", "after"):  # the 2 s timeout stopped the sleeper (of 120 s) in each step
            assert run.manifest["steps"][sid]["actor_timed_out"] is True, run.manifest["steps"][sid]
        assert len(pids) == 4, f"the sleeper did not record its pids in both steps: {pids}"
        survivors = wait_unmarked(tmp_path, 5)
        assert not survivors, f"agent processes {survivors} outlived their step's timeout"
        assert run.verdict("slow") in ("FAIL", "ERROR"), run.explain()
        assert run.verdict("after") == "PASS", run.explain()  # the sleeper did the POST before sleeping
        info = run.manifest["steps"]["slow"]
        assert info["status"] == "done", info
    finally:
        kill_marked(tmp_path)


def test_per_step_timeout(tmp_path, run_plan):
    plan = {"name": "steptimeout", "steps": [
        {"id": "slow", "timeout_s": 2, "do": "RUN echo $PPID > {agent_dir}/pid\nSLEEP 60\nSAVE late.txt late",
         "validators": [{"kind": "text_contains", "evidence": "late.txt", "text": "late"}]},
        {"id": "quick", "do": "SAVE a.txt ok",
         "validators": [{"kind": "text_contains", "evidence": "a.txt", "text": "ok"}]},
    ]}
    run = run_plan(plan, agent=agent_cmd("honest"), timeout=90)
    try:
        rec = run.manifest["steps"]["slow"]
        assert rec["actor_timed_out"] is True and "timed out after 2s" in rec["actor_error"], rec  # not SLEEP 60
        assert run.manifest["steps"]["quick"]["actor_timed_out"] is False
        assert (run.run_dir / "agent/slow/pid").read_text().strip(), "the agent did not start"
        assert not wait_unmarked(tmp_path, 5), "the agent outlived its step's timeout"
        assert run.verdict("slow") == "ERROR", run.explain()  # late.txt was never written
        assert run.verdict("quick") == "PASS", run.explain()
    finally:
        kill_marked(tmp_path)


def _liar_plan(W) -> dict:
    sqlite_url = f"sqlite:///{W}/app.db"
    return {
        "name": "lies",
        "app": app_block(W / "app.db"),
        "steps": [
            {"id": "create", "do": 'POST /api/notes {"title": "alpha", "body": "hello"}',
             "validators": [{"kind": "http_status_eq", "url": "/api/notes/by-title/alpha", "expected": 200}]},
            {"id": "body", "do": 'POST /api/notes {"title": "beta", "body": "the answer is 42"}',
             "validators": [{"kind": "http_body_contains", "url": "/api/notes/by-title/beta", "text": "answer is 42"}]},
            {"id": "json", "do": 'POST /api/notes {"title": "gamma", "tags": ["x"]}',
             "validators": [{"kind": "json_path_eq", "url": "/api/notes/by-title/gamma", "path": "$.tags[0]",
                             "expected": "x"}]},
            {"id": "row", "do": 'POST /api/notes {"title": "delta"}',
             "validators": [{"kind": "sql_row_present", "url": sqlite_url, "table": "notes",
                             "where": {"title": "delta"}}]},
            {"id": "file", "do": f"WRITE {W}/report.md # Report",
             "validators": [{"kind": "file_exists", "path": "report.md"},
                            {"kind": "command_exit_code", "command": "grep -q Report report.md"}]},
            {"id": "saved", "do": "SAVE result.txt build ok",
             "validators": [{"kind": "text_contains", "evidence": "result.txt", "text": "build ok"},
                            {"kind": "regex_match", "evidence": "result.txt", "pattern": "build (ok|passed)"}]},
            {"id": "chat", "do": "Say something nice."},
        ],
    }


@pytest.mark.parametrize("agent", ["honest", "liar"])
def test_a_lying_agent_earns_no_pass(tmp_path, run_plan, agent):
    run = run_plan(_liar_plan(tmp_path), agent=agent_cmd(agent))
    verdicts = run.verdicts()
    assert len(verdicts) == 7, run.explain()
    assert verdicts["chat"] == "SKIPPED"
    if agent == "honest":  # the control: the same plan, the work done, every validator holds
        assert {v for k, v in verdicts.items() if k != "chat"} == {"PASS"}, run.explain()
        assert run.rc == 0
    else:
        assert "PASS" not in verdicts.values(), run.explain()
        assert all(s["claim"] and s["claim"]["pass"] is True for s in run.results["steps"])
        assert all(s["overclaim"] for s in run.results["steps"])
        assert run.results["summary"]["overclaims"] == 7
        assert run.rc == 1


# ------------------------------------------------------------ the Python actor


PY_ACTORS = textwrap.dedent('''
    import json
    import urllib.request

    import referee


    class NotesActor(referee.Actor):
        """Creates a note titled after the step, saves a receipt, claims pass."""

        def act(self, ctx):
            assert isinstance(ctx, referee.StepContext)
            req = urllib.request.Request(ctx.app_url.rstrip("/") + "/api/notes", method="POST",
                                         data=json.dumps({"title": ctx.step_id, "body": ctx.do}).encode(),
                                         headers={"Content-Type": "application/json"})
            urllib.request.urlopen(req, timeout=10).read()
            p = ctx.save("receipt.txt", f"created {ctx.step_id}")
            assert p.exists() and str(p).startswith(str(ctx.agent_dir))
            return ctx.claim(True, note="created it", evidence=["receipt.txt"])


    class LyingActor(referee.Actor):
        """Does nothing and says it did."""

        def act(self, ctx):
            return {"pass": True, "note": "trust me", "evidence": []}
''')


def _py_plan(W, target: str) -> dict:
    return {
        "name": "pyactor",
        "app": app_block(W / "app.db"),
        "actor": {"kind": "python", "target": target},
        "steps": [{"id": "py1", "do": "create the note",
                   "validators": [{"kind": "http_status_eq", "url": "/api/notes/by-title/py1", "expected": 200},
                                  {"kind": "text_contains", "evidence": "receipt.txt", "text": "created py1"}]}],
    }


@pytest.fixture
def py_env(tmp_path, cli_env):
    mod_dir = tmp_path / "pyactors"
    mod_dir.mkdir()
    (mod_dir / "notes_actors.py").write_text(PY_ACTORS)
    return {**cli_env, "PYTHONPATH": f"{mod_dir}:{cli_env.get('PYTHONPATH', '')}"}


def test_python_actor_does_the_work_and_saves_evidence(tmp_path, run_plan, py_env):
    run = run_plan(_py_plan(tmp_path, "notes_actors:NotesActor"), env=py_env)
    assert run.verdict("py1") == "PASS", run.explain()
    step = run.step("py1")
    assert step["claim"]["pass"] is True and step["claim"]["note"] == "created it", step
    files = {f["path"]: f for f in run.manifest["files"]}
    assert files.get("agent/py1/receipt.txt", {}).get("captured_by") == "agent", files
    assert run.rc == 0


def test_python_actor_claim_has_no_influence(tmp_path, run_plan, py_env):
    run = run_plan(_py_plan(tmp_path, "notes_actors:LyingActor"), env=py_env)
    step = run.step("py1")
    assert step["verdict"] in ("FAIL", "ERROR"), run.explain()  # no note (FAIL), no receipt (ERROR)
    assert step["claim"]["pass"] is True and step["overclaim"] is True, step
    assert run.rc == 1
