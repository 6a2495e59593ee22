"""Tonight against last night (issue 34, History): a plan run on four "nights" by an agent whose behaviour a
file sets, with a partial and a --fail-fast run in between; `referee history`, the line `referee run` ends
with, the `latest`/`previous` links and the HTML index pages name the new failure, the fix, the step that
flips and the step grown slower. Issue 35: `referee history --summary-md` writes the job summary."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from referee.cli.main import main
from referee.report.history_html import render_overview, render_plan_index
from referee.report.history_model import RunColumn, Skipped, analyse
from tests.conftest import base_cli_env, run_cli
from tests.runner.runner_helpers import write_plan

AGENT = '''\
import json, os, pathlib, sys, time
home = pathlib.Path(sys.argv[1])
step = os.environ["REFEREE_STEP_ID"]
mode = json.loads((home / "behaviour.json").read_text()).get(step, "ok")
if mode == "slow":
    time.sleep(1.5)
(home / "marks" / step).write_text("broken" if mode == "broken" else "ok")
pathlib.Path(os.environ["REFEREE_CLAIM_FILE"]).write_text(json.dumps({"pass": True, "note": mode}))
'''
STEPS = ("stable", "flaky_add", "fixed_step", "slow_step")


def _plan(home: Path) -> Path:
    def marked(step: str) -> dict:
        return {"kind": "command_exit_code", "command": f"grep -qx ok {shlex.quote(str(home / 'marks' / step))}"}
    agent = f"{shlex.quote(sys.executable)} {shlex.quote(str(home / 'agent.py'))} {shlex.quote(str(home))}"
    return write_plan(home / "nightly.yaml", {
        "name": "nightly", "actor": {"kind": "command", "command": agent},
        "steps": [{"id": s, "do": f"do {s}", "validators": [marked(s)]} for s in STEPS]})


class Nights:
    """The runs of the module's plan, in order, with what each printed."""

    def __init__(self, home: Path) -> None:
        self.home, self.out, self.plan = home, home / "runs", _plan(home)
        self.printed: dict[str, str] = {}
        self.dirs: dict[str, Path] = {}
        self.links: dict[str, tuple[str | None, str | None]] = {}

    def night(self, label: str, behaviour: dict, *extra: str) -> None:
        (self.home / "behaviour.json").write_text(json.dumps(behaviour))
        before = set(self._runs())
        code, so, se = run_cli(["run", self.plan, "--out", self.out, *extra], cwd=self.home, env=base_cli_env())
        assert code in (0, 1), se
        (new,) = set(self._runs()) - before
        self.printed[label], self.dirs[label] = so, new
        self.links[label] = tuple(os.readlink(self.out / "nightly" / n) if (self.out / "nightly" / n).is_symlink()
                                  else None for n in ("latest", "previous"))

    def _runs(self) -> list[Path]:
        return [d for d in (self.out / "nightly").iterdir() if d.is_dir() and not d.is_symlink()] \
            if (self.out / "nightly").is_dir() else []


@pytest.fixture(scope="module")
def nights(_agent_reachable_base) -> Nights:
    home = Path(tempfile.mkdtemp(prefix="nights-", dir=_agent_reachable_base))
    os.chmod(home, 0o1777)
    (home / "marks").mkdir()
    os.chmod(home / "marks", 0o1777)  # the agent runs as another user: it writes its marks here
    (home / "agent.py").write_text(AGENT)
    n = Nights(home)
    n.night("1", {"fixed_step": "broken"})
    n.night("2", {"fixed_step": "broken", "flaky_add": "broken"})
    n.night("partial", {"fixed_step": "ok"}, "--only", "stable")
    n.night("3", {"fixed_step": "broken"})
    n.night("fail-fast", {"flaky_add": "broken", "fixed_step": "broken"}, "--fail-fast")
    n.night("4", {"flaky_add": "broken", "slow_step": "slow"})
    return n


def _cli(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_history_names_the_new_failure_the_fix_the_flipping_step_and_the_slower_one(nights, capsys):
    code, out, err = _cli(capsys, "history", nights.out / "nightly")
    assert code == 0, err
    n = nights.dirs
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.split()[:1] and
            line.split()[0] in STEPS}
    assert rows["stable"] == ["PASS"] * 4
    assert rows["flaky_add"] == ["PASS", "FAIL", "PASS", "FAIL", "new", "failure", "flips"]
    assert rows["fixed_step"] == ["FAIL", "FAIL", "FAIL", "PASS", "fixed"]
    assert f"runs: #1 {n['1'].name}, #2 {n['2'].name}, #3 {n['3'].name}, #4 {n['4'].name}" in out
    assert f"new failures (vs {n['3'].name}): flaky_add" in out and "fixed: fixed_step" in out
    assert "flips across runs: flaky_add (PASS FAIL PASS FAIL: 3 changes)" in out
    assert re.search(r"slower: slow_step \d+(\.\d+)?s, median before", out), out
    assert f"skipped {n['partial'].name}: partial: --only stable" in out
    assert f"skipped {n['fail-fast'].name}: 2 step(s) not run (fail_fast)" in out
    # --last 2: the two newest complete runs only; the flip needs more nights to show
    code, out, _ = _cli(capsys, "history", nights.out / "nightly", "--last", "2", "--json")
    doc = json.loads(out)
    assert doc["runs"] == [n["3"].name, n["4"].name] and doc["new_failures"] == ["flaky_add"]
    assert doc["fixed"] == ["fixed_step"] and doc["flaky"] == [] and doc["slower"] == []
    assert [s["run"] for s in doc["skipped"]] == [n["fail-fast"].name]


def test_history_json_has_the_grid_and_the_findings(nights, capsys):
    code, out, _ = _cli(capsys, "history", nights.out / "nightly", "--json")
    doc = json.loads(out)
    steps = {s["id"]: s for s in doc["steps"]}
    assert steps["flaky_add"]["verdicts"] == ["PASS", "FAIL", "PASS", "FAIL"] and steps["flaky_add"]["new_failure"]
    assert steps["flaky_add"]["flips"] == "PASS FAIL PASS FAIL: 3 changes"
    assert steps["fixed_step"]["fixed"] and steps["slow_step"]["slower"]["now_s"] > 1.5
    assert doc["flaky"] == ["flaky_add"] and doc["slower"] == ["slow_step"]
    assert all(len(s["durations_s"]) == 4 for s in doc["steps"])


def test_each_run_ends_with_one_line_against_the_previous_complete_run(nights):
    n, p = nights.dirs, nights.printed
    last = {k: v.rstrip().splitlines()[-1] for k, v in p.items()}
    assert last["1"] == "first complete run of this plan"
    assert last["2"] == f"vs {n['1'].name}: 1 new failure: flaky_add; 0 fixed"
    assert last["3"] == f"vs {n['2'].name}: no new failure; 1 fixed: flaky_add"
    assert last["4"] == f"vs {n['3'].name}: 1 new failure: flaky_add; 1 fixed: fixed_step"
    # a partial run compares the steps it performed, and says it moves no link
    assert f"vs {n['2'].name}: no new failure; 0 fixed" in p["partial"]
    assert last["partial"] == "this run is not complete (partial: --only stable): `latest` and `previous` left " \
                              "as they were"
    assert "not complete (2 step(s) not run (fail_fast))" in p["fail-fast"]


def test_only_complete_runs_become_latest_and_previous(nights):
    n = {k: d.name for k, d in nights.dirs.items()}
    assert nights.links["1"] == (n["1"], None)
    assert nights.links["2"] == (n["2"], n["1"])
    assert nights.links["partial"] == (n["2"], n["1"])  # left alone
    assert nights.links["3"] == (n["3"], n["2"])
    assert nights.links["fail-fast"] == (n["3"], n["2"])
    assert nights.links["4"] == (n["4"], n["3"])


def test_the_index_pages_link_each_run_and_name_the_findings(nights):
    page = (nights.out / "nightly" / "index.html").read_text()
    for label in ("1", "2", "3", "4", "partial"):
        href = f'href="{nights.dirs[label].name}/report.html"'
        assert href in page and (nights.out / "nightly" / nights.dirs[label].name / "report.html").is_file()
    assert "new failure</span>" in page and "flips</span>" in page and "slower</span>" in page
    overview = (nights.out / "index.html").read_text()
    assert 'href="nightly/index.html"' in overview and "new failures: flaky_add" in overview
    assert f'href="nightly/{nights.dirs["4"].name}/report.html"' in overview


def test_history_summary_md_writes_the_markdown_and_the_step_summary(nights, capsys, tmp_path, monkeypatch):
    step_summary = tmp_path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    code, _, err = _cli(capsys, "history", nights.out / "nightly", "--summary-md", tmp_path / "h.md")
    assert code == 0, err
    md = (tmp_path / "h.md").read_text()
    n = nights.dirs
    assert md.startswith("### referee history: nightly")
    assert f"**new failures \\(vs {n['3'].name.replace('-', chr(92) + '-')}\\)**: flaky\\_add" in md
    assert "**fixed**: fixed\\_step" in md and "**flips across runs**: flaky\\_add" in md
    assert "| flaky\\_add (new failure) (flips) | PASS | FAIL | PASS | FAIL |" in md
    rel = os.path.relpath(nights.out / "nightly" / n["4"].name / "report.html", tmp_path)
    assert f"[\\#4]({rel})" in md
    assert "Skipped (not complete)" in md and "partial\\: \\-\\-only stable" in md
    assert step_summary.read_text().count("### referee history: nightly") == 1


@pytest.mark.parametrize("given, says", [
    ("plan-folder-missing", "no run directory here"),
    ("a-run", "a run directory, not a plan's runs folder; pass its plan's runs folder"),
    ("out", "a folder of several plans' runs; pass one plan's runs folder"),
])
def test_history_of_a_folder_that_is_not_a_plans_runs_is_a_one_line_error(nights, capsys, tmp_path, given, says):
    path = {"plan-folder-missing": tmp_path, "a-run": nights.dirs["1"], "out": nights.out}[given]
    if given == "out":  # a second plan's runs beside the first
        shutil.copytree(nights.out / "nightly", tmp_path / "o" / "nightly", symlinks=True)
        shutil.copytree(nights.out / "nightly", tmp_path / "o" / "other", symlinks=True)
        path = tmp_path / "o"
    code, out, err = _cli(capsys, "history", path)
    assert code == 2 and len(err.strip().splitlines()) == 1 and says in err and "Traceback" not in err, err


HOSTILE = '<img src=x onerror=alert(1)>"&'


def test_the_index_pages_escape_what_an_agent_or_a_plan_wrote():
    h = analyse(HOSTILE, [RunColumn("20261201T030000Z", {HOSTILE: "PASS"}),
                          RunColumn("20261202T030000Z", {HOSTILE: "FAIL"})],
                [Skipped("20261202T040000Z", f"stopped early: {HOSTILE}")])
    for page in (render_plan_index(h), render_overview([(HOSTILE, h)])):
        assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;&quot;&amp;" in page
    assert 'href="%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E%22%26/index.html"' in render_overview([(HOSTILE, h)])


@pytest.mark.parametrize("verdicts, durations, flips, slower", [
    (["PASS", "FAIL", "PASS"], [0.2, 0.2, 0.2], "PASS FAIL PASS: 2 changes", False),
    (["PASS", "FAIL", "FAIL"], [0.2, 0.2, 0.2], None, False),  # one change: a failure, not a flip
    (["PASS", "FLAKY", "PASS"], [0.2, 0.2, 0.2], "PASS FLAKY PASS: FLAKY in 1 run", False),
    (["PASS", None, "FAIL", "PASS"], [0.2, None, 0.2, 0.2], "PASS - FAIL PASS: 2 changes", False),
    (["PASS", "PASS", "PASS"], [0.2, 0.3, 1.2], None, True),  # 4x its median, 0.95 s more
    (["PASS", "PASS", "PASS"], [0.1, 0.1, 0.4], None, False),  # 4x, but 0.3 s more: noise
    (["PASS", "PASS", "PASS"], [1.0, 1.2, 2.1], None, False),  # under 2x
    (["PASS", "PASS"], [0.1, 5.0], None, False),  # one earlier duration is no median
])
def test_flips_and_slower_steps(verdicts, durations, flips, slower):
    runs = [RunColumn(f"r{i}", {} if v is None else {"s": v}, {} if d is None else {"s": d})
            for i, (v, d) in enumerate(zip(verdicts, durations))]
    h = analyse("p", runs)
    assert h.flips.get("s") == flips and bool(h.slower) == slower


def test_plans_run_with_j_get_an_index_each_and_one_over_them(_agent_reachable_base):
    home = Path(tempfile.mkdtemp(prefix="nights-j-", dir=_agent_reachable_base))
    plans = []
    for name in ("one", "two"):
        plans.append(write_plan(home / f"{name}.yaml", {"name": name, "steps": [
            {"id": "a", "do": "x", "validators": [{"kind": "command_exit_code", "command": "true"}]}]}))
    code, so, se = run_cli(["run", *plans, "--out", home / "runs", "--agent", "true", "-j", "2"], cwd=home,
                           env=base_cli_env(), process=True)
    assert code == 0, se
    assert (so + se).count("first complete run of this plan") == 2
    overview = (home / "runs" / "index.html").read_text()
    for name in ("one", "two"):
        assert f'href="{name}/index.html"' in overview and (home / "runs" / name / "index.html").is_file()
        assert (home / "runs" / name / "latest").is_symlink()


def test_a_run_stopped_early_moves_no_link_and_says_so(_agent_reachable_base):
    home = Path(tempfile.mkdtemp(prefix="stopped-", dir=_agent_reachable_base))
    plan = write_plan(home / "p.yaml", {
        "name": "stops", "app": {"start": "exit 3", "url": "http://127.0.0.1:{port}", "ready": "/health",
                                 "ready_timeout_s": 5},
        "steps": [{"id": "a", "do": "x", "validators": [{"kind": "command_exit_code", "command": "true"}]}]})
    code, so, se = run_cli(["run", plan, "--out", home / "runs", "--agent", "true", "--json"], cwd=home,
                           env=base_cli_env())
    assert code == 1, se
    (run,) = json.loads(so)["runs"]
    assert run["versus"]["complete"] is False and run["versus"]["incomplete"].startswith("stopped early: ")
    assert run["versus"]["previous"] is None
    assert "this run is not complete (stopped early: " in se and "left as they were" in se
    assert not os.path.lexists(home / "runs" / "stops" / "latest")
    assert (home / "runs" / "stops" / "index.html").is_file()  # and the index lists it as skipped, with why
    assert "stopped early" in (home / "runs" / "stops" / "index.html").read_text()


def test_grade_of_a_runs_folder_without_a_complete_run_names_its_newest_run(nights, capsys, tmp_path):
    folder = tmp_path / "runs" / "nightly"
    shutil.copytree(nights.dirs["partial"], folder / nights.dirs["partial"].name, symlinks=True)
    code, out, err = _cli(capsys, "grade", folder)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "no complete run here yet" in err and str(folder / nights.dirs["partial"].name) in err
