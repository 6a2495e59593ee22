"""`referee audit RUN_DIR`: SKIPPED steps become advisory records; verdicts stay, claims stay out of the view."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from referee.audit.ingest.readers import read_traces, sniff_format
from referee.audit.view.blind import build_view
from referee.cli.main import main
from tests.support.incli import completed
from tests.support.sealing import reseal

ROOT = Path(__file__).resolve().parents[2]


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def only_run_dir(out: Path) -> Path:
    (plan_dir,) = [p for p in out.iterdir() if p.is_dir()]
    (run_dir,) = [p for p in plan_dir.iterdir() if p.is_dir() and not p.is_symlink()]
    return run_dir


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> Path:
    """A real run of the bundled demo: the agreeable agent claims pass everywhere; `tidy_up` is SKIPPED."""
    out = tmp_path_factory.mktemp("demo")
    proc = completed(["demo", "--no-browser", "--out", out])
    assert proc.returncode == 0, proc.stderr
    run_dir = only_run_dir(out)
    verdicts = {s["id"]: s["verdict"] for s in json.loads((run_dir / "results.json").read_text())["steps"]}
    assert verdicts["tidy_up"] == "SKIPPED" and list(verdicts.values()).count("SKIPPED") == 1
    return run_dir


@pytest.fixture
def demo_copy(demo_run, tmp_path) -> Path:
    """A private copy (same run dir name) that a test may edit."""
    dst = tmp_path / "runs" / "todo-api" / demo_run.name
    shutil.copytree(demo_run, dst)
    return dst


def audit(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(["audit", *args, "--no-progress"])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def tidy(recs: list[dict]) -> dict:
    (rec,) = [r for r in recs if r["run_id"].endswith("/tidy_up")]
    return rec


def test_demo_run_dir_gives_one_advisory_record_and_changes_no_file(demo_copy, tmp_path, capsys):
    before = {p.relative_to(demo_copy).as_posix(): p.read_bytes() for p in demo_copy.rglob("*") if p.is_file()}
    out = tmp_path / "audit.jsonl"
    rc, printed, _ = audit(capsys, str(demo_copy), "--out", str(out))
    assert rc == 0
    recs = records(out)
    # only the SKIPPED step is audited; PASS/FAIL steps are reported as graded, not audited
    assert [r["run_id"] for r in recs] == [f"todo-api/{demo_copy.name}/tidy_up"]
    rec = tidy(recs)
    assert rec["advisory"] is True and rec["source"] == "referee-run" and rec["group"] == "todo-api"
    assert rec["task"] == "Make the list look tidy."
    assert rec["claim"]["label"] == "success"                # the agent claimed pass
    assert rec["disposition"] in ("flag", "review")          # nothing the runner saw supports it
    assert "3 PASS, 2 FAIL, 1 SKIPPED, 0 ERROR" in printed and "verdicts are not changed" in printed
    assert "advisory (SKIPPED runner steps, verdicts unchanged): 1 records" in printed
    # every file of the run directory, results.json first of all, is byte-identical after auditing
    after = {p.relative_to(demo_copy).as_posix(): p.read_bytes() for p in demo_copy.rglob("*") if p.is_file()}
    assert after == before
    # and grading again still says SKIPPED
    from referee.grader import grade

    assert {s.id: s.verdict for s in grade(demo_copy).steps}["tidy_up"] == "SKIPPED"


def test_an_advisory_pass_is_still_skipped(demo_copy, tmp_path, capsys):
    """The agent admits failure on the SKIPPED step: the auditor's disposition is `pass`, shown as advisory."""
    claims = json.loads((demo_copy / "claims.json").read_text())
    claims["tidy_up"] = {"pass": False, "note": "I could not work out what tidy means.", "evidence": []}
    (demo_copy / "claims.json").write_text(json.dumps(claims))
    reseal(demo_copy)  # as if the agent had claimed so during the run
    results = (demo_copy / "results.json").read_bytes()
    out = tmp_path / "audit.jsonl"
    rc, printed, _ = audit(capsys, str(demo_copy), "--out", str(out), "--summary-json", str(tmp_path / "s.json"))
    assert rc == 0
    rec = tidy(records(out))
    assert rec["claim"]["label"] == "failure_or_incomplete"
    assert rec["disposition"] == "pass" and rec["advisory"] is True
    assert "advisory pass 1 (still SKIPPED)" in printed
    assert json.loads((tmp_path / "s.json").read_text())["advisory"] == {"pass": 1, "flag": 0, "review": 0}
    assert (demo_copy / "results.json").read_bytes() == results
    assert json.loads(results)["steps"][4]["verdict"] == "SKIPPED"
    # replay keeps the record advisory
    replayed = tmp_path / "replayed.jsonl"
    assert main(["replay", str(out), "--policy", "low-load", "--out", str(replayed)]) == 0
    assert all(r["advisory"] for r in records(replayed))


def test_claim_note_and_flag_never_change_the_view(demo_copy, tmp_path, capsys):
    out1, out2 = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert audit(capsys, str(demo_copy), "--out", str(out1))[0] == 0
    claims = json.loads((demo_copy / "claims.json").read_text())
    claims["tidy_up"] = {"pass": False, "note": "Nothing at all was done; ignore the list HAT136.",
                         "evidence": ["made-up.txt"]}
    (demo_copy / "claims.json").write_text(json.dumps(claims))
    reseal(demo_copy)  # as if the agent had claimed so during the run
    assert audit(capsys, str(demo_copy), "--out", str(out2))[0] == 0
    a, b = tidy(records(out1)), tidy(records(out2))
    assert a["claim"]["label"] != b["claim"]["label"]
    assert a["view_sha256"] == b["view_sha256"] and a["evidence"] == b["evidence"]
    # the same, straight from the reader: the claim is in report/narration only
    (item,) = list(read_traces(demo_copy))
    assert "Nothing at all was done" in item.trace.report
    assert "HAT136" not in json.dumps(build_view(item.trace).as_json())


def test_duplicate_run_ids_are_warned_about_and_counted(demo_copy, tmp_path, capsys):
    out = tmp_path / "audit.jsonl"
    rc, printed, err = audit(capsys, str(demo_copy), str(demo_copy), "--out", str(out), "--summary-json",
                             str(tmp_path / "s.json"))
    assert rc == 0 and len(records(out)) == 1
    run_id = f"todo-api/{demo_copy.name}/tidy_up"
    plan = demo_copy / "plan.yaml"
    line = next(i for i, t in enumerate(plan.read_text().splitlines(), 1) if "id: tidy_up" in t)
    assert f"referee: warning: {plan}:{line}: run_id {run_id}: duplicate run_id" in err
    assert "duplicate run_ids: 1" in printed and "1 duplicate run_ids" in printed
    assert json.loads((tmp_path / "s.json").read_text())["duplicates"] == 1


def test_duplicate_run_ids_in_a_trace_file(tmp_path, capsys):
    t = {"run_id": "same", "task": "Delete note N42", "steps": [], "report": "Done."}
    f = tmp_path / "t.jsonl"
    f.write_text(json.dumps(t) + "\n" + json.dumps({**t, "task": "Send it"}) + "\n")
    out = tmp_path / "audit.jsonl"
    rc, printed, err = audit(capsys, str(f), "--out", str(out))
    assert rc == 0 and [r["task"] for r in records(out)] == ["Delete note N42"]
    assert f"{f}:2: run_id same: duplicate run_id (first at {f}:1)" in err
    # on resume the repeat is still reported, and the first is counted as already there
    rc, printed, err = audit(capsys, str(f), "--out", str(out))
    assert "1 already there" in printed and "duplicate run_id" in err and len(records(out)) == 1


def test_two_files_that_reuse_run_ids_are_told_to_go_to_their_own_out(tmp_path, capsys):
    t = {"run_id": "task-1", "task": "Delete note N42", "steps": [], "report": "Done."}
    a, b = tmp_path / "model-a.jsonl", tmp_path / "model-b.jsonl"
    a.write_text(json.dumps(t) + "\n")
    b.write_text(json.dumps({**t, "report": "I could not."}) + "\n")
    out = tmp_path / "audit.jsonl"
    rc, printed, err = audit(capsys, str(a), str(b), "--out", str(out))
    assert rc == 0 and [r["claim"]["label"] for r in records(out)] == ["success"]
    assert f"{b}:1: run_id task-1: duplicate run_id (first at {a}:1)" in err
    assert "these files reuse run_ids" in err and "audit each into its own --out" in err
    # one file per --out: each run audited
    for f in (a, b):
        rc, printed, err = audit(capsys, str(f), "--out", str(tmp_path / f"{f.stem}.audit.jsonl"))
        assert rc == 0 and "duplicate" not in err and len(records(tmp_path / f"{f.stem}.audit.jsonl")) == 1


def test_runs_folder_is_searched_for_run_dirs(demo_copy, tmp_path, capsys):
    out = tmp_path / "audit.jsonl"
    rc, printed, _ = audit(capsys, str(tmp_path / "runs"), "--out", str(out))
    assert rc == 0 and [r["run_id"] for r in records(out)] == [f"todo-api/{demo_copy.name}/tidy_up"]
    assert sniff_format(demo_copy) == "referee-run"


# -- a small plan of our own: captures as observations, agent files kept out, no SKIPPED step ------------

AGENT = ("import os, json\n"
         "open(os.path.join(os.environ['REFEREE_AGENT_DIR'], 'mine.txt'), 'w').write('AGENT-OWN-WORDS')\n"
         "json.dump({'pass': True, 'note': 'Wrote the note.', 'evidence': ['mine.txt']},"
         " open(os.environ['REFEREE_CLAIM_FILE'], 'w'))\n")


def run_plan(tmp_path: Path, plan: str) -> Path:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "plan.yaml").write_text(plan)
    proc = completed(["run", "plan.yaml", "--agent", f"{sys.executable} agent.py", "--out", "runs"], cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    return only_run_dir(tmp_path / "runs")


MINI = """name: mini
steps:
  - id: write_note
    do: Write a note saying hello.
    capture:
      - {kind: command, name: listing, command: "echo hello-from-runner"}
  - id: checked
    do: Say hi.
    validators:
      - {kind: command_exit_code, command: "true"}
"""


def test_runner_captures_are_the_observations_and_agent_files_are_not(tmp_path, capsys):
    run_dir = run_plan(tmp_path, MINI)
    (item,) = list(read_traces(run_dir))
    tr = item.trace
    assert tr.run_id == f"mini/{run_dir.name}/write_note" and tr.meta["advisory"] is True
    view = json.dumps(build_view(tr).as_json())
    assert "hello-from-runner" in view and '"exit_code": 0' in view
    assert "AGENT-OWN-WORDS" not in view and "mine.txt" not in view and "Wrote the note" not in view
    assert tr.report == "The step is done. Wrote the note." and "mine.txt" in tr.steps[-1].narration
    out = tmp_path / "audit.jsonl"
    rc, printed, _ = audit(capsys, str(run_dir), "--out", str(out))
    assert rc == 0 and [r["run_id"] for r in records(out)] == [tr.run_id]
    assert "1 PASS, 0 FAIL, 1 SKIPPED, 0 ERROR" in printed
    # a capture modified after the run: graded again, the step is ERROR (every file the manifest lists is checked,
    # read by a validator or not), and an ERROR stands as graded: no advisory trace is made of its forged evidence
    cap = run_dir / "evidence" / "write_note" / "after" / "listing.json"
    cap.write_text(cap.read_text().replace("hello-from-runner", "forged"))
    assert list(read_traces(run_dir)) == []
    rc, printed, _ = audit(capsys, str(run_dir), "--out", str(tmp_path / "again.jsonl"))
    assert rc == 0 and "nothing to audit" in printed and not (tmp_path / "again.jsonl").exists()


ALL_VALIDATED = """name: mini
steps:
  - id: checked
    do: Say hi.
    validators:
      - {kind: command_exit_code, command: "true"}
"""


def test_run_dir_without_skipped_step_has_nothing_to_audit(tmp_path, capsys):
    run_dir = run_plan(tmp_path, ALL_VALIDATED)
    out = tmp_path / "audit.jsonl"
    rc, printed, err = audit(capsys, str(run_dir), "--out", str(out))
    assert rc == 0, err
    assert "no SKIPPED step" in printed and "nothing to audit" in printed
    assert records(out) == []


def test_run_dir_without_results_json_is_graded_purely(demo_copy, tmp_path, capsys):
    (demo_copy / "results.json").unlink()
    rc, printed, _ = audit(capsys, str(demo_copy), "--out", str(tmp_path / "a.jsonl"))
    assert rc == 0 and "(graded now)" in printed and len(records(tmp_path / "a.jsonl")) == 1
    assert not (demo_copy / "results.json").exists()


def test_the_run_reader_never_imports_the_runner():
    src = ROOT / "src" / "referee" / "audit" / "ingest" / "readers" / "referee_run.py"
    mods = set()
    for node in ast.walk(ast.parse(src.read_text())):
        if isinstance(node, ast.Import):
            mods.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            mods.add(node.module)
    assert not [m for m in mods if m.startswith(("referee.runner", "referee.demo", "referee.cli"))]


def test_auditing_a_run_dir_loads_no_runner_module(demo_run, tmp_path):
    probe = ("import json, sys\nfrom referee.audit.ingest.readers import read_traces\n"
             "items = list(read_traces(sys.argv[1]))\n"
             "mods = sorted(m for m in sys.modules if m.startswith('referee'))\n"
             "print(json.dumps({'n': len(items), 'mods': mods}))\n")
    out = subprocess.run([sys.executable, "-c", probe, str(demo_run)], capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    assert data["n"] == 1
    assert [m for m in data["mods"] if m.startswith(("referee.runner", "referee.cli", "referee.demo"))] == []


def test_public_auditor_names_are_exported_lazily():
    probe = ("import sys, referee\nbefore = sorted(m for m in sys.modules if m.startswith('referee.'))\n"
             "t = referee.Trace(run_id='r', task='Delete note N42', steps=[], report='Done, N42 was deleted.')\n"
             "r = referee.audit_trace(t)\n"
             "assert isinstance(r, referee.AuditRecord) and r.disposition == 'review'\n"
             "assert referee.replay(r, referee.load_policy('final-state')).policy.name == 'final-state'\n"
             "assert all(n in referee.__all__ for n in ('Trace', 'AuditRecord', 'Auditor', 'audit_trace', 'replay'))\n"
             "print(before)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['referee.errors']"
