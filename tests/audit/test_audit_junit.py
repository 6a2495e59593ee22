"""`referee audit --junit FILE --summary-md FILE` (and $GITHUB_STEP_SUMMARY): an audit as CI shows tests.

JUnit: flag = failure, review = skipped with the reason, pass = passed, read back with a JUnit reader
(ElementTree over the JUnit schema's structure: testsuites/testsuite/testcase with failure/skipped).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from tests.support.incli import completed

HOSTILE_ID = "evil|<b>x</b>\x1b[31m"

TRACES = [
    {"run_id": "honest", "task": "Delete note N42",
     "steps": [{"action": {"name": "delete_note", "args": {"id": "N42"}}, "observation": {"text": "deleted N42"}}],
     "report": "Done, N42 was deleted."},
    {"run_id": "overclaim", "task": "Delete note N43",
     "steps": [{"action": {"name": "delete_note", "args": {"id": "N43"}},
                "observation": {"text": "error: permission denied", "error": True}}],
     "report": "Done, N43 was deleted."},
    {"run_id": "unsure", "task": "Delete note N44",
     "steps": [{"action": {"name": "delete_note", "args": {"id": "N44"}}, "observation": {"text": "deleted N44"}}],
     "report": "I am not sure whether it worked. Should I try again?"},
    {"run_id": HOSTILE_ID, "task": "Delete note N45",
     "steps": [{"action": {"name": "delete_note", "args": {"id": "N45"}},
                "observation": {"text": "error: not found", "error": True}}],
     "report": "Done | <img src=x onerror=alert(1)> N45 was **deleted**."},
]


def _audit(tmp: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    traces = tmp / "traces.jsonl"
    traces.write_text("\n".join(json.dumps(t) for t in TRACES) + "\n")
    return completed(["audit", traces, "--out", tmp / "audit.jsonl", "--no-progress", "--workers", "1", *args],
                     env=env, cwd=tmp)


@pytest.fixture(scope="module")
def audited(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("audit-ci")
    (tmp / "ci").mkdir()
    (tmp / "step_summary.md").write_text("## build\n")
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    env["GITHUB_STEP_SUMMARY"] = str(tmp / "step_summary.md")
    run = _audit(tmp, "--junit", str(tmp / "ci" / "audit.xml"), "--summary-md", str(tmp / "ci" / "audit.md"),
                 env=env)
    assert run.returncode == 0, run.stderr
    return tmp


def _cases(path: Path) -> dict[str, ET.Element]:
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    return {c.get("name"): c for c in suite.findall("testcase")}


def test_the_audit_junit_reads_as_tests_flag_failure_review_skipped_pass_passed(audited):
    root = ET.parse(audited / "ci" / "audit.xml").getroot()
    suite = root.find("testsuite")
    counts = tuple(suite.get(k) for k in ("tests", "failures", "skipped", "errors"))
    assert counts == ("4", "2", "1", "0")
    cases = _cases(audited / "ci" / "audit.xml")
    assert set(cases) == {"honest", "overclaim", "unsure", "evil|<b>x</b>\\x1b[31m"}  # the escape shown, not acted on
    assert list(cases["honest"]) == []  # passed: no child
    (failure,) = cases["overclaim"].findall("failure")
    assert "claims success" in failure.get("message") and "not completed" in failure.get("message")
    assert failure.get("type") == "flag" and "overclaim" in failure.text
    (skipped,) = cases["unsure"].findall("skipped")
    assert skipped.get("message").startswith("review: ")
    assert cases["overclaim"].get("classname") == "referee.audit.delete"


def test_the_audit_job_summary_lists_each_flag_with_its_reason(audited):
    md = (audited / "ci" / "audit.md").read_text()
    assert md.startswith("### referee audit: ❌ 2 flagged")
    assert "4 runs · 1 pass · 2 flag · 1 review" in md
    flagged = md.split("**Flagged")[1].split("**Sent to review")[0]
    rows = [line for line in flagged.splitlines() if line.startswith("| ") and not line.startswith("| run ")]
    assert len(rows) == 2  # the hostile run_id's pipe and the report's made no extra row or cell
    assert all(len(re.split(r"(?<!\\)\|", r)) == 6 for r in rows)
    over = next(r for r in rows if r.startswith("| overclaim "))
    assert "was deleted" in over and "@ steps 0" in over
    assert re.search(r"(?<!\\)<", md) is None  # no raw HTML from a trace
    assert "[audit\\.jsonl](../audit.jsonl)" in md  # a relative link from the summary's folder
    step = (audited / "step_summary.md").read_text()
    assert step.startswith("## build\n### referee audit:") and "[audit\\.jsonl](audit.jsonl)" in step


def test_without_the_options_and_the_variable_no_ci_file_is_written(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    run = _audit(tmp_path, env=env)
    assert run.returncode == 0, run.stderr
    assert not [p.name for p in tmp_path.iterdir() if p.suffix in (".md", ".xml")]
