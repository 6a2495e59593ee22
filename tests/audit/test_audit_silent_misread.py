"""Never a silent misread: empty runs of a file full of tool calls, or a file mostly refused, are said and exit 1."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from referee.audit.ingest.misread import looks_like, tool_calls_in
from referee.audit.ingest.readers import read_traces
from referee.cli.main import main

DATA = Path(__file__).resolve().parents[1] / "data" / "traces"
MANAGED = DATA / "agent_sdk" / "managed_events.json"
# a tool's log in a shape no reader knows, whose messages carry a role: openai-chat makes a run of nothing of it
ODD = [{"role": "human", "text": "Fix the parser and run the tests."},
       {"role": "agent", "tool_use": {"name": "bash", "input": "pytest -q"}},
       {"role": "tool", "output": "1 failed"}, {"role": "agent", "text": "Done, all tests pass."}]


def _audit(tmp_path, *args, workers: str = "1"):
    out = tmp_path / "out" / "a.jsonl"
    return main(["audit", *map(str, args), "--out", str(out), "--no-progress", "--workers", workers]), out


def test_a_file_read_as_an_empty_run_though_it_holds_tool_calls_is_one_bad_record(tmp_path):
    p = tmp_path / "odd.json"
    p.write_text(json.dumps(ODD))
    items = list(read_traces(p))
    bad = [i.error for i in items if i.error]
    assert len(bad) == 1 and "looks misread" in str(bad[0])
    assert "1 with an empty task" in str(bad[0]) and "holds 1 tool call" in str(bad[0])


@pytest.mark.parametrize("workers", ["1", "2"])  # read here, or whole by the workers: the same word
def test_an_unknown_file_mixed_with_a_known_one_is_said_and_the_audit_exits_1(tmp_path, capsys, workers):
    d = tmp_path / "logs"
    d.mkdir()
    (d / "odd.json").write_text(json.dumps(ODD))
    shutil.copy(MANAGED, d / MANAGED.name)
    rc, out = _audit(tmp_path, d, workers=workers)
    err = capsys.readouterr().err
    assert rc == 1 and "odd.json: this file looks misread" in err
    assert len(out.read_text().splitlines()) == 2  # both runs audited; the odd one is not passed in silence
    rc, _ = _audit(tmp_path, d, "--on-error", "skip")
    assert rc == 0  # the user asked to accept it


def test_a_file_mostly_refused_says_what_it_looks_like_and_repeats_are_said_once(tmp_path, capsys):
    p = tmp_path / "events.jsonl"
    events = json.loads(MANAGED.read_text())["data"]
    p.write_text("".join(json.dumps(e) + "\n" for e in events))
    rc, _ = _audit(tmp_path, p, "--format", "openai-chat")
    err = capsys.readouterr().err
    assert rc == 1
    # said once live, once in the count of its repeats, once in the listing: not once per record
    assert err.count("expected a list of messages") == 3 and f"came for {len(events) - 1} more record(s)" in err
    assert f"{len(events)} of {len(events)} records refused" in err
    assert "it looks like a Claude Agent SDK stream or Managed Agents session events: --format agent-sdk" in err
    assert f"{len(events)} records of {p} alike: lines 1, 2, 3" in err


def test_a_good_chat_file_with_one_text_only_run_among_others_is_not_called_misread(tmp_path):
    p = tmp_path / "chats.jsonl"
    runs = [{"run_id": "a", "messages": [{"role": "user", "content": "hi"},
                                         {"role": "assistant", "content": "Hello."}]},
            {"run_id": "b", "messages": [{"role": "user", "content": "delete x"}, {"role": "assistant", "content": None,
             "tool_calls": [{"id": "1", "function": {"name": "rm", "arguments": "{}"}}]},
             {"role": "tool", "tool_call_id": "1", "content": "ok"}, {"role": "assistant", "content": "Deleted."}]}]
    p.write_text("".join(json.dumps(r) + "\n" for r in runs))
    assert all(i.error is None for i in read_traces(p))


@pytest.mark.parametrize(("first", "what"), [
    ('{"type": "session_meta", "payload": {"id": "x"}}', "a Codex CLI rollout"),
    ('{"type": "user", "sessionId": "s", "uuid": "u", "message": {"role": "user", "content": "hi"}}',
     "a Claude Code project transcript"),
    ('{"type": "init", "timestamp": "t", "session_id": "s", "model": "gemini-2.5-pro"}', "a Gemini CLI log"),
    ('{"id": "sevt_1", "type": "agent.tool_use", "name": "bash"}', "a Claude Agent SDK stream"),
    ('{"object": "trace.span", "span_data": {"type": "function"}}', "an OpenAI Agents SDK trace"),
    ("\n# aider chat started at 2026-01-01 10:00:00\n", "an Aider chat history"),
    ('{"run_id": "a", "task": "t", "steps": []}', None),
])
def test_known_signatures_are_named(tmp_path, first, what):
    p = tmp_path / "f.jsonl"
    p.write_text(first + "\n")
    got = looks_like(p)
    assert (got is None) if what is None else got.startswith(what)


def test_tool_calls_are_counted_only_as_marks_in_the_file(tmp_path):
    p = tmp_path / "t.json"
    p.write_text('{"text": "tool_use is a word here"}')
    assert tool_calls_in(p) == 0


def test_a_walk_that_leaves_out_a_file_looking_like_an_agent_log_says_so(tmp_path, capsys):
    d = tmp_path / "logs"
    d.mkdir()
    shutil.copy(MANAGED, d / MANAGED.name)
    (d / "rollout.log").write_text('{"type": "session_meta", "payload": {"id": "x"}}\n')
    (d / "README.md").write_text("# my notes\n")  # a file that looks like nothing known: no word about it
    rc, _ = _audit(tmp_path, d)
    err = capsys.readouterr().err
    assert rc == 0
    assert "left out 1 file(s)" in err and "rollout.log (a Codex CLI rollout" in err and "README.md" not in err
