"""`referee run --summary-md` and $GITHUB_STEP_SUMMARY: a run's Markdown for a CI job page, with the new
failures against the previous complete run; what an agent wrote never acts as Markdown there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from referee.grader.results import Integrity, RunResults, StepResult
from referee.report.markdown import run_summary
from referee.runner.history import compare, incomplete_reason, previous_complete, read_results
from tests.runner.runner_helpers import write_plan


def _plan(tmp: Path, flag: Path, fixed: Path) -> Path:
    """Three steps graded by commands the runner runs: `stable` always holds, `flaky_add` holds while `flag`
    exists, `fixed_step` once `fixed` exists. The agent claims pass every time (a shell line: no interpreter
    to start for each step)."""
    def exists(p: Path) -> dict:
        return {"kind": "command_exit_code", "command": f"test -e '{p}'"}
    claim = """sh -c 'echo "{\\"pass\\": true, \\"note\\": \\"nothing to do\\"}" > "$REFEREE_CLAIM_FILE"'"""
    return write_plan(tmp / "nightly.yaml", {
        "name": "nightly", "actor": {"kind": "command", "command": claim},
        "steps": [{"id": "stable", "do": "nothing to do", "validators": [{"kind": "command_exit_code",
                                                                           "command": "true"}]},
                  {"id": "flaky_add", "do": "nothing to do", "validators": [exists(flag)]},
                  {"id": "fixed_step", "do": "nothing to do", "validators": [exists(fixed)]}]})


def _runs(out: Path) -> list[Path]:
    return sorted((d for d in (out / "nightly").iterdir() if not d.is_symlink() and d.is_dir()),
                  key=lambda d: (d.name.partition("-")[0], int(d.name.partition("-")[2] or 0)))


def _table_rows(md: str) -> dict[str, list[str]]:
    """The summary table's rows by step (cells split on the pipes GFM splits on: those not escaped)."""
    rows = {}
    for line in md.splitlines():
        if line.startswith("| ") and not line.startswith("| step "):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            rows[cells[0].replace("\\", "")] = cells
    return rows


def test_a_second_night_with_a_new_failure_names_it_in_the_job_summary(tmp_path, referee_cli, cli_env):
    out, flag, fixed = tmp_path / "runs", tmp_path / "flag", tmp_path / "fixed"
    plan = _plan(tmp_path, flag, fixed)
    flag.write_text("x")
    # in tmp_path: the runner sweeps its working folder after each step (the repo's .venv: 40,000 entries)
    code, _, err = referee_cli("run", plan, "--out", out, cwd=tmp_path)  # night 1: flaky_add passes, fixed_step fails
    assert code == 1, err
    flag.unlink()
    # a partial run in between (--only): FAIL then FAIL would hide the new failure if it were compared with
    code, _, err = referee_cli("run", plan, "--out", out, "--only", "flaky_add", cwd=tmp_path)
    assert code == 1, err
    fixed.write_text("x")
    step_summary = tmp_path / "step_summary.md"
    step_summary.write_text("## an earlier step's summary\n")
    summary = tmp_path / "ci" / "summary.md"
    summary.parent.mkdir()
    cli_env["GITHUB_STEP_SUMMARY"] = str(step_summary)
    code, _, err = referee_cli("run", plan, "--out", out, "--summary-md", summary, cwd=tmp_path)  # night 2
    assert code == 1, err
    night1, partial, night2 = _runs(out)
    assert incomplete_reason(partial) == "partial: --only flaky_add" and incomplete_reason(night1) is None
    assert previous_complete(night2) == night1

    md = summary.read_text()
    assert "2 PASS · 1 FAIL · 0 ERROR · 1 overclaim" in md
    assert f"Against the previous complete run {night1.name.replace('-', chr(92) + '-')}: **1 new failure**: " \
           "flaky\\_add; 1 fixed: fixed\\_step." in md
    rows = _table_rows(md)
    assert set(rows) == {"flaky_add"}  # fixed_step passes now; stable never failed
    step, verdict, reason, claimed = rows["flaky_add"]
    assert verdict == "**FAIL** (new)" and "exit" in reason and claimed.startswith("**pass** (OVERCLAIM)")
    # links are relative to the summary file's folder; the step summary's to the working folder
    rel = f"../runs/nightly/{night2.name}/report.html"
    assert f"[report\\.html]({rel})" in md and (summary.parent / rel).is_file()
    appended = step_summary.read_text()
    assert appended.startswith("## an earlier step's summary\n")  # appended, as GitHub expects
    assert f"[report\\.html](runs/nightly/{night2.name}/report.html)" in appended
    assert appended.count("### referee run: nightly") == 1


def test_a_missing_summary_folder_is_a_usage_error_before_anything_runs(tmp_path, referee_cli):
    plan = _plan(tmp_path, tmp_path / "flag", tmp_path / "fixed")
    code, _, err = referee_cli("run", plan, "--out", tmp_path / "runs", "--summary-md", tmp_path / "no" / "s.md",
                               cwd=tmp_path)
    assert code == 2 and "--summary-md" in err and "folder does not exist" in err and "Traceback" not in err
    assert not (tmp_path / "runs").exists()


HOSTILE = "exit 1 | <img src=x onerror=alert(1)> **bold** [link](http://evil.example) `code`\n| forged | row |"


@pytest.mark.parametrize("field", ["reason", "id", "note"])
def test_what_an_agent_wrote_stays_text_in_one_table_cell(tmp_path, field):
    step = StepResult(id=HOSTILE if field == "id" else "s", verdict="FAIL",
                      reason=HOSTILE if field == "reason" else "exit 1", overclaim=True,
                      claim={"pass": True, "note": HOSTILE if field == "note" else "done"})
    res = RunResults(plan="p", steps=[step], summary={"PASS": 0, "FAIL": 1, "ERROR": 0, "SKIPPED": 0, "overclaims": 1},
                     integrity=Integrity(status="verified"))
    md = run_summary(res, tmp_path / "run", tmp_path)
    table = [line for line in md.splitlines() if line.startswith("|")]
    assert len(table) == 3  # head, rule, one row: the newline and the pipes made no row of their own
    assert len(re.split(r"(?<!\\)\|", table[2])) == 6  # four cells
    for raw in ("<img", r"\*\*bold", r"\[link", "`code", "http:"):  # each markup character is escaped
        assert re.search(r"(?<!\\)" + raw, md) is None, raw


def test_compare_names_new_failures_and_fixes_and_leaves_out_steps_not_run():
    def run(**verdicts):
        return RunResults(plan="p", summary={}, steps=[
            StepResult(id=k, verdict="SKIPPED" if v == "deselected" else v,
                       not_run="deselected" if v == "deselected" else None) for k, v in verdicts.items()])
    got = compare(run(a="PASS", b="FAIL", c="PASS", d="PASS", e="ERROR"),
                  run(a="FLAKY", b="PASS", c="deselected", d="PASS", e="ERROR", f="FAIL"), "n1")
    assert (got.new_failures, got.fixed) == (("a",), ("b",))


def test_read_results_of_a_run_never_graded_names_the_file(tmp_path):
    from referee.errors import RefereeError

    with pytest.raises(RefereeError) as exc:
        read_results(tmp_path)
    assert "results.json" in str(exc.value) and "referee grade" in str(exc.value)


@pytest.fixture(scope="module")
def one_run(tmp_path_factory) -> Path:
    """A complete run of the nightly plan (its flag file there, its fixed file not)."""
    from tests.conftest import base_cli_env, run_cli

    tmp = tmp_path_factory.mktemp("one-run")
    (tmp / "flag").write_text("x")
    code, _, err = run_cli(["run", _plan(tmp, tmp / "flag", tmp / "fixed"), "--out", tmp / "runs"], env=base_cli_env(),
                           cwd=tmp)
    assert code == 1, err
    (run,) = _runs(tmp / "runs")
    return run


def _edit(path: Path, change) -> None:
    import json

    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def _not_run(doc):
    doc["steps"][2].update(verdict="SKIPPED", not_run="fail_fast")


@pytest.mark.parametrize("what, change, reason", [
    ("as it is", None, None),
    ("interrupted", ("manifest.json", lambda d: d.update(error="interrupted")), "interrupted"),
    ("app down", ("manifest.json", lambda d: d.update(error="the app did not start")),
     "stopped early: the app did not start"),
    ("-k", ("manifest.json", lambda d: d.update(options={"keyword": "flaky"})), "partial: -k flaky"),
    ("--only", ("manifest.json", lambda d: d.update(options={"only": ["a", "b"]})), "partial: --only a,b"),
    ("--retries", ("manifest.json", lambda d: d.update(options={"retries": 2})), None),
    ("--fail-fast stop", ("results.json", _not_run), "1 step(s) not run (fail_fast)"),
    ("never graded", ("results.json", None), "no results.json: the run was never graded"),
])
def test_which_runs_are_complete(one_run, tmp_path, what, change, reason):
    import shutil

    run = tmp_path / "nightly" / one_run.name
    shutil.copytree(one_run, run, symlinks=True)
    if change is not None:
        name, edit = change
        if edit is None:
            (run / name).unlink()
        else:
            _edit(run / name, edit)
    assert incomplete_reason(run) == reason
    later = run.with_name(run.name + "-1")
    shutil.copytree(one_run, later, symlinks=True)
    assert previous_complete(later) == (run if reason is None else None)


def test_a_partial_run_says_so_above_its_comparison(tmp_path):
    res = RunResults(plan="p", steps=[StepResult(id="a", verdict="FAIL", reason="x")],
                     summary={"PASS": 0, "FAIL": 1}, integrity=Integrity(status="verified"))
    md = run_summary(res, tmp_path, tmp_path, previous="20261202T030000Z", new_failures=("a",),
                     partial="partial: --only a")
    assert "This run is not complete (partial\\: \\-\\-only a)" in md and "**1 new failure**: a" in md


def test_plans_run_with_j_write_the_job_summary_once(tmp_path, referee_cli, cli_env):
    plans = [_plan(tmp_path / name, tmp_path / "flag", tmp_path / "fixed") for name in ("one", "two")]
    for p, name in zip(plans, ("one", "two")):
        p.write_text(p.read_text().replace("name: nightly", f"name: {name}"))
    step_summary = tmp_path / "step_summary.md"
    cli_env["GITHUB_STEP_SUMMARY"] = str(step_summary)
    code, _, err = referee_cli("run", *plans, "--out", tmp_path / "runs", "-j", "2", "--summary-md",
                               tmp_path / "s.md", cwd=tmp_path, process=True)
    assert code == 1, err
    for text in (step_summary.read_text(), (tmp_path / "s.md").read_text()):
        assert text.count("### referee run: one:") == 1 and text.count("### referee run: two:") == 1
