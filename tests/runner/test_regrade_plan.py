"""Issue 34, item 8: `referee grade RUN --plan FIXED.yaml` grades a run's sealed evidence with a corrected plan
into RUN/regrades/<stamp>-<plan sha8>/, sealed; the run itself stays as it was and still verifies."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import pytest

from referee.cli.main import main
from tests.conftest import base_cli_env, run_cli
from tests.runner.runner_helpers import find_run_dirs, write_plan

PLAN = {
    "name": "fixme",
    "actor": {"kind": "command", "command": "true"},
    "steps": [
        # the expectation is wrong: the command exits 3, and 3 is right
        {"id": "wrong", "do": "nothing", "validators": [{"kind": "command_exit_code", "command": "exit 3"}]},
        {"id": "fine", "do": "nothing", "validators": [{"kind": "command_exit_code", "command": "true"}]},
        {"id": "captured", "do": "nothing", "capture": [{"kind": "command", "name": "listing", "command": "echo hi"}],
         "validators": [{"kind": "command_exit_code", "evidence": "listing"}]},
    ],
}


def _fixed(**edits) -> dict:
    """The run's plan with the wrong expectation fixed, and `edits` (step id -> function changing that step)."""
    plan = copy.deepcopy(PLAN)
    plan["steps"][0]["validators"][0]["expected"] = 3
    for s in plan["steps"]:
        if s["id"] in edits:
            edits[s["id"]](s)
    return plan


def _files(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and "regrades" not in p.relative_to(folder).parts}


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    home = tmp_path_factory.mktemp("regrade")
    plan = write_plan(home / "fixme.yaml", PLAN)
    code, _, err = run_cli(["run", plan, "--out", home / "runs"], cwd=home, env=base_cli_env())
    assert code == 1, err
    run_dir = find_run_dirs(home / "runs")[-1]
    verdicts = {s["id"]: s["verdict"] for s in json.loads((run_dir / "results.json").read_text())["steps"]}
    assert verdicts == {"wrong": "FAIL", "fine": "PASS", "captured": "PASS"}, err
    return home, run_dir, _files(run_dir)


def _cli(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def _regrade(capsys, home: Path, run_dir: Path, plan: dict, name: str = "fixed.yaml"):
    fixed = write_plan(home / name, plan)
    code, out, err = _cli(capsys, "grade", run_dir, "--plan", fixed, "--json")
    doc = json.loads(out)["runs"][0]
    folder = Path(doc["regrade_dir"])
    return code, doc, folder, fixed


def test_a_fixed_expectation_goes_fail_to_pass_in_a_sealed_regrade_and_the_run_stays_as_it_was(ran, capsys):
    home, run_dir, before = ran
    code, doc, folder, fixed = _regrade(capsys, home, run_dir, _fixed())
    assert code == 0, doc
    assert {s["id"]: s["verdict"] for s in doc["steps"]} == {"wrong": "PASS", "fine": "PASS", "captured": "PASS"}
    mine = hashlib.sha256(fixed.read_bytes()).hexdigest()
    assert folder.parent == run_dir / "regrades" and folder.name.endswith(mine[:8])
    assert _files(run_dir) == before  # results.json, report.html, junit.xml, plan.yaml, seal: untouched
    # every output names both plans by their hashes
    theirs = hashlib.sha256((run_dir / "plan.yaml").read_bytes()).hexdigest()
    results = json.loads((folder / "results.json").read_text())
    assert (results["regrade"]["plan_sha256"], results["regrade"]["run_plan_sha256"]) == (mine, theirs)
    for name in ("report.html", "junit.xml", "regrade.json"):
        text = (folder / name).read_text()
        assert mine in text and theirs in text, name
    assert (folder / "plan.yaml").read_bytes() == fixed.read_bytes()
    # the run still verifies, and grades as before
    code, out, err = _cli(capsys, "grade", run_dir, "--json")
    graded = json.loads(out)["runs"][0]
    assert graded["integrity"]["status"] == "verified" and code == 1
    assert {s["id"]: s["verdict"] for s in graded["steps"]}["wrong"] == "FAIL"
    # and the regrade folder verifies against its seal
    code, out, err = _cli(capsys, "grade", folder)
    assert code == 0 and "regrade seal verified" in out, out + err


def _add_validator(step: dict) -> None:  # its capture (the implicit one of validator #1) was never taken
    step["validators"].append({"kind": "command_exit_code", "command": "test -d /"})


def _new_capture(step: dict) -> None:  # a capture this plan declares that the run did not take
    step["capture"].append({"kind": "command", "name": "other", "command": "echo other"})
    step["validators"] = [{"kind": "command_exit_code", "evidence": "other"}]


def _changed_capture(step: dict) -> None:  # same name, another command: the run's file answers another question
    step["capture"][0]["command"] = "echo bye"


def _needs_before(step: dict) -> None:  # require_change needs evidence from before the step, never taken
    step["validators"][0]["require_change"] = True


@pytest.mark.parametrize("step, edit, why", [
    ("fine", _add_validator, "not captured in this run: the run took no capture '_v1_command_exit_code'"),
    ("captured", _new_capture, "not captured in this run: the run took no capture 'other'"),
    ("captured", _changed_capture,
     "not captured in this run: the run's capture 'listing' was taken with another command"),
    ("fine", _needs_before, "not captured in this run"),
])
def test_a_validator_whose_capture_the_run_did_not_take_is_error_not_captured(ran, capsys, step, edit, why):
    home, run_dir, before = ran
    code, doc, folder, _ = _regrade(capsys, home, run_dir, _fixed(**{step: edit}), f"fixed-{edit.__name__}.yaml")
    res = {s["id"]: s for s in doc["steps"]}
    assert res[step]["verdict"] == "ERROR", res[step]
    assert why in res[step]["reason"], res[step]["reason"]
    assert res["wrong"]["verdict"] == "PASS" and code == 1
    assert _files(run_dir) == before


def test_a_step_the_run_did_not_have_is_error_not_in_this_run(ran, capsys):
    home, run_dir, before = ran
    plan = _fixed()
    plan["steps"].append({"id": "brand_new", "do": "x",
                          "validators": [{"kind": "command_exit_code", "command": "true"}]})
    code, doc, folder, _ = _regrade(capsys, home, run_dir, plan, "fixed-new-step.yaml")
    new = next(s for s in doc["steps"] if s["id"] == "brand_new")
    assert new["verdict"] == "ERROR" and new["reason"].startswith("not in this run"), new
    assert doc["regrade"]["not_in_run"] == ["brand_new"] and code == 1


@pytest.mark.parametrize("name, edit", [
    ("results.json", lambda t: t.replace('"verdict": "PASS"', '"verdict": "FAIL"', 1)),
    ("report.html", lambda t: t.replace("PASS", "FAIL", 1)),
    ("plan.yaml", lambda t: t + "\n# edited\n"),
    ("regrade.json", lambda t: t.replace('"run"', '"run" ', 1)),
])
def test_a_tampered_regrade_folder_fails_verification(ran, capsys, name, edit):
    home, run_dir, _ = ran
    _, _, folder, _ = _regrade(capsys, home, run_dir, _fixed(), f"fixed-tamper-{name}.yaml")
    path = folder / name
    path.write_text(edit(path.read_text()))
    code, out, err = _cli(capsys, "grade", folder)
    assert code == 1, out + err
    assert f"REGRADE SEAL CHECK FAILED: {name}: sha256 differs" in out.replace("\n", " "), out


def test_editing_the_frozen_plan_is_a_seal_failure_that_points_at_plan(tmp_path, ran, capsys):
    import shutil

    home, run_dir, _ = ran
    copy_dir = tmp_path / "copy"
    shutil.copytree(run_dir, copy_dir, ignore=shutil.ignore_patterns("regrades"))
    (copy_dir / "plan.yaml").write_text((copy_dir / "plan.yaml").read_text() + "\n# fixed by hand\n")
    code, out, err = _cli(capsys, "grade", copy_dir, "--json")
    reason = json.loads(out)["runs"][0]["integrity"]["reason"]
    assert code == 1 and reason.startswith("plan.yaml differs")
    assert f"referee grade {copy_dir} --plan FIXED.yaml" in reason
    # and a regrade of it is refused in one line: its evidence is no longer sealed
    fixed = write_plan(tmp_path / "fixed.yaml", _fixed())
    code, out, err = _cli(capsys, "grade", copy_dir, "--plan", fixed)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code != 0 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("referee: error:") and "cannot re-grade: plan.yaml differs" in lines[0]
    assert not (copy_dir / "regrades").exists()


def test_a_retried_step_is_regraded_attempt_by_attempt(tmp_path, capsys):
    """With --retries the run's plan failed the step twice; under the corrected plan each attempt passes: PASS."""
    plan = write_plan(tmp_path / "fixme.yaml", PLAN)
    code, _, err = run_cli(["run", plan, "--out", tmp_path / "runs", "--retries", "1"], cwd=tmp_path,
                           env=base_cli_env())
    run_dir = find_run_dirs(tmp_path / "runs")[-1]
    wrong = next(s for s in json.loads((run_dir / "results.json").read_text())["steps"] if s["id"] == "wrong")
    assert code == 1 and wrong["verdict"] == "FAIL" and [a["verdict"] for a in wrong["attempts"]] == ["FAIL"], err
    code, doc, folder, _ = _regrade(capsys, tmp_path, run_dir, _fixed())
    step = next(s for s in doc["steps"] if s["id"] == "wrong")
    assert code == 0 and step["verdict"] == "PASS", step
    assert [a["verdict"] for a in step["attempts"]] == ["PASS"]


VAR_PLAN = {
    "name": "variables",
    "actor": {"kind": "command", "command": "true"},
    "steps": [{"id": "greet", "do": "nothing",
               "capture": [{"kind": "command", "name": "greeting", "command": "echo ${GREETING}"}],
               "validators": [{"kind": "text_contains", "evidence": "greeting", "text": "${WANT}"}]}],
}


@pytest.fixture(scope="module")
def var_run(tmp_path_factory):
    home = tmp_path_factory.mktemp("regrade-vars")
    plan = write_plan(home / "variables.yaml", VAR_PLAN)
    env = {**base_cli_env(), "GREETING": "hello", "WANT": "goodbye"}  # the run's expectation is wrong
    code, _, err = run_cli(["run", plan, "--out", home / "runs"], cwd=home, env=env)
    assert code == 1, err
    return home, find_run_dirs(home / "runs")[-1]


def test_a_regrade_needs_no_capture_variable_it_does_not_capture_with(var_run, capsys, monkeypatch):
    home, run_dir = var_run
    monkeypatch.delenv("GREETING", raising=False)  # the capture's variable: the regrade takes no capture
    monkeypatch.setenv("WANT", "hello")  # the corrected expectation
    code, doc, folder, _ = _regrade(capsys, home, run_dir, VAR_PLAN, "variables-fixed.yaml")
    assert code == 0 and [s["verdict"] for s in doc["steps"]] == ["PASS"], doc["steps"]
    assert folder.is_dir()


def test_a_regrade_with_a_validator_variable_unset_says_which_before_it_grades(var_run, capsys, monkeypatch):
    home, run_dir = var_run
    monkeypatch.delenv("GREETING", raising=False)
    monkeypatch.delenv("WANT", raising=False)
    fixed = write_plan(home / "variables-unset.yaml", VAR_PLAN)
    regrades = lambda: sorted((run_dir / "regrades").glob("*"))  # noqa: E731
    before = regrades()
    code, out, err = _cli(capsys, "grade", run_dir, "--plan", fixed)
    assert code == 2, out + err
    assert "environment variable 'WANT' is not set" in err and "GREETING" not in err, err
    assert regrades() == before  # nothing graded, nothing written
