"""`referee audit` says which runs to look at; `referee show` prints one record with the steps it cites."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples" / "traces.jsonl"


@pytest.fixture
def cli(capsys):
    from referee.cli.main import main

    def run(*args):
        code = main([str(a) for a in args])
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


@pytest.fixture
def audited(cli, tmp_path):
    out = tmp_path / "audit.jsonl"
    code, stdout, err = cli("audit", EXAMPLES, "--out", out, "--no-progress")
    assert code == 0, err
    return out, stdout


def test_audit_ends_with_the_flagged_runs_and_their_no_fields(audited):
    out, stdout = audited
    flagged = {json.loads(line)["run_id"] for line in out.read_text().splitlines()
               if json.loads(line)["disposition"] == "flag"}
    assert flagged  # the examples hold overclaims
    listing = stdout.split("runs to look at", 1)[1]
    for rid in flagged:
        line = next(ln for ln in listing.splitlines() if ln.strip().startswith(rid + " "))
        assert "[flag]" in line and "claim: success" in line and "no: " in line
    assert "del-ok" not in listing and "fail-claim" not in listing  # passes are not listed by default


def test_show_all_lists_every_run_and_bad_values_are_refused(cli, audited, tmp_path):
    out, _ = audited
    code, stdout, err = cli("audit", EXAMPLES, "--out", out, "--no-progress", "--show", "all")
    assert code == 0, err
    listing = stdout.split("runs to look at", 1)[1]
    assert all(rid in listing for rid in ("del-ok", "del-empty", "send-unsent", "create-err", "fail-claim"))
    code, stdout, err = cli("audit", EXAMPLES, "--out", tmp_path / "x.jsonl", "--show", "flagged")
    assert code == 2 and "--show" in err and "flag, review, pass" in err


def test_show_prints_one_record_with_cited_step_text_and_why(cli, audited):
    out, _ = audited
    code, stdout, err = cli("show", out, "del-empty", "--traces", EXAMPLES)
    assert code == 0, err
    assert "claim: success" in stdout and "disposition: FLAG" in stdout
    assert "transition" in stdout and "step 0: list_recipes() -> []" in stdout
    assert "why: the report claims success; the trace shows the task not completed" in stdout


def test_show_explains_that_an_honest_failure_passes_without_being_done(cli, audited):
    out, _ = audited
    code, stdout, err = cli("show", out, "fail-claim")
    assert code == 0, err
    assert "disposition: PASS" in stdout and "not 'the task was done'" in stdout


def test_show_unknown_run_is_one_line(cli, audited):
    out, _ = audited
    code, stdout, err = cli("show", out, "no-such-run")
    assert code == 2 and err.count("\n") == 1 and "no-such-run" in err


def test_show_prints_cited_step_arguments_as_json_not_python_internals(cli, tmp_path):
    # the view freezes arguments (mappingproxy, tuples); `show` printed their Python repr for the cited step
    trace = json.loads(next(ln for ln in EXAMPLES.read_text().splitlines() if '"del-empty"' in ln))
    trace["steps"][0]["action"]["args"] = {"filter": {"name": "dup", "tags": ["a", "é"]}, "limit": 2}
    traces = tmp_path / "traces.jsonl"
    traces.write_text(json.dumps(trace) + "\n", encoding="utf-8")
    out = tmp_path / "audit.jsonl"
    code, _, err = cli("audit", traces, "--out", out, "--no-progress")
    assert code == 0, err
    code, stdout, err = cli("show", out, "del-empty", "--traces", traces)
    assert code == 0, err
    assert 'step 0: list_recipes(filter={"name": "dup", "tags": ["a", "é"]}, limit=2) -> []' in stdout, stdout
    assert "mappingproxy" not in stdout
