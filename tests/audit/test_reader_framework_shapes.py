"""Files real agent frameworks write, read as they are or refused with one line: never a silent empty run."""

from __future__ import annotations

import json
from pathlib import Path

from referee.audit.ingest.readers import read_traces, sniff_format

DELETE = "Delete the file report-7.txt"


def audit(referee_cli, cwd: Path, *args: str):
    rc, out, err = referee_cli("audit", *args, "--out", "a.jsonl", "--no-progress", "--show", "none", cwd=cwd)
    assert "internal error" not in err and "Traceback" not in err, err
    records = [json.loads(ln) for ln in (cwd / "a.jsonl").read_text().splitlines()]
    skipped = [ln for ln in err.splitlines() if ln.startswith("referee: warning: skipped record")]
    return rc, records, skipped, out + err


def chat(report: str = "I deleted report-7.txt.") -> list[dict]:
    return [{"role": "user", "content": DELETE},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
                "name": "delete_file", "arguments": "{\"path\": \"report-7.txt\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "Error: permission denied"},
            {"role": "assistant", "content": report}]


def test_a_chat_record_with_no_task_and_no_step_is_a_bad_record_never_an_empty_run(tmp_path, referee_cli):
    autogen = {"messages": [
        {"source": "user", "models_usage": None, "content": DELETE, "type": "TextMessage"},
        {"source": "assistant", "content": [{"id": "call_1", "arguments": "{}", "name": "delete_file"}],
         "type": "ToolCallRequestEvent"},
        {"source": "assistant", "content": "I deleted report-7.txt. TERMINATE", "type": "TextMessage"}]}
    image_only = {"run_id": "img", "messages": [
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]},
        {"role": "assistant", "content": "Done."}]}
    lines = [autogen, {"run_id": "empty", "messages": []}, image_only, {"run_id": "ok", "messages": chat()}]
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    rc, records, skipped, said = audit(referee_cli, tmp_path, "c.jsonl")
    assert rc == 1 and [r["run_id"] for r in records] == ["ok"]
    assert len(skipped) == 3, skipped
    assert "c.jsonl:1: run_id c-0: openai-chat: no task and no step read: its messages have no 'role'" in skipped[0]
    assert "c.jsonl:2: run_id empty: openai-chat: no task and no step read: it has no messages" in skipped[1]
    assert "c.jsonl:3: run_id img: " in skipped[2] and "no user text" in skipped[2]
    assert said.count("; convert the run to trace v1") == 3, said  # the fix, in the listing after the summary


def test_one_conversation_as_a_bare_list_of_messages_is_one_run(tmp_path, referee_cli):
    anthropic = [{"role": "user", "content": DELETE},
                 {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "delete_file",
                                                    "input": {"path": "report-7.txt"}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "is_error": True,
                                               "content": "permission denied"}]},
                 {"role": "assistant", "content": [{"type": "text", "text": "Deleted report-7.txt."}]}]
    (tmp_path / "conv.json").write_text(json.dumps(chat(), indent=1))  # json.dump(messages, f): one element a line
    (tmp_path / "anthropic.json").write_text(json.dumps(anthropic))
    (tmp_path / "line.jsonl").write_text(json.dumps(chat()) + "\n")  # the only line of a JSONL file
    (tmp_path / "two.json").write_text(json.dumps([chat(), chat("Nothing was deleted.")]))  # two conversations
    assert sniff_format(tmp_path / "anthropic.json") == "anthropic-messages"
    assert sniff_format(tmp_path / "conv.json") == "openai-chat"
    rc, records, skipped, _ = audit(referee_cli, tmp_path, "conv.json", "anthropic.json", "line.jsonl", "two.json")
    assert rc == 0 and not skipped
    by_id = {r["run_id"]: r for r in records}
    assert sorted(by_id) == ["anthropic-0", "conv-0", "line-0", "two-0", "two-1"]
    assert all(by_id[r]["disposition"] == "flag" for r in ("anthropic-0", "conv-0", "line-0", "two-0"))
    items = list(read_traces(tmp_path / "conv.json", "anthropic-messages"))
    assert len(items) == 1 and items[0].trace.task == DELETE and len(items[0].trace.steps) == 1


def test_a_json_array_of_trace_v1_records_is_still_a_run_each(tmp_path):
    runs = [{"run_id": f"r{i}", "task": DELETE, "steps": [], "report": "done"} for i in range(3)]
    (tmp_path / "t.json").write_text(json.dumps(runs))
    assert [i.run_id for i in read_traces(tmp_path / "t.json")] == ["r0", "r1", "r2"]


def test_an_openai_request_response_pair_appends_the_response_message(tmp_path, referee_cli):
    msgs = chat()[:-1]
    pair = {"run_id": "rr1", "request": {"model": "gpt-4o", "messages": msgs, "tools": [
        {"type": "function", "function": {"name": "delete_file", "description": "Delete a file."}}]},
            "response": {"id": "chatcmpl-1", "object": "chat.completion", "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "I deleted report-7.txt.", "refusal": None},
                 "finish_reason": "stop"}]}}
    (tmp_path / "rr.jsonl").write_text(json.dumps(pair) + "\n")
    assert sniff_format(tmp_path / "rr.jsonl") == "openai-chat"
    (item,) = read_traces(tmp_path / "rr.jsonl")
    assert item.trace.report == "I deleted report-7.txt." and item.trace.tools[0].name == "delete_file"
    rc, records, skipped, _ = audit(referee_cli, tmp_path, "rr.jsonl", "--format", "openai-chat")
    assert rc == 0 and records[0]["disposition"] == "flag" and records[0]["claim"]["label"] == "success"


def test_an_assistant_refusal_is_its_words_and_the_report(tmp_path, referee_cli):
    refusal = "I'm sorry, I can't help with deleting accounts."
    ask = {"role": "user", "content": "Delete the user account acct-991"}
    runs = [{"run_id": "field", "messages": [ask, {"role": "assistant", "content": None, "refusal": refusal}]},
            {"run_id": "part", "messages": [ask, {"role": "assistant",
                                                  "content": [{"type": "refusal", "refusal": refusal}]}]}]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    assert [i.trace.report for i in read_traces(tmp_path / "r.jsonl")] == [refusal, refusal]
    rc, records, skipped, _ = audit(referee_cli, tmp_path, "r.jsonl")
    assert rc == 0 and [r["claim"]["label"] for r in records] == ["failure_or_incomplete"] * 2


def test_the_openhands_trajectory_export_reads_as_its_events(tmp_path, referee_cli):
    events = [
        {"id": 1, "source": "user", "message": "Fix calc.py so tests pass", "action": "message",
         "args": {"content": "Fix calc.py so tests pass"}},
        {"id": 2, "source": "agent", "message": "Running command: pytest -q", "action": "run",
         "args": {"command": "pytest -q", "thought": "run tests"}},
        {"id": 3, "source": "agent", "cause": 2, "observation": "run", "content": "1 failed",
         "extras": {"command": "pytest -q", "metadata": {"exit_code": 1}}},
        {"id": 4, "source": "agent", "message": "All done!", "action": "finish",
         "args": {"final_thought": "All tests pass.", "outputs": {}, "thought": ""}}]
    (tmp_path / "traj.json").write_text(json.dumps({"trajectory": events}))
    (tmp_path / "list.json").write_text(json.dumps(events))
    assert sniff_format(tmp_path / "traj.json") == "openhands"
    (export,) = read_traces(tmp_path / "traj.json", "openhands")
    (bare,) = read_traces(tmp_path / "list.json")
    assert export.error is None and export.trace.model_dump(exclude={"run_id"}) == bare.trace.model_dump(
        exclude={"run_id"})
    rc, records, skipped, _ = audit(referee_cli, tmp_path, "traj.json")
    assert rc == 0 and records[0]["run_id"] == "traj" and records[0]["claim"]["label"] == "success"


def test_a_record_in_no_known_format_says_so_lists_the_formats_and_how_to_convert(tmp_path, referee_cli):
    (tmp_path / "langsmith.jsonl").write_text(json.dumps({
        "id": "a1", "name": "AgentExecutor", "run_type": "chain", "inputs": {"input": DELETE},
        "outputs": {"output": "I deleted report-7.txt."}, "child_runs": []}) + "\n")
    (tmp_path / "smol.jsonl").write_text(json.dumps({"run_id": "sm-1", "steps": [
        {"task": DELETE}, {"step_number": 1, "model_output": "final_answer('done')", "observations": "done"}]}) + "\n")
    (tmp_path / "v1.jsonl").write_text(json.dumps({"run_id": "v", "steps": []}) + "\n")  # trace v1 lacking a task
    rc, records, skipped, said = audit(referee_cli, tmp_path, "langsmith.jsonl", "smol.jsonl", "v1.jsonl")
    assert rc == 1 and not records and len(skipped) == 3, skipped
    for s in skipped[:2]:
        assert "not a format referee reads" in s and "openai-chat" in s and "tau-bench" in s, s
    assert said.count("write the run as trace v1") == 2 and "docs/plugins.md" in said
    assert "v1.jsonl:1: run_id v: trace v1: task: Field required" in skipped[2]


def test_a_crashed_tau_bench_run_quotes_its_error_and_eval_gold_writes_every_run(tmp_path, referee_cli):
    ok = {"task_id": 0, "trial": 0, "reward": 1.0,
          "info": {"task": {"user_id": "u", "actions": [], "instruction": "Cancel reservation EHGLP3."}},
          "traj": [{"role": "user", "content": "Cancel EHGLP3"}, {"role": "assistant", "content": "Cancelled."}]}
    crash = {"task_id": 1, "trial": 0, "reward": 0.0, "traj": [],
             "info": {"error": "litellm.RateLimitError: 429", "traceback": "Traceback (most recent call last): ..."}}
    (tmp_path / "results.json").write_text(json.dumps([ok, crash]))
    rc, records, skipped, _ = audit(referee_cli, tmp_path, "results.json")
    assert rc == 1 and [r["run_id"] for r in records] == ["task0-trial0"]
    assert "run_id task1-trial0: tau-bench: the run crashed before its first turn (info.error: " \
           "'litellm.RateLimitError: 429')" in skipped[0]
    rc, out, err = referee_cli("eval", "gold", "results.json", "-o", "gold.jsonl", cwd=tmp_path)
    assert rc == 0, err
    gold = [json.loads(ln) for ln in (tmp_path / "gold.jsonl").read_text().splitlines()]
    assert [(g["run_id"], g["completed"]) for g in gold] == [("task0-trial0", True), ("task1-trial0", False)]
    assert "crashed before its first turn" in err and "its gold (completed false) is written" in err


def test_a_walk_leaves_out_referees_own_outputs_whatever_their_names(tmp_path, referee_cli):
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "traces.jsonl").write_text("".join(json.dumps(
        {"run_id": f"r{i}", "task": DELETE, "steps": [], "report": "Deleted.", "gold": {"completed": False}}) + "\n"
        for i in range(2)))
    rc, _, err = referee_cli("audit", "runs", "--out", "runs/audit.jsonl", "--gold-out", "runs/gold.jsonl",
                             "--summary-json", "runs/summary.json", "--no-progress", cwd=tmp_path)
    assert rc == 0, err
    (runs / "audit.jsonl").rename(runs / "old-results.jsonl")  # by content, not by name
    rc, records, skipped, said = audit(referee_cli, tmp_path, "runs", "--policy", "strict")
    assert rc == 0 and not skipped and sorted(r["run_id"] for r in records) == ["r0", "r1"], said
    assert "left out 3 file(s) referee wrote, not traces" in said and "old-results.jsonl (an audit record" in said
    assert "summary.json (an audit summary" in said  # a .json file a worker reads: left out there, said here
    # named on purpose, an output is one line saying what it is
    rc, _, err = referee_cli("audit", "runs/gold.jsonl", "--out", "b.jsonl", "--no-progress", cwd=tmp_path)
    assert rc == 1 and "this is a gold label (referee audit --gold-out, referee eval gold)" in err, err


def test_a_folder_format_forced_on_a_file_is_one_line_with_the_fix(tmp_path, referee_cli):
    (tmp_path / "chat.jsonl").write_text(json.dumps({"run_id": "oa-1", "messages": chat()}) + "\n")
    rc, _, skipped, said = audit(referee_cli, tmp_path, "chat.jsonl", "--format", "browsergym")
    assert rc == 1 and "NotADirectoryError" not in said
    assert "browsergym: reads an experiment folder" in skipped[0] and "it reads as openai-chat" in said


def test_gold_in_a_trace_v1_record_reads_as_a_gold_file_does(tmp_path, referee_cli):
    runs = [{"run_id": r, "task": DELETE, "steps": [], "report": "Deleted.", "gold": {"completed": v}}
            for r, v in (("a", "no"), ("b", "YES"), ("c", 1), ("d", "maybe"))]
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    rc, records, skipped, said = audit(referee_cli, tmp_path, "t.jsonl", "--gold-out", "g.jsonl")
    assert rc == 0 and len(records) == 4
    gold = [json.loads(ln) for ln in (tmp_path / "g.jsonl").read_text().splitlines()]
    assert [(g["run_id"], g["completed"]) for g in gold] == [("a", False), ("b", True), ("c", True)]
    assert "ignored fields" not in said
    assert "t.jsonl:4: run_id d: gold {'completed': 'maybe'} does not read" in said
