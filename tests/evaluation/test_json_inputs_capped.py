"""Every JSON lines file `referee eval` reads goes through the depth- and size-capped reader: a line nested 5,000
deep (issue 30, case 5) or longer than the line cap is a one-line error naming the file and the line, exit 2, never
"internal error" (exit 3); the judge cache, referee's own file, reads such a line as a torn one (asked again)."""

from __future__ import annotations

import json

import pytest

from referee.core.jsonio.depth import MAX_LINE_CHARS
from tests.evaluation.helpers import FAIL_MARK, record, write_jsonl

DEEP = "[" * 5000 + "]" * 5000
UNCLOSED = "[" * 5000


@pytest.fixture
def files(tmp_path):
    audit = write_jsonl(tmp_path / "audit.jsonl", [record("r1"), record("r2", disposition="flag")])
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"run_id": "r1", "completed": true}\n{"run_id": "r2", "completed": false}\n')
    return audit, gold


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert "Traceback" not in err and "internal error" not in err, err
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("bad", [DEEP, UNCLOSED], ids=["closed", "unclosed"])
def test_a_deeply_nested_gold_line_is_a_usage_error_naming_file_and_line(cli, files, bad):
    audit, gold = files
    gold.write_text('{"run_id": "r1", "completed": true}\n' + bad + "\n")
    code, out, err = cli("eval", audit, "--gold", gold, "--no-plot", "--no-policies", "--json")
    assert code == 2
    line = _one_line(err)
    assert "gold.jsonl" in line and "line 2" in line


def test_a_gold_line_over_the_size_cap_is_a_usage_error(cli, files):
    audit, gold = files
    gold.write_text('{"run_id": "r1", "completed": true, "note": "' + "x" * MAX_LINE_CHARS + '"}\n')
    code, out, err = cli("eval", audit, "--gold", gold, "--no-plot", "--no-policies", "--json")
    assert code == 2
    line = _one_line(err)
    assert "gold.jsonl" in line and "line 1" in line and "longer than" in line


def test_a_deeply_nested_split_line_is_a_usage_error(cli, tmp_path):
    splits = tmp_path / "splits.jsonl"
    splits.write_text('{"run_id": "a", "split": "dev"}\n\n' + DEEP + "\n")
    code, out, err = cli("eval", "split", splits)
    assert code == 2
    line = _one_line(err)
    assert "splits.jsonl" in line and "line 3" in line


def test_a_deeply_nested_predictions_line_is_a_usage_error(cli, files, tmp_path):
    audit, gold = files
    preds = tmp_path / "preds.jsonl"
    preds.write_text('{"run_id": "r1", "disposition": "pass"}\n' + DEEP + "\n")
    code, out, err = cli("eval", audit, "--gold", gold, "--no-plot", "--no-policies", "--json",
                         "--predictions", f"tool={preds}")
    assert code == 2
    line = _one_line(err)
    assert "preds.jsonl" in line and "line 2" in line


def test_a_deeply_nested_audit_record_is_a_usage_error(cli, files):
    audit, gold = files
    with open(audit, "a") as fh:
        fh.write(DEEP + "\n")
    code, out, err = cli("eval", audit, "--gold", gold, "--no-plot", "--no-policies", "--json")
    assert code == 2
    line = _one_line(err)
    assert "audit.jsonl" in line and "line 3" in line


def test_a_deeply_nested_judge_cache_line_is_read_as_torn_and_asked_again(cli, judge_stub, tmp_path):
    trace = {"trace_version": 1, "run_id": "r1", "task": "Create a note",
             "steps": [{"action": {"name": "tap", "args": {"target": "save"}},
                        "observation": {"text": FAIL_MARK}}], "report": "Done."}
    traces = write_jsonl(tmp_path / "traces.jsonl", [trace])
    audit = write_jsonl(tmp_path / "audit.jsonl", [record("r1")])
    gold = tmp_path / "gold.csv"
    gold.write_text("run_id,completed\nr1,false\n")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "judges.jsonl").write_text(DEEP + "\n" + UNCLOSED + "\n")
    code, out, err = cli("eval", audit, "--gold", gold, "--judge", "prompt-blind", "--traces", traces,
                         "--model", "m", "--base-url", judge_stub.url, "--votes", "1", "--cache-dir", cache,
                         "--json", "--no-plot", "--no-policies")
    assert code == 0, err
    assert judge_stub.calls == 1
    by = {s["method"]: s for s in json.loads(out)["overall"]}
    assert by["prompt-blind"]["counts"]["tp"] == 1
