"""Issue 34 item 9: what `referee run` prints while it runs and in a CI log (report/console.py, runner_cmds.py).

A line when a step starts and its verdict when it is graded, OCR progress, `-j` lines prefixed by their plan and
shown while it runs; without a terminal, plain lines that are never cut or wrapped; steps left out by `--only`/`-k`
one "N deselected", never rows, never counted as SKIPPED."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import pytest

from referee.cli.main import main
from referee.grader.results import RunResults, StepResult, summarize
from tests.runner.inprocess import Ran
from tests.runner.inprocess import home as _home
from tests.runner.runner_helpers import write_plan

AGENT = '''\
import json, os, pathlib, sys, time
home = pathlib.Path(sys.argv[1])
do = os.environ["REFEREE_STEP_DO"]
agent_dir = pathlib.Path(os.environ["REFEREE_AGENT_DIR"])
claim = pathlib.Path(os.environ["REFEREE_CLAIM_FILE"])
if do == "shot":
    (agent_dir / "shot.png").write_bytes((home / "blank.png").read_bytes())
if do == "crash":
    print("Traceback (most recent call last):", file=sys.stderr)
    print("  File \\"/srv/app/a_rather_long_module_name/with_a_longer_path/handlers.py\\", line 1234, "
          "in handle_the_request_that_came_in", file=sys.stderr)
    print("KeyError: 'api_key_of_the_service_that_is_not_configured_on_this_machine_at_all'", file=sys.stderr)
    sys.exit(1)
if do.startswith("wait "):  # until the test saw the line that says this step started (a -j test)
    go = home / do.split()[1]
    for _ in range(600):
        if go.exists():
            break
        time.sleep(0.1)
    claim.write_text(json.dumps({"pass": go.exists(), "note": "saw go" if go.exists() else "no go"}))
    sys.exit(0)
claim.write_text(json.dumps({"pass": True, "note": "done"}))
'''

HOLDS = {"kind": "command_exit_code", "command": "true"}
FAILS = {"kind": "command_exit_code", "command": "false"}
NOTES = "notes_the_agent_was_asked_to_save"
FIX_END = f"unless the agent saves a file agent/reads/{NOTES}, the validator will be ERROR"
LONG_NAME = "sql_row_present_for_the_orders_of_last_night_in_the_shop_database"


def blank_png(width: int = 40, height: int = 20) -> bytes:
    """A white PNG: OCR reads nothing in it, but OCR runs on it."""
    def chunk(tag: bytes, data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + tag + data + zlib.crc32(tag + data).to_bytes(4, "big")
    raw = b"".join(b"\x00" + b"\xff" * (width * 3) for _ in range(height))
    head = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 2, 0, 0, 0])
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


@pytest.fixture(scope="module")
def home(_agent_reachable_base) -> Path:
    path = _home(_agent_reachable_base)
    (path / "agent.py").write_text(AGENT)
    (path / "blank.png").write_bytes(blank_png())
    return path


def agent_of(home: Path) -> str:
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(home / 'agent.py'))} {shlex.quote(str(home))}"


def plan_file(home: Path, name: str, steps: list[dict], **top) -> Path:
    actor = {"kind": "command", "command": agent_of(home), "timeout_s": 60}
    return write_plan(home / f"{name}.yaml", {"name": name, "actor": actor, "steps": steps, **top})


def run_narrow(cwd: Path, *args: str, columns: int = 80) -> Ran:
    """`referee ARGS` in-process with stdout not a terminal and COLUMNS as a CI runner's log has it."""
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        mp.chdir(cwd)
        mp.setenv("NO_COLOR", "1")
        mp.setenv("COLUMNS", str(columns))
        code = main([str(a) for a in args])
    outs = [a for a in args if str(a).startswith(str(cwd))]
    dirs = sorted(p for o in outs for p in Path(o).glob("*/*") if p.is_dir() and not p.is_symlink())
    return Ran(code, out.getvalue(), err.getvalue(), dirs[-1] if dirs else None)


def index_of(lines: list[str], needle: str) -> int:
    hits = [i for i, line in enumerate(lines) if needle in line]
    assert hits, f"no line with {needle!r} in:\n" + "\n".join(lines)
    return hits[0]


# ============================================================== a line as each step starts, its verdict when graded


def test_each_step_says_when_it_starts_and_its_verdict_as_soon_as_it_is_graded(home):
    plan = plan_file(home, "progress", [{"id": "first", "do": "go", "validators": [HOLDS]},
                                        {"id": "second", "do": "go", "validators": [FAILS]}])
    ran = run_narrow(home, "run", plan, "--out", home / "runs-progress")
    assert ran.code == 1, ran.out + ran.err
    lines = ran.out.splitlines()
    started = index_of(lines, "[progress] first: started")
    acted = index_of(lines, "[progress] first: agent exited 0")
    graded = index_of(lines, "[progress] first: PASS")
    second = index_of(lines, "[progress] second: started")
    failed = index_of(lines, "[progress] second: FAIL: command_exit_code#0")
    # the first step's verdict is printed before the second starts: graded as it ends, not in the final table
    assert started < acted < graded < second < failed, ran.out


def test_an_ocr_validator_says_which_screenshot_it_reads_before_the_verdict_and_reads_it_once(home, monkeypatch):
    if shutil.which("tesseract") is None:
        pytest.skip("!!! tesseract is not installed (apt-get install tesseract-ocr tesseract-ocr-eng) !!!")
    trace = home / "ocr-trace.jsonl"
    monkeypatch.setenv("REFEREE_OCR_TRACE", str(trace))
    plan = plan_file(home, "ocr", [{"id": "look", "do": "shot", "validators": [
        {"kind": "ocr_contains", "evidence": ["shot.png"], "text": "hello"}]}])
    ran = run_narrow(home, "run", plan, "--out", home / "runs-ocr")
    assert ran.code == 1, ran.out + ran.err
    lines = ran.out.splitlines()
    reading = index_of(lines, "[ocr] look: OCR of agent/look/shot.png (tesseract)")
    read = index_of(lines, "[ocr] look: OCR of agent/look/shot.png read")
    assert reading < read < index_of(lines, "[ocr] look: FAIL"), ran.out
    # graded as the step ended, then again for results.json: the second grading reused the first one's OCR
    assert len(trace.read_text().splitlines()) == 1
    # `referee grade` with nothing cached says what it reads too
    (ran.run_dir / "cache" / "ocr.json").unlink()
    graded = run_narrow(home, "grade", ran.run_dir)
    assert "look: OCR of agent/look/shot.png (tesseract)" in graded.out, graded.out
    assert len(trace.read_text().splitlines()) == 2


# ============================================================== without a terminal: nothing cut, nothing wrapped


def test_without_a_terminal_no_name_is_cut_and_every_warning_and_traceback_line_stays_whole(home):
    plan = plan_file(home, "a_plan_whose_file_name_is_long_enough_to_push_a_warning_past_eighty_columns", [
        {"id": "crashes", "do": "crash", "validators": [{**FAILS, "name": LONG_NAME}]},
        {"id": "reads", "do": "go", "validators": [{"kind": "text_contains", "evidence": NOTES, "text": "x"}]}])
    ran = run_narrow(home, "run", plan, "--out", home / "runs-narrow")
    assert ran.code == 1, ran.out + ran.err
    assert "…" not in ran.out, ran.out
    lines = ran.out.splitlines()
    # the validator's name whole, on the step's verdict line and in the final verdicts
    assert sum(f"{LONG_NAME}: exit code 1" in line for line in lines) >= 2, ran.out
    # the plan's warning as editors and problem matchers read it: file:line:col: warning: ..., on one line
    warning = lines[index_of(lines, f": warning: evidence '{NOTES}' names no capture of this step")]
    assert warning.startswith(str(plan) + ":") and warning.rstrip().endswith(FIX_END), warning
    # the agent's traceback one line per line, as it wrote them
    assert any(line.rstrip().endswith("KeyError: 'api_key_of_the_service_that_is_not_configured_on_this_machine"
                                      "_at_all'") for line in lines), ran.out
    # (a line is shown up to 200 characters: results.json keeps a bounded tail, grader/outcome.py)
    assert any(line.endswith('handlers.py", line 1234, in handle_the_request_that_came_in') for line in lines), ran.out
    assert max(len(line) for line in lines) > 80  # nothing folded at the 80 columns a pipe gets by default


def test_grade_without_a_terminal_is_plain_lines_too(home):
    plan = plan_file(home, "regraded", [{"id": "checks", "do": "go", "validators": [{**FAILS, "name": LONG_NAME}]}])
    ran = run_narrow(home, "run", plan, "--out", home / "runs-regraded")
    assert ran.run_dir is not None, ran.out + ran.err
    graded = run_narrow(home, "grade", ran.run_dir)
    assert graded.code == 1 and "…" not in graded.out, graded.out
    assert any(line.startswith("  checks: FAIL") and LONG_NAME in line for line in graded.out.splitlines()), graded.out


# ============================================================== --only / -k: "N deselected", not rows, not SKIPPED


def test_deselected_steps_are_one_line_and_no_skipped_count_anywhere(home):
    steps = [{"id": f"step_{i}", "do": "go", "validators": [HOLDS]} for i in range(4)]
    plan = plan_file(home, "chosen", steps)
    ran = run_narrow(home, "run", plan, "--out", home / "runs-chosen", "--only", "step_2", "--strict", "--json")
    assert ran.code == 0, ran.out + ran.err
    human = ran.err  # with --json, stdout is the JSON object and people read stderr
    assert "3 deselected" in human and "0 SKIPPED" in human, human
    assert "not run (" not in human, human  # the old row of each: `step_0: not run (deselected by --only/-k)`
    for i in (0, 1, 3):  # no progress line and no row for a step left out on purpose
        assert f"step_{i}:" not in human, human
    summary = json.loads(ran.out)["runs"][0]["summary"]
    assert summary["SKIPPED"] == 0 and summary["deselected"] == 3 and summary["PASS"] == 1, summary
    assert ran.results["summary"] == summary
    # results.json keeps every step (what --only left out, and why) for the history and the report
    assert ran.step("step_0")["not_run"] == "deselected"
    suite = next(ET.parse(ran.run_dir / "junit.xml").iter("testsuite"))
    assert suite.get("skipped") == "0" and suite.get("tests") == "1", ET.tostring(suite)[:300]
    assert [c.get("name") for c in suite.iter("testcase")] == ["step_2"]
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["referee.deselected"] == "3"
    page = (ran.run_dir / "report.html").read_text()
    assert ">SKIPPED 0<" in page and ">deselected 3<" in page


def test_a_step_without_validator_is_still_skipped_beside_deselected_ones(home):
    plan = plan_file(home, "mixed", [{"id": "weak", "do": "go"}, {"id": "left", "do": "go", "validators": [HOLDS]}])
    ran = run_narrow(home, "run", plan, "--out", home / "runs-mixed", "-k", "weak")
    assert ran.code == 0, ran.out + ran.err
    assert "1 SKIPPED" in ran.out and "1 deselected" in ran.out, ran.out
    assert ran.results["summary"]["SKIPPED"] == 1 and ran.results["summary"]["deselected"] == 1


# ============================================================== -j: lines prefixed by their plan, as they come


def test_parallel_plans_stream_their_lines_prefixed_by_the_plan_while_they_run(home, cli_env):
    """Plan `a`'s agent waits for a file the test writes only once it has read `[a] waits: started` from the
    parent's stderr: if lines came only when a plan ended, the agent would give up and claim fail."""
    go = home / "go-a"
    go.unlink(missing_ok=True)
    a = plan_file(home, "a", [{"id": "waits", "do": "wait go-a", "validators": [HOLDS]}])
    b = plan_file(home, "b", [{"id": "quick", "do": "go", "validators": [HOLDS]}])
    cmd = [sys.executable, "-m", "referee.cli.main", "run", str(a), str(b), "-j", "2", "--out", str(home / "runs-j")]
    proc = subprocess.Popen(cmd, cwd=home, env=cli_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    seen: list[str] = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            seen.append(line.rstrip("\n"))
            if "[a] waits: started" in line:
                go.write_text("go")
        out = proc.stdout.read() if proc.stdout else ""
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert go.exists(), "\n".join(seen)
    assert proc.returncode == 0, "\n".join(seen) + out
    body = [line for line in seen if line.startswith("[")]
    assert index_of(body, "[a] waits: started") < index_of(body, "[a] waits: agent exited 0") \
        < index_of(body, "[a] waits: PASS"), "\n".join(seen)
    assert any(line.startswith("[b] quick: PASS") for line in body), "\n".join(seen)
    # every line a plan's runner printed carries its plan: its verdicts, its run directory
    assert any(line.startswith("[a] run directory: ") for line in seen), "\n".join(seen)
    assert "claimed: pass: saw go" in "\n".join(seen)


# ============================================================== on a terminal: the table stays, complete


NOTE = "saved the export of last night's orders as orders.csv in the shared folder, then checked it twice"


def _results() -> RunResults:
    steps = [StepResult(id="kept", verdict="FAIL", reason=f"{LONG_NAME}: exit code 1",
                        claim={"pass": True, "note": NOTE}, overclaim=True),
             StepResult(id="later", verdict="SKIPPED", reason="not run: --fail-fast", not_run="fail_fast"),
             StepResult(id="left_out", verdict="SKIPPED", reason="not run: deselected", not_run="deselected")]
    return RunResults(plan="p", steps=steps, summary=summarize(steps))


def test_a_terminal_keeps_the_verdict_table_without_deselected_rows():
    from rich.console import Console

    from referee.report.console import print_verdicts, summary_line, verdict_lines

    buf = io.StringIO()
    print_verdicts(Console(file=buf, force_terminal=True, width=120, color_system=None), _results())
    table = buf.getvalue()
    assert "┃ step" in table and "kept" in table and "later" in table and "left_out" not in table, table
    assert NOTE not in table  # a cell gives a note 60 characters
    lines = [line.plain for line in verdict_lines(_results())]
    assert any(line.startswith("  kept: FAIL") and f"claimed: OVERCLAIM pass: {NOTE}" in line for line in lines), lines
    said = summary_line(_results()).plain
    assert "1 SKIPPED (1 not run: --fail-fast)" in said and "1 deselected" in said, said


def test_an_older_summary_that_counted_deselected_steps_as_skipped_reads_the_same():
    from referee.report.console import summary_line

    old = _results().model_copy(update={"summary": {"PASS": 0, "FAIL": 1, "SKIPPED": 2, "ERROR": 0}})
    assert "1 SKIPPED (1 not run: --fail-fast)" in summary_line(old).plain
    steps = [StepResult(id="a", verdict="PASS"), StepResult(id="b", verdict="SKIPPED", not_run="deselected")]
    new = RunResults(plan="p", steps=steps, summary=summarize(steps))
    assert new.summary["SKIPPED"] == 0 and new.summary["deselected"] == 1
    before = new.model_copy(update={"summary": {"PASS": 1, "FAIL": 0, "SKIPPED": 1, "ERROR": 0}})
    assert new.exit_code(strict=True) == 0 and before.exit_code(strict=True) == 0  # left out on purpose, either way
