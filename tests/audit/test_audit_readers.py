"""Trace readers: referee v1, openai-chat, tau-bench; bad records named by file, line and run_id; streaming."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from referee.audit.ingest.readers import get_reader, read_traces, sniff_format
from referee.core.jsonio.values import iter_json_values
from referee.errors import TraceError, UnknownKindError


def test_referee_reader_yields_good_records_and_names_bad_ones(traces_dir):
    items = list(read_traces(traces_dir / "small.jsonl", "referee"))
    good = [i.trace.run_id for i in items if i.trace]
    assert good == ["del-ok", "del-empty", "send-unsent", "create-err", "fail-claim"]
    errors = [i.error for i in items if i.error]
    assert len(errors) == 2
    msg = str(errors[0])
    assert "small.jsonl:3:" in msg and "run_id bad-record" in msg and "task" in msg and "--on-error skip" in msg
    assert "small.jsonl:4:" in str(errors[1]) and "invalid JSON" in str(errors[1])


def test_openai_chat_report_narration_and_thinking_tool(traces_dir):
    items = list(read_traces(traces_dir / "chat.json", "openai-chat"))
    t = items[0].trace
    assert t.run_id == "chat-1" and t.task == "Cancel reservation XEHM4B"
    assert t.report == "Your reservation XEHM4B has been cancelled."
    assert t.initial_observation.text == "Hi, please cancel XEHM4B."
    names = [s.action.name if s.action else None for s in t.steps]
    assert names == ["get_reservation_details", "reply", "think", "cancel_reservation"]
    # assistant text before the report is narration; a thinking tool's arguments too
    assert t.steps[0].narration == "Sure, let me look."
    assert t.steps[1].narration == "Do you confirm the cancellation?" and t.steps[1].observation.text == "yes"
    assert t.steps[2].action.args == {} and "cancelled it already" in t.steps[2].narration
    assert t.steps[3].observation.data["status"] == "cancelled"
    # the user's reaction after the report is not in the trace (it would carry the claim)
    assert all("Thanks for cancelling" not in (s.observation.text or "") for s in t.steps if s.observation)
    bare = items[1].trace
    assert bare.task == "What is the status of order 77A1?" and bare.report == "I could not look that up."
    assert bare.steps == []


def test_tau_bench_reader_jsonl_gold_and_bad_record(traces_dir):
    items = list(read_traces(traces_dir / "tau_small.jsonl"))  # sniffed
    assert sniff_format(traces_dir / "tau_small.jsonl") == "tau-bench"
    assert [i.run_id for i in items[:3]] == ["task0-trial0", "task1-trial0", "task2-trial0"]
    assert all(i.gold is not None for i in items[:3])
    assert items[0].trace.meta["group"] == "0"
    # the reference actions are gold, never evidence
    dumped = json.dumps(items[0].trace.model_dump())
    assert '"r_actions"' not in dumped and '"reward"' not in dumped
    assert items[0].trace.task.startswith("You are mia_li_3668")
    err = items[3].error
    assert isinstance(err, TraceError) and "tau_small.jsonl:4:" in str(err) and "task99-trial0" in str(err)


def test_tau_bench_corpus_as_one_array(tau_corpus):
    items = list(get_reader("tau-bench")(tau_corpus))
    assert len(items) == 200 and not any(i.error for i in items)
    assert len({i.run_id for i in items}) == 200
    assert sum(i.gold.completed for i in items) == 84


def test_unknown_format_suggests_nearest():
    with pytest.raises(UnknownKindError, match="did you mean 'tau-bench'"):
        get_reader("tau_bench")


def test_big_array_streams_in_bounded_memory(tmp_path):
    # ~24 MB array; peak Python allocation must stay far below the file size
    path = tmp_path / "big.json"
    rec = {"run_id": "x", "task": "Delete file a", "steps": [{"action": {"name": "rm", "args": {"p": "a" * 2000}},
                                                               "observation": {"text": "ok " * 1000}}] * 4}
    with open(path, "w") as fh:
        fh.write("[\n")
        for i in range(1000):
            rec["run_id"] = f"r{i}"
            fh.write((",\n" if i else "") + json.dumps(rec))
        fh.write("\n]\n")
    size = path.stat().st_size
    tracemalloc.start()
    n = sum(1 for v in iter_json_values(path) if v.value is not None)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert n == 1000
    assert size > 20_000_000
    assert peak < 8_000_000, (peak, size)  # a few 1 MiB chunks, whatever the file size


def test_pretty_printed_values_and_recovery(tmp_path):
    p = tmp_path / "pretty.json"
    p.write_text(json.dumps({"a": 1}, indent=2) + "\n{\n  \"broken\": \n" + json.dumps({"a": 3}, indent=2) + "\n")
    vals = list(iter_json_values(p))
    assert [v.value for v in vals if v.error is None] == [{"a": 1}, {"a": 3}]
    assert [v.line for v in vals if v.error] == [4]
