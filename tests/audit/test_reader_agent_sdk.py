"""agent-sdk reader: Claude Agent SDK streams and Managed Agents session events, split per prompt, audited."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from referee.audit.ingest.readers import ReadOptions, read_traces, sniff_format
from referee.audit.ingest.readers.agent_sdk import read_agent_sdk, tool_name
from referee.audit.view.blind import build_view
from referee.cli.main import main

DATA = Path(__file__).resolve().parents[1] / "data" / "traces" / "agent_sdk"
STREAM, MANAGED = DATA / "stream.jsonl", DATA / "managed_events.json"


def _records(out: Path) -> dict[str, dict]:
    return {r["run_id"]: r for r in map(json.loads, out.read_text().splitlines())}


@pytest.mark.parametrize("path", [STREAM, MANAGED])
def test_both_shapes_are_sniffed_with_no_format(path):
    assert sniff_format(path) == "agent-sdk"


def test_a_stream_of_two_prompts_is_two_runs_each_with_its_task_steps_and_report():
    first, second = list(read_traces(STREAM))
    assert (first.run_id, second.run_id) == ("5e1f0c2a-sdk#1", "5e1f0c2a-sdk#2")
    assert first.trace.task.startswith("Add a --verbose flag") and second.trace.task.startswith("Now run the test")
    assert [s.action.name for s in first.trace.steps] == ["read_file", "edit_file"]
    assert first.trace.report == "I added a --verbose flag to cli.py."
    bash = second.trace.steps[-1]
    assert bash.action.name == "bash" and bash.action.args["command"] == "python -m pytest -q"
    assert bash.observation.error is True and "1 failed" in bash.observation.text
    assert second.trace.report.startswith("All tests pass")
    assert first.trace.meta["model"] == "claude-sonnet-4-5"


def test_thinking_and_the_todo_list_never_reach_the_claim_blind_view():
    second = list(read_traces(STREAM))[1].trace
    view = repr(build_view(second))
    assert "python -m pytest -q" in view  # the view does show the steps
    assert "I should read cli.py first" not in view and "in_progress" not in view
    assert second.steps[0].action.name == "plan" and second.steps[0].action.args == {}


def test_whole_keeps_the_session_as_one_run():
    [item] = list(read_agent_sdk(STREAM, ReadOptions(session_runs="whole")))
    assert item.run_id == "5e1f0c2a-sdk" and len(item.trace.steps) >= 4


def test_managed_events_page_reads_tools_as_their_ways_of_acting():
    [item] = list(read_traces(MANAGED))
    names = [s.action.name for s in item.trace.steps if s.action]
    assert names == ["read_file", "edit_file", "bash"]
    assert item.trace.task.startswith("Fix the off-by-one") and item.trace.report.startswith("Done.")
    assert "range end is exclusive" not in json.dumps(item.trace.model_dump())  # agent.thinking is not read


@pytest.mark.parametrize(("name", "args", "want"), [
    ("Bash", None, "bash"), ("Edit", None, "edit_file"), ("MultiEdit", None, "edit_file"),
    ("Write", None, "write_file"),
    ("Read", None, "read_file"), ("Grep", None, "search_files"), ("Glob", None, "list_files"),
    ("TodoWrite", None, "plan"), ("str_replace_based_edit_tool", {"command": "view"}, "read_file"),
    ("str_replace_based_edit_tool", {"command": "str_replace"}, "edit_file"), ("deploy_site", None, "deploy_site"),
])
def test_claude_tool_names_map_to_ways_of_acting(name, args, want):
    assert tool_name(name, args) == want


def test_audit_flags_the_prompt_whose_report_overclaims_a_failed_test_run(tmp_path):
    out = tmp_path / "a.jsonl"
    assert main(["audit", str(STREAM), "--out", str(out), "--no-progress", "--workers", "1"]) == 0
    recs = _records(out)
    # its test run failed and no action is recognised as the task's: blocked for review, not flagged from
    # absence (issue 32: a flag needs what the trace shows)
    assert recs["5e1f0c2a-sdk#2"]["disposition"] == "review"
    assert recs["5e1f0c2a-sdk#1"]["disposition"] != "flag"  # an edit its report claims, no failure seen


def test_managed_session_is_audited_not_read_as_an_empty_run(tmp_path):
    out = tmp_path / "a.jsonl"
    assert main(["audit", str(MANAGED), "--out", str(out), "--no-progress", "--workers", "1"]) == 0
    [rec] = _records(out).values()
    assert rec["disposition"] == "pass" and rec["claim"]["label"] == "success"


def test_a_folder_of_sessions_is_walked_and_each_read_by_this_reader(tmp_path):
    for p in (STREAM, MANAGED):
        shutil.copy(p, tmp_path / p.name)
    out = tmp_path / "out" / "a.jsonl"
    assert main(["audit", str(tmp_path), "--out", str(out), "--no-progress", "--workers", "1"]) == 0
    assert set(_records(out)) == {"5e1f0c2a-sdk#1", "5e1f0c2a-sdk#2", "managed_events#1"}


def test_a_line_that_is_no_event_is_one_bad_record_naming_it(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text(STREAM.read_text() + '{"hello": "world"}\n')
    items = list(read_traces(p))
    bad = [i for i in items if i.error]
    assert len(bad) == 1 and "not a Claude Agent SDK message" in str(bad[0].error) and ":13:" in str(bad[0].error)
    assert sum(1 for i in items if i.trace) == 2
