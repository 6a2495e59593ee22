"""User isolation judges the agent's command from where the agent runs: a relative program path the agent's
account can run gets `user`, and an explicit `isolation: user` that cannot work is a plan error (exit 2) before
any run directory exists (cases a black-box tester found)."""

from __future__ import annotations

import os

import pytest

from tests.runner.runner_helpers import assert_one_line_error, find_run_dirs

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="user isolation needs the runner to be root")
STEP = {"id": "s1", "do": "say hello", "validators": [{"kind": "text_contains", "evidence": "note.txt",
                                                         "text": "hello"}]}


def _agent(folder) -> None:
    folder.mkdir(mode=0o755, exist_ok=True)
    folder.chmod(0o755)
    script = folder / "good.sh"
    script.write_text('#!/bin/sh\necho hello > "$REFEREE_AGENT_DIR/note.txt"\n')
    script.chmod(0o755)


def test_a_relative_agent_path_the_account_can_run_gets_user_isolation(tmp_path, run_plan):
    tmp_path.chmod(0o755)
    _agent(tmp_path / "agents")
    run = run_plan({"name": "rel", "actor": {"kind": "command", "command": "agents/good.sh"}, "steps": [STEP]})
    assert run.manifest["isolation"]["mode"] == "user", run.manifest["isolation"]
    assert run.verdict("s1") == "PASS", run.explain()


def test_an_explicit_user_isolation_that_cannot_work_is_a_plan_error_before_any_run(tmp_path, run_plan):
    tmp_path.chmod(0o755)
    hidden = tmp_path / "hidden"
    _agent(hidden)
    hidden.chmod(0o700)  # root's alone: the agent's account cannot reach the program
    run = run_plan({"name": "unreach", "actor": {"kind": "command", "command": f"{hidden}/good.sh",
                                                 "isolation": "user"}, "steps": [STEP]})
    line = assert_one_line_error(run.rc, run.stdout, run.stderr)
    assert f"actor.isolation: user cannot work here: cannot run {hidden}/good.sh" in line, line
    assert "chmod o+rx" in line, line
    assert find_run_dirs(run.out) == [], "a run directory was made for a run that could not start"
