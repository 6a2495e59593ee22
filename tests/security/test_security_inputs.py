"""Hostile bytes never crash or corrupt: claim notes that break console markup, Unicode or XML;
a YAML alias bomb; a trace record nested too deep; malformed openai-chat tool calls; a FIFO among
trace files. Each is refused or recorded in one line, and everything else is still graded or audited.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.security.sec_helpers import json_verdicts, limit_memory, xml_ok

DONE = "REAL-WORK-DONE"


@pytest.mark.parametrize("mode", ["markup", "surrogate", "bytes", "nul"])
def test_hostile_claim_note_is_recorded_not_a_crash(sec, mode):
    plan = {"name": f"note-{mode}", "steps": [
        {"id": "work", "do": f"SAVE result.txt {DONE}\nNOTE {mode}",
         "validators": [{"kind": "text_contains", "evidence": "result.txt", "text": DONE}]},
        {"id": "next", "do": f"SAVE result.txt {DONE}",
         "validators": [{"kind": "text_contains", "evidence": "result.txt", "text": DONE}]},
    ]}
    r = sec.run(plan)
    assert not r.hung, r.hang_message()
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.explain()
    assert r.rc == 0, f"a claim note ({mode}) decided the exit code:\n" + r.explain()
    assert r.verdict("work") == "PASS" and r.verdict("next") == "PASS", r.explain()
    for name in ("junit.xml", "report.html", "results.json"):
        assert (r.run_dir / name).is_file(), f"no {name}:\n" + r.explain()
    problem = xml_ok(r.run_dir / "junit.xml")
    assert problem is None, f"junit.xml is not valid XML after a {mode} note: {problem}"
    json.loads((r.run_dir / "results.json").read_bytes().decode("utf-8"))  # strict UTF-8 JSON
    rc, out, err, dt = sec.cli("grade", r.run_dir, "--json", timeout=60)
    assert rc == 0 and "Traceback" not in err, f"grade: rc={rc} {err[-2000:]}"
    assert xml_ok(r.run_dir / "junit.xml") is None
    steps = json_verdicts(out)
    assert steps is not None and steps["work"]["verdict"] == "PASS", out[-2000:]


def _alias_bomb() -> str:
    """About 1 KB of YAML that expands to 9**10 strings."""
    lines = ["version: 1", "name: bomb", "steps:", "  - id: s1", "    do: x", "    validators:",
             "      - {kind: json_path_eq, evidence: x, path: $.a, expected: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]}"]
    prev = "a"
    for n in "bcdefghij":
        refs = ",".join([f"*{prev}"] * 9)
        lines.append(f"      - {{kind: json_path_eq, evidence: x, path: $.a, expected: &{n} [{refs}]}}")
        prev = n
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("command", ["check", "run"])
def test_yaml_alias_bomb_is_refused_in_one_line(sec, command):
    text = _alias_bomb()
    assert len(text) < 1500
    path = sec.write_plan(text, name="bomb")
    args = [command, path] + (["--out", sec.out, "--agent", sec.agent] if command == "run" else [])
    rc, out, err, dt = sec.cli(*args, timeout=30, preexec=limit_memory(3))
    assert rc is not None, f"`referee {command}` on a 1 KB alias bomb ran past 30 s"
    assert "Traceback" not in err and "MemoryError" not in err, err[-2000:]
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2, f"rc={rc}: an alias bomb is a plan error (exit 2)\n{err[-2000:]}"
    assert len(lines) == 1 and lines[0].startswith("referee: error:") and "bomb" in lines[0], err[-2000:]


def _trace(rid: str, deep: str | None = None) -> str:
    data = '{"d": ' + deep + "}" if deep else '{"id": "N-77"}'
    return ('{"trace_version": 1, "run_id": "' + rid + '", "task": "Delete note N-77", "steps": [{"action": '
            '{"name": "delete_note", "args": {"id": "N-77"}}, "observation": {"text": "deleted N-77", "data": '
            + data + '}}], "report": "Done, N-77 was deleted."}')


def test_trace_record_nested_too_deep_is_one_skipped_record(sec):
    deep = "[" * 200_000 + "]" * 200_000
    src = sec.base / "traces.jsonl"
    src.write_text("\n".join([_trace("good-1"), _trace("too-deep", deep), _trace("good-2")]) + "\n")
    out_file = sec.base / "audit.jsonl"
    rc, out, err, dt = sec.cli("audit", src, "--out", out_file, "--on-error", "skip", timeout=60,
                               preexec=limit_memory(3))
    assert rc is not None, f"audit hung ({dt:.0f} s)"
    assert "Traceback" not in err and "internal error" not in err, err[-2000:]
    assert rc in (0, 1), f"rc={rc}\n{err[-2000:]}"
    ids = [json.loads(x)["run_id"] for x in out_file.read_text().splitlines()] if out_file.exists() else []
    assert sorted(ids) == ["good-1", "good-2"], f"audited {ids}\n{err[-2000:]}"
    assert "traces.jsonl" in err, f"the skipped record is not named: {err[-2000:]}"


def test_malformed_openai_chat_tool_calls_are_bad_records_not_a_crash(sec):
    folder = sec.base / "chats"
    folder.mkdir()

    def chat(rid, tool_calls):
        return {"run_id": rid, "task": "Cancel reservation XEHM4B", "messages": [
            {"role": "user", "content": "Please cancel XEHM4B."},
            {"role": "assistant", "content": None, "tool_calls": tool_calls},
            {"role": "tool", "tool_call_id": "c1", "content": "cancelled"},
            {"role": "assistant", "content": "Your reservation XEHM4B has been cancelled."}]}

    good = [{"id": "c1", "type": "function",
             "function": {"name": "cancel_reservation", "arguments": "{\"reservation_id\": \"XEHM4B\"}"}}]
    bad = {"not-a-list": {"id": "c1"}, "string": "cancel_reservation", "none-item": [None],
           "no-function": [{"id": "c1", "function": None}],
           "odd-types": [{"id": "c1", "function": {"name": {"a": 1}, "arguments": {"a": [1]}}}],
           "deep-args": [{"id": "c1", "function": {"name": "x", "arguments": "[" * 100_000 + "]" * 100_000}}]}
    (folder / "good.json").write_text(json.dumps(chat("good-chat", good)))
    for name, calls in bad.items():
        (folder / f"bad-{name}.json").write_text(json.dumps(chat(f"bad-{name}", calls)))
    out_file = sec.base / "audit.jsonl"
    rc, out, err, dt = sec.cli("audit", folder, "--format", "openai-chat", "--out", out_file, "--on-error", "skip",
                               timeout=60)
    assert rc is not None, f"audit hung ({dt:.0f} s)"
    assert "Traceback" not in err and "internal error" not in err, err[-2000:]
    assert rc in (0, 1), f"rc={rc}\n{err[-2000:]}"
    ids = {json.loads(x)["run_id"] for x in out_file.read_text().splitlines()}
    assert "good-chat" in ids, err[-2000:]
    for name in bad:  # each malformed file is audited tolerantly or named in one line
        assert f"bad-{name}" in ids or f"bad-{name}.json" in err, f"bad-{name}: neither audited nor reported\n{err}"


def test_fifo_among_trace_files_hangs_nothing(sec):
    folder = sec.base / "traces"
    folder.mkdir()
    (folder / "a.jsonl").write_text(_trace("good-1") + "\n")
    os.mkfifo(folder / "stuck.jsonl")
    out_file = sec.base / "audit.jsonl"
    rc, out, err, dt = sec.cli("audit", folder, "--out", out_file, timeout=20)
    assert rc is not None, f"`referee audit` hung on a FIFO among the trace files: killed after {dt:.0f} s"
    assert "Traceback" not in err and "internal error" not in err, err[-2000:]
    ids = [json.loads(x)["run_id"] for x in out_file.read_text().splitlines()] if out_file.exists() else []
    assert ids == ["good-1"], f"audited {ids}\n{err[-2000:]}"
