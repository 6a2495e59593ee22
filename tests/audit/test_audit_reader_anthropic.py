"""Anthropic Messages logs as a format of their own, and openai-chat records of odd or broken shapes."""

from __future__ import annotations

import json

from referee.audit.ingest.readers import read_traces, sniff_format
from referee.audit.view.blind import build_view
from tests.support.incli import completed

TOOLS = [{"name": "delete_file", "description": "Delete a file.", "input_schema": {"type": "object"}}]
REQUEST = {
    "run_id": "anth-1", "model": "claude-x", "system": "You manage files.", "tools": TOOLS, "max_tokens": 1024,
    "messages": [
        {"role": "user", "content": "Delete the file report-7.txt"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "SECRET-THOUGHT surely allowed", "signature": "x"},
            {"type": "text", "text": "Deleting it now."},
            {"type": "tool_use", "id": "tu1", "name": "delete_file", "input": {"path": "report-7.txt"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1", "is_error": True,
                                      "content": [{"type": "text", "text": "permission denied"}]}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Deleted report-7.txt."}]}]}


def referee(*args):
    return completed(args)


def test_a_request_body_is_sniffed_and_read(tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(REQUEST) + "\n")
    assert sniff_format(path) == "anthropic-messages"
    (item,) = read_traces(path)
    assert item.error is None, item.error
    t = item.trace
    assert (t.run_id, t.task, t.report) == ("anth-1", "Delete the file report-7.txt", "Deleted report-7.txt.")
    step = t.steps[0]
    assert (step.action.name, step.action.args) == ("delete_file", {"path": "report-7.txt"})
    assert step.observation.error is True and step.observation.text == "permission denied"
    assert step.narration == "Deleting it now."
    assert t.initial_observation.data == {"system": "You manage files."}
    assert [(x.name, x.description) for x in t.tools] == [("delete_file", "Delete a file.")]
    everything = t.model_dump_json()
    assert "SECRET-THOUGHT" not in everything  # thinking blocks are never read
    assert "Deleting it now" not in json.dumps(build_view(t).as_json())


def test_a_request_response_pair_and_server_tools(tmp_path):
    record = {"request": {"system": [{"type": "text", "text": "Answer briefly."}], "messages": [
        {"role": "user", "content": [{"type": "text", "text": "How many people live in Oslo?"}]}]},
              "response": {"id": "msg_1", "type": "message", "role": "assistant", "stop_reason": "end_turn",
                           "content": [
                               {"type": "text", "text": "Let me search."},
                               {"type": "server_tool_use", "id": "s1", "name": "web_search",
                                "input": {"query": "Oslo population"}},
                               {"type": "web_search_tool_result", "tool_use_id": "s1",
                                "content": {"type": "web_search_tool_result_error", "error_code": "unavailable"}},
                               {"type": "text", "text": "Oslo has 709,000 inhabitants."}]}}
    path = tmp_path / "pairs.json"
    path.write_text(json.dumps([record]))
    assert sniff_format(path) == "anthropic-messages"
    (item,) = read_traces(path)
    assert item.error is None, item.error
    t = item.trace
    assert t.task == "How many people live in Oslo?" and t.run_id == "pairs-0"
    assert t.steps[0].action.name == "web_search" and t.steps[0].observation.error is True
    assert t.steps[0].narration == "Let me search."
    assert t.report == "Oslo has 709,000 inhabitants."  # the text after the server tool's result


def test_the_audit_flags_the_claim_the_tool_error_contradicts(tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(REQUEST) + "\n" + json.dumps({**REQUEST, "run_id": "anth-2", "messages": [
        *REQUEST["messages"][:2],
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": "deleted"}]},
        REQUEST["messages"][3]]}) + "\n")
    out = tmp_path / "a.jsonl"
    run = referee("audit", path, "--out", out, "--no-progress")
    assert run.returncode == 0, run.stderr
    recs = {r["run_id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert recs["anth-1"]["disposition"] == "flag" and recs["anth-1"]["trace_state"] == "not_completed"
    assert recs["anth-2"]["disposition"] == "pass" and recs["anth-2"]["trace_state"] == "completed"


def test_openai_chat_takes_function_as_a_name_beside_arguments(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"run_id": "i1", "messages": [
        {"role": "user", "content": "Delete the file a.txt"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "function": "delete_file", "arguments": {"path": "a.txt"}, "type": "function"}]},
        {"role": "tool", "tool_call_id": "c1", "function": "delete_file", "content": "deleted a.txt"},
        {"role": "assistant", "content": "Deleted a.txt."}]}) + "\n")
    assert sniff_format(path) == "openai-chat"
    (item,) = read_traces(path, "openai-chat")
    assert item.error is None, item.error
    step = item.trace.steps[0]
    assert (step.action.name, step.action.args, step.observation.text) == \
        ("delete_file", {"path": "a.txt"}, "deleted a.txt")


def test_malformed_tool_calls_are_one_bad_record_each(tmp_path):
    good = {"run_id": "ok", "messages": [{"role": "user", "content": "Delete a.txt"},
                                         {"role": "assistant", "content": "Done."}]}
    bad_calls = ["oops", [1, 2], [{"id": "x", "function": 7}], [{"id": "x", "function": {"name": ["rm"]}}],
                 [{"id": ["unhashable"], "function": "rm"}]]
    lines = [json.dumps(good)]
    for n, calls in enumerate(bad_calls):
        lines.append(json.dumps({"run_id": f"bad{n}", "messages": [
            {"role": "user", "content": "Delete a.txt"}, {"role": "assistant", "content": None, "tool_calls": calls},
            {"role": "assistant", "content": "Done."}]}))
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(lines) + "\n")
    items = list(read_traces(path, "openai-chat"))
    assert [i.run_id for i in items if i.error is None] == ["ok"]
    assert [i.run_id for i in items if i.error is not None] == [f"bad{n}" for n in range(len(bad_calls))] + [None]
    # 5 of the 6 records refused: the file is also said to look misread, in one record of its own (issue 33)
    assert "this file looks misread" in items[-1].error.message and "5 of 6 records refused" in items[-1].error.message
    out = tmp_path / "a.jsonl"
    run = referee("audit", path, "--format", "openai-chat", "--out", out, "--no-progress")
    # the good record is audited; each bad one is a warning, and skipping them makes the exit code 1
    assert run.returncode == 1 and "Traceback" not in run.stderr and "internal error" not in run.stderr
    assert run.stderr.count("warning: skipped record") == len(bad_calls) + 1 and len(out.read_text().splitlines()) == 1
    stop = referee("audit", path, "--format", "openai-chat", "--out", tmp_path / "b.jsonl", "--on-error", "stop",
                   "--no-progress")
    assert stop.returncode == 2 and "tool_calls must be a list" in stop.stderr and "Traceback" not in stop.stderr
