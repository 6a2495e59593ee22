"""--gold-out reads SWE-bench gold where the harness writes it (logs/<instance>/report.json beside trajs/), and
says when it found none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.cli.main import main
from referee.evaluation.gold import gold_from_traces


def _traj(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"info": {"exit_status": "Submitted"}, "messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "<pr_description>\nFix the bug in calc.py\n</pr_description>"},
        {"role": "assistant", "content": "THOUGHT: fix it.\n\n```bash\nsed -i 's/a/b/' calc.py\n```"},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\n</output>"},
        {"role": "assistant", "content": "THOUGHT: done, the bug is fixed.\n\n```bash\n"
                                         "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"}]}))


def _report(path: Path, instance: str, resolved: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({instance: {"patch_exists": True, "resolved": resolved}}))


@pytest.fixture
def harness(tmp_path) -> Path:
    """trajs/ beside logs/: one report as logs/<id>/report.json, one in the harness's run_evaluation tree, one
    trajectory in a folder of its own, one with no report."""
    root = tmp_path / "run"
    _traj(root / "trajs" / "acme__calc-1.traj.json")
    _report(root / "logs" / "acme__calc-1" / "report.json", "acme__calc-1", False)
    _traj(root / "trajs" / "acme__calc-2.traj.json")
    _report(root / "logs" / "run_evaluation" / "r1" / "my-model" / "acme__calc-2" / "report.json", "acme__calc-2", True)
    _traj(root / "trajs" / "acme__calc-3" / "acme__calc-3.traj.json")
    _report(root / "logs" / "acme__calc-3" / "report.json", "acme__calc-3", True)
    _traj(root / "trajs" / "acme__calc-4.traj.json")
    return root


def test_gold_out_reads_the_harness_layout_and_no_report_is_read_as_a_trace(harness, tmp_path, capsys):
    out, gold = tmp_path / "a.jsonl", tmp_path / "g.jsonl"
    rc = main(["audit", str(harness), "--out", str(out), "--gold-out", str(gold), "--no-progress", "--workers", "1"])
    assert rc == 0, capsys.readouterr().err  # the report.json files are gold, never bad trace records
    rows = {r["run_id"]: r["completed"] for r in map(json.loads, gold.read_text().splitlines())}
    assert rows == {"acme__calc-1": False, "acme__calc-2": True, "acme__calc-3": True}
    assert len(out.read_text().splitlines()) == 4


def test_eval_gold_reads_the_same_layout(harness):
    labels, without = gold_from_traces(harness)
    assert {g.run_id: g.completed for g in labels} == {"acme__calc-1": False, "acme__calc-2": True,
                                                       "acme__calc-3": True}
    assert without == 1


def test_gold_out_says_when_it_found_none(tmp_path, capsys):
    _traj(tmp_path / "trajs" / "acme__calc-9.traj.json")
    gold = tmp_path / "g.jsonl"
    rc = main(["audit", str(tmp_path / "trajs"), "--out", str(tmp_path / "a.jsonl"), "--gold-out", str(gold),
               "--no-progress", "--workers", "1"])
    assert rc == 0 and gold.read_text() == ""
    assert "no gold found beside these runs" in capsys.readouterr().err
