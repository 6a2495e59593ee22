"""Every check that reads a `file` capture reads the copied file, never the capture's record (which holds the path):
JSON paths too; a file that is not there is a FAIL saying so, for any such check, never a crashed validator."""

from __future__ import annotations

import json


def _plan(tmp_path, path: str, validators: list[dict]) -> dict:
    return {"steps": [{"id": "a", "do": "x", "capture": [{"kind": "file", "name": "f", "path": str(tmp_path / path)}],
                       "validators": validators}]}


def test_json_path_eq_on_a_file_capture_reads_the_file(tmp_path, run_plan):
    (tmp_path / "order.json").write_text(json.dumps({"status": "saved", "path": "elsewhere"}))
    run = run_plan(_plan(tmp_path, "order.json", [
        {"kind": "json_path_eq", "evidence": "f", "path": "$.status", "expected": "saved"}]), agent="true")
    assert run.verdicts() == {"a": "PASS"}, run.explain()
    # the record's own fields are not the file's: `$.exists` is in the record, not in order.json
    run = run_plan(_plan(tmp_path, "order.json", [
        {"kind": "json_path_eq", "evidence": "f", "path": "$.exists", "expected": True}]), agent="true")
    assert run.verdicts() == {"a": "FAIL"}, run.explain()


def test_a_check_on_a_missing_file_capture_is_a_fail_that_says_so(tmp_path, run_plan):
    run = run_plan(_plan(tmp_path, "missing.txt", [
        {"kind": "http_body_contains", "evidence": "f", "text": "missing"}]), agent="true")
    assert run.verdicts() == {"a": "FAIL"}, run.explain()
    assert "does not exist after the step" in run.explain() and "crashed" not in run.explain()
