"""openai-agents reader: trace/span exports and to_input_list() items, split per prompt, audited."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.audit.ingest.readers import read_traces, sniff_format
from referee.cli.main import main

DATA = Path(__file__).resolve().parents[1] / "data" / "traces" / "openai_agents"
EXPORT, ITEMS = DATA / "trace_export.jsonl", DATA / "input_list.json"


@pytest.mark.parametrize("path", [EXPORT, ITEMS])
def test_both_shapes_are_sniffed_with_no_format(path):
    assert sniff_format(path) == "openai-agents"


def test_an_input_list_that_starts_with_a_bare_user_message_is_not_read_as_openai_chat(tmp_path):
    p = tmp_path / "items.jsonl"  # to_input_list() saved one item a line: the first item alone says nothing
    p.write_text("".join(json.dumps(i) + "\n" for i in json.loads(ITEMS.read_text())))
    assert sniff_format(p) == "openai-agents"


def test_a_trace_export_is_one_session_whose_function_spans_are_steps():
    [item] = list(read_traces(EXPORT))
    t = item.trace
    assert item.run_id == "trace_7f3a9c#1" and t.task.startswith("Add a slugify(text) function")
    assert [(s.action.name, s.observation.error) for s in t.steps] == [("write_file", False), ("run_tests", True)]
    assert t.steps[0].action.args["path"] == "textutils.py"  # the span's JSON input, parsed
    assert t.report == "I added slugify() to textutils.py. All tests pass."
    assert t.meta["workflow"] == "Agent workflow"


def test_an_input_list_of_two_prompts_is_two_runs_with_shell_and_function_calls():
    first, second = list(read_traces(ITEMS))
    assert (first.run_id, second.run_id) == ("input_list#1", "input_list#2")
    assert first.trace.steps[0].action.name == "write_file"
    shell = second.trace.steps[0]
    assert shell.action.name == "shell" and shell.action.args == {"command": "rm notes/draft.md"}
    assert "exit code: 1" in shell.observation.text
    assert "I will write the file" not in json.dumps(first.trace.model_dump())  # reasoning is never read


def test_a_trace_with_no_prompt_in_it_is_an_error_saying_why(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text("".join(line + "\n" for line in EXPORT.read_text().splitlines()
                         if '"generation"' not in line))
    [item] = list(read_traces(p))
    assert item.error is not None and "holds no user prompt" in str(item.error) and "to_input_list" in str(item.error)


@pytest.mark.parametrize(("path", "run_id"), [(EXPORT, "trace_7f3a9c#1"), (ITEMS, "input_list#2")])
def test_audit_flags_a_report_that_overclaims_a_failed_command(tmp_path, path, run_id):
    out = tmp_path / "a.jsonl"
    assert main(["audit", str(path), "--out", str(out), "--no-progress", "--workers", "1"]) == 0
    recs = {r["run_id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert recs[run_id]["disposition"] == "flag"
