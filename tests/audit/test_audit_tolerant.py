"""Trace v1 written by other tools: unknown fields are dropped and named once per file, never evidence."""

from __future__ import annotations

import json
import subprocess
import sys

from referee.audit.readers import read_traces
from referee.audit.view import build_view

BASE = {"run_id": "r1", "task": "Delete note N42",
        "steps": [{"action": {"name": "delete_note", "args": {"id": "N42"}},
                   "observation": {"text": "deleted N42"}}], "report": "Deleted N42."}


def write(path, *records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_extra_fields_are_dropped_and_do_not_change_the_view(tmp_path):
    noisy = json.loads(json.dumps(BASE))
    noisy["timestamp"] = "2026-01-01"
    noisy["steps"][0]["thought"] = "the task is surely done"  # the agent's words: must not become evidence
    noisy["steps"][0]["observation"]["latency_ms"] = 12
    noisy["steps"][0]["observation"]["error"] = None
    a, b = (list(read_traces(write(tmp_path / n, r), "referee"))[0] for n, r in (("a.jsonl", BASE), ("b.jsonl", noisy)))
    assert a.error is None and b.error is None
    assert b.ignored == ("steps[].observation.latency_ms", "steps[].thought", "timestamp")
    assert build_view(a.trace).sha256 == build_view(b.trace).sha256
    assert "surely" not in json.dumps(build_view(b.trace).as_json())


def test_a_numeric_run_id_is_read_as_text(tmp_path):
    rec = dict(BASE, run_id=17)
    item = list(read_traces(write(tmp_path / "n.jsonl", rec), "referee"))[0]
    assert item.error is None and item.trace.run_id == "17"


def test_missing_required_fields_are_still_an_error(tmp_path):
    rec = {k: v for k, v in BASE.items() if k != "task"}
    item = list(read_traces(write(tmp_path / "m.jsonl", rec), "referee"))[0]
    assert item.trace is None and "task" in str(item.error) and "m.jsonl:1" in str(item.error)


def test_the_cli_names_ignored_fields_once_per_file(tmp_path):
    recs = [dict(BASE, run_id=f"r{i}", timestamp=i) for i in range(3)]
    src = write(tmp_path / "t.jsonl", *recs)
    cmd = [sys.executable, "-m", "referee.cli.main", "audit", str(src), "--out", str(tmp_path / "a.jsonl")]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    warnings = [ln for ln in out.stderr.splitlines() if "ignored fields" in ln]
    assert len(warnings) == 1 and "timestamp" in warnings[0]
    assert len((tmp_path / "a.jsonl").read_text().splitlines()) == 3
