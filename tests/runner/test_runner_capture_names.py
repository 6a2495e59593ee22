"""A step's captures never take each other's place: a plan may not use the names the runner gives validators'
own captures, no two captures of a step may write one file (`referee check` says so, one line at the place),
and at run time a capture (a plugin's, say) whose file is taken already is a failed capture, never a
replacement of the other's evidence."""

from __future__ import annotations

import json
import os
import textwrap

import pytest

from tests.conftest import run_cli
from tests.runner.runner_helpers import assert_one_line_error, write_plan

ECHO = {"kind": "command", "name": "c", "command": "echo hi"}


def _check(tmp_path, cli_env, captures: list[dict], validators: list[dict] | None = None) -> str:
    plan = write_plan(tmp_path / "plan.yaml", {"steps": [{"id": "a", "do": "x", "capture": captures,
                                                         "validators": validators or []}]})
    rc, out, err = run_cli(["check", str(plan)], cwd=tmp_path, env=cli_env, timeout=60)
    return assert_one_line_error(rc, out, err)


@pytest.mark.parametrize("name", ["_v0_command_exit_code", "_v12_anything", "_screen", "_aria", "_dom"])
def test_a_name_the_runner_gives_validators_captures_is_refused_at_its_line(tmp_path, cli_env, name):
    line = _check(tmp_path, cli_env, [ECHO, {"kind": "command", "name": name, "command": "true"}],
                  [{"kind": "command_exit_code", "command": "false"}])
    # the second capture's `name:` is on line 9 of what yaml.safe_dump writes
    assert "plan.yaml:9:" in line and f"'{name}' is reserved" in line and "rename it" in line, line


def test_a_name_that_only_starts_with_an_underscore_is_a_plan_capture_like_any(tmp_path, run_plan):
    run = run_plan({"steps": [{"id": "a", "do": "x",
                               "capture": [{"kind": "command", "name": "_mine", "command": "echo hello"}],
                               "validators": [{"kind": "text_contains", "evidence": "_mine", "text": "hello"},
                                              {"kind": "command_exit_code", "command": "false", "expected": 1}]}]},
                   agent="true")
    assert run.verdicts() == {"a": "PASS"}, run.explain()


@pytest.mark.parametrize("captures,at,words", [
    ([ECHO, {"kind": "command", "name": "d", "command": "x", "stdout_as": "c.json"}], "stdout_as",
     "'c.json' would be both the stdout_as of capture 'd' and the record of capture 'c'"),
    ([{**ECHO, "stdout_as": "c.error.json"}], "stdout_as",
     "'c.error.json' would be both the stdout_as of capture 'c' and its own failure record"),
    ([{"kind": "file", "name": "d", "path": "/etc/hostname"},
      {"kind": "command", "name": "e", "command": "x", "stdout_as": "d.data"}], "stdout_as",
     "'d.data' would be both the stdout_as of capture 'e' and the copy folder of capture 'd'"),
    ([ECHO, {"kind": "http", "name": "c.error", "url": "http://127.0.0.1:9/"}], "name",
     "'c.error.json' would be both the record of capture 'c.error' and the failure record of capture 'c'"),
], ids=["stdout_as-is-another-record", "stdout_as-is-its-own-failure-record", "stdout_as-is-a-copy-folder",
        "a-name-whose-record-is-another-failure-record"])
def test_two_writes_of_one_file_in_a_step_are_a_plan_error_at_the_place_to_change(tmp_path, cli_env, captures,
                                                                                   at, words):
    line = _check(tmp_path, cli_env, captures)
    assert words in line and "one would replace the other" in line, line
    col = {"stdout_as": "stdout_as:", "name": "name:"}[at]
    text = (tmp_path / "plan.yaml").read_text().splitlines()
    lineno = int(line.split("plan.yaml:")[1].split(":")[0])
    assert col in text[lineno - 1], (line, text)


def test_a_validators_capture_whose_file_a_stdout_as_takes_is_refused_naming_both(tmp_path, cli_env):
    line = _check(tmp_path, cli_env, [{"kind": "command", "name": "g", "command": "x",
                                       "stdout_as": "_v0_file_exists.data"}],
                  [{"kind": "file_exists", "path": "/etc/hostname"}])
    assert "capture '_v0_file_exists'" in line and "stdout_as of capture 'g'" in line, line
    assert "give stdout_as of capture 'g' another name" in line, line


# ------------------------------------------------------------------ at run time: a plugin that writes what it wants

PLUGIN = '''
from pathlib import Path

from referee.plan.captures import CaptureParams
from referee.runner.captures import CaptureKind


class Squatter(CaptureKind):
    summary = "writes a file named `target` (whatever the name)"

    class Params(CaptureParams):
        target: str

    def take(self, params, ctx):
        path = Path(ctx.out_dir) / params.target
        path.write_text('{"squatted": true}')
        return [path]


class Reporter(CaptureKind):
    summary = "writes its failure as {capture_error: ...} in its record, the contract before CaptureFailed"

    def take(self, params, ctx):
        path = Path(ctx.out_dir) / (params.name + ".json")
        path.write_text('{"capture_error": "device offline"}')
        return [path]


class Twice(CaptureKind):
    summary = "writes its record and returns it twice"

    def take(self, params, ctx):
        path = Path(ctx.out_dir) / (params.name + ".json")
        path.write_text("twice")
        return [path, path]
'''


def _site(tmp_path):
    site = tmp_path / "site"
    info = site / "referee_squatter-0.1.dist-info"
    info.mkdir(parents=True)
    (site / "referee_squatter.py").write_text(PLUGIN)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: referee-squatter\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[referee.captures]\nsquatter = referee_squatter:Squatter\n"
                                           "twice = referee_squatter:Twice\nreporter = referee_squatter:Reporter\n")
    return site


def test_a_capture_whose_file_is_taken_fails_and_the_other_capture_keeps_its_evidence(tmp_path, cli_env):
    """The plan check cannot know what a plugin writes: `squatter` writes c.json, capture c's record. The runner
    keeps c's record (PASS, no "modified after capture") and makes the squatter's capture a failed one (ERROR,
    saying why); `twice` returns one file twice and it is listed once."""
    env = dict(cli_env, PYTHONPATH=os.pathsep.join([str(_site(tmp_path)), cli_env.get("PYTHONPATH", "")]))
    steps = [{"id": "a", "do": "x",
              "capture": [{**ECHO, "command": "echo hello"}, {"kind": "squatter", "name": "p", "target": "c.json"}],
              "validators": [{"kind": "text_contains", "evidence": "c", "text": "hello"}]},
             {"id": "b", "do": "x", "capture": [{"kind": "squatter", "name": "p", "target": "c.json"}, ECHO],
              "validators": [{"kind": "command_exit_code", "evidence": "c"}]},
             {"id": "t", "do": "x", "capture": [{"kind": "twice", "name": "w"}],
              "validators": [{"kind": "text_contains", "evidence": "w", "text": "twice"}]},
             {"id": "s", "do": "x", "capture": [ECHO, {"kind": "squatter", "name": "p", "target": "c.json"}],
              "validators": [{"kind": "text_contains", "evidence": "p", "text": "squatted"}]}]
    plan = write_plan(tmp_path / "plan.yaml", {"steps": steps})
    rc, out, err = run_cli(["run", str(plan), "--agent", "true", "--out", str(tmp_path / "out"), "--json"],
                           cwd=tmp_path, env=env, timeout=120)
    assert "Traceback" not in err, err
    res = {s["id"]: s for s in json.loads(out)["runs"][0]["steps"]}
    verdicts = {sid: s["verdict"] for sid, s in res.items()}
    # b: the squatter went first, so c.json is its file; c (the runner's command) is the one refused
    assert verdicts == {"a": "PASS", "b": "ERROR", "t": "PASS", "s": "ERROR"}, json.dumps(res, indent=1)[:4000]
    assert "would replace a file of another capture" in res["s"]["reason"], res["s"]["reason"]
    assert "would replace a file of another capture" in res["b"]["reason"], res["b"]["reason"]
    assert "modified after capture" not in out
    run_dir = next((tmp_path / "out").glob("plan/2*"))
    paths = [f["path"] for f in json.loads((run_dir / "manifest.json").read_text())["files"]]
    assert len(paths) == len(set(paths)), paths
    assert json.loads((run_dir / "evidence/a/after/c.json").read_text())["stdout"] == "hello\n"
    assert not [p for p in (run_dir / "evidence").rglob(".capture-*")], "a capture's own folder was left behind"
    rc2, out2, err2 = run_cli(["grade", str(run_dir), "--json"], cwd=tmp_path, env=env, timeout=60)
    regraded = {s["id"]: s["verdict"] for s in json.loads(out2)["runs"][0]["steps"]}
    assert regraded == verdicts, err2
    assert rc == 1


def test_a_frozen_plan_with_such_names_still_grades():
    """Run directories written before these rules keep their plan: grading loads it as it is."""
    from referee.plan.loader import load_plan_text

    text = textwrap.dedent("""\
        actor: {kind: command, command: "true", timeout_s: 0}
        steps:
          - id: a
            capture: [{kind: command, name: _v0_command_exit_code, command: "true", stdout_as: x.json}]
            validators: [{kind: command_exit_code, command: "false"}]
        """)
    lp = load_plan_text(text, "plan.yaml", frozen=True)
    assert [c.params.name for c in lp.captures["a"]] == ["_v0_command_exit_code"]


def test_a_plugin_that_writes_its_failure_as_capture_error_is_a_failed_capture_in_the_manifest(tmp_path, cli_env):
    """Plugins written before CaptureFailed report a failure as `{"capture_error": ...}` in their record: the
    manifest entry keeps it as the capture's error (the run-time staging of captures dropped that once)."""
    env = dict(cli_env, PYTHONPATH=os.pathsep.join([str(_site(tmp_path)), cli_env.get("PYTHONPATH", "")]))
    plan = write_plan(tmp_path / "plan.yaml", {"steps": [{"id": "a", "do": "x", "capture": [
        {"kind": "reporter", "name": "r"}], "validators": [{"kind": "text_contains", "evidence": "r", "text": "x"}]}]})
    rc, out, err = run_cli(["run", str(plan), "--agent", "true", "--out", str(tmp_path / "out"), "--json"],
                           cwd=tmp_path, env=env, timeout=120)
    assert "Traceback" not in err, err
    (run_dir,) = [p for p in (tmp_path / "out").rglob("manifest.json")]
    entries = [f for f in json.loads(run_dir.read_text())["files"] if f.get("capture") == "r"]
    assert [e.get("error") for e in entries] == ["device offline"], entries
    assert json.loads(out)["runs"][0]["steps"][0]["verdict"] == "ERROR"


# ---- names and kinds of captures in a plan, and in a frozen plan of an older run ---------------------------------

CAPTURE_PLAN = """
steps:
  - id: s
    do: look
    capture:
      - {kind: %s, name: "%s", command: "echo hi"}
"""


@pytest.mark.parametrize("name", ["../../escaped", "/etc/passwd", "a/../../b", "c:\\\\x", "api/order"])
def test_capture_names_that_leave_the_run_directory_are_plan_errors(name):
    from referee.errors import PlanError
    from referee.plan.loader import load_plan_text

    # a capture name is a name (issue 9): not even a folder inside the run directory
    with pytest.raises(PlanError, match="a name, not a path"):
        load_plan_text(CAPTURE_PLAN % ("command", name), "p.yaml")
    if name == "api/order":  # a run directory from before that rule still grades
        lp = load_plan_text(CAPTURE_PLAN % ("command", name), "plan.yaml", frozen=True)
        assert lp.captures["s"][0].params.name == name
    else:
        with pytest.raises(PlanError, match="inside the run directory"):
            load_plan_text(CAPTURE_PLAN % ("command", name), "plan.yaml", frozen=True)


def test_a_frozen_plan_keeps_a_capture_kind_that_is_not_installed():
    from referee.errors import PlanError
    from referee.plan.loader import load_plan_text

    # a plugin's kind, not installed here (android_screen was one until it became a built-in kind)
    text = CAPTURE_PLAN % ("kiosk_screen", "home")
    with pytest.raises(PlanError, match="unknown capture kind 'kiosk_screen'"):
        load_plan_text(text, "p.yaml")
    lp = load_plan_text(text, "runs/x/plan.yaml", frozen=True)
    [cap] = lp.captures["s"]
    assert cap.params.name == "home" and cap.params.kind == "kiosk_screen"
