"""Codex CLI rollouts: a run per prompt, shell commands and apply_patch seen as such, audited."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.audit.ingest.readers import read_traces, sniff_format
from referee.audit.ingest.readers.codex_cli import _output
from tests.support.audit_cli import audit_file

DATA = Path(__file__).resolve().parents[1] / "data" / "traces" / "sessions"
ROLLOUT = DATA / "codex_rollout.jsonl"
SID = "0199e2a4-7c1b-7d30-9f4e-3b2a1c0d9e8f"


def test_a_rollout_is_sniffed_and_split_into_one_run_per_prompt():
    assert sniff_format(ROLLOUT) == "codex-cli"
    items = list(read_traces(ROLLOUT))
    assert [i.error for i in items] == [None, None]
    assert [i.run_id for i in items] == [f"{SID}#1", f"{SID}#2"]
    one, two = (i.trace for i in items)
    # <user_instructions> and <environment_context> are the harness's user messages: not prompts
    assert one.task == "Make slugify() collapse repeated dashes"
    assert two.task.startswith("Also transliterate accented letters")
    assert [s.action.name for s in one.steps] == ["shell", "apply_patch", "shell"]
    assert one.steps[0].action.args["command"] == "sed -n '1,40p' slugify.py"  # bash -lc unwrapped
    assert one.steps[2].observation.text.startswith("Exit code: 0") and not one.steps[2].observation.error
    assert [s.action.name for s in two.steps] == ["exec_command", "exec_command"]
    assert two.steps[1].observation.error is True and "1 failed" in two.steps[1].observation.text
    assert two.report == "Added accent transliteration and a test for it. All tests pass."
    assert one.meta["model"] == "gpt-5-codex" and one.meta["cwd"] == "/home/dev/slugify"
    assert "SECRET-THOUGHT" not in "".join(i.trace.model_dump_json() for i in items)  # reasoning is never read


def test_the_audit_flags_the_last_prompt_and_passes_the_honest_one(tmp_path):
    run, recs = audit_file(ROLLOUT, tmp_path / "a.jsonl")
    assert run.returncode == 0, run.stderr
    assert recs[f"{SID}#2"]["disposition"] == "flag" and recs[f"{SID}#2"]["trace_state"] == "not_completed"
    assert recs[f"{SID}#1"]["disposition"] == "pass"  # apply_patch, then the tests passed


def test_whole_keeps_the_rollout_as_one_run(tmp_path):
    run, recs = audit_file(ROLLOUT, tmp_path / "a.jsonl", "--session-runs", "whole")
    assert run.returncode == 0, run.stderr
    assert list(recs) == [SID] and recs[SID]["disposition"] == "flag"


@pytest.mark.parametrize("raw, exit_code, text, failed", [
    (json.dumps({"output": "ok\n", "metadata": {"exit_code": 0}}), None, "Exit code: 0\nok\n", False),
    (json.dumps({"output": "boom\n", "metadata": {"exit_code": 2}}), None, "Exit code: 2\nboom\n", True),
    ("Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 1\nOutput:\nE\n", None, None, True),
    ("Exit code: 0\nWall time: 0.1 seconds\nOutput:\nfine\n", None, None, False),
    ("plain output", 3, "Exit code: 3\nplain output", True),  # the exit code from exec_command_end
    ({"content": "patch rejected", "success": False}, None, "patch rejected", True),
    ("no code said", None, "no code said", False),
])
def test_call_outputs_say_their_exit_code(raw, exit_code, text, failed):
    got_text, got_failed = _output(raw, exit_code)
    assert got_failed is failed
    if text is not None:
        assert got_text == text


def _lines(*items: dict) -> str:
    return "".join(json.dumps(i) + "\n" for i in items)


def test_an_older_rollout_with_bare_items_and_a_local_shell_call(tmp_path):
    path = tmp_path / "rollout-2025-05-01T10-00-00-abc.jsonl"
    path.write_text(_lines(
        {"id": "old-1", "timestamp": "2025-05-01T10:00:00Z", "instructions": "Be careful."},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Delete the build folder"}]},
        {"type": "local_shell_call", "call_id": "c1", "status": "completed",
         "action": {"type": "exec", "command": ["bash", "-lc", "rm -rf build"], "working_directory": "/r"}},
        {"type": "function_call_output", "call_id": "c1",
         "output": json.dumps({"output": "", "metadata": {"exit_code": 0}})},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Deleted build/."}]}))
    assert sniff_format(path) == "codex-cli"
    (item,) = read_traces(path)
    t = item.trace
    assert item.run_id == "old-1#1" and t.task == "Delete the build folder"
    assert (t.steps[0].action.name, t.steps[0].action.args["command"]) == ("local_shell", "rm -rf build")
    assert t.initial_observation.data == {"system": "Be careful."}


def test_typed_prompts_decide_when_the_rollout_records_them(tmp_path):
    """A user item the user did not type (no event_msg user_message with its text) is not a prompt."""
    def user(text):
        return {"type": "response_item", "payload": {"type": "message", "role": "user",
                                                     "content": [{"type": "input_text", "text": text}]}}
    path = tmp_path / "r.jsonl"
    path.write_text(_lines(
        {"type": "session_meta", "payload": {"id": "s9", "cwd": "/r"}},
        user("# AGENTS.md instructions for /r\n\nAlways run tests."),
        user("Fix the lint errors"),
        {"type": "event_msg", "payload": {"type": "user_message", "message": "Fix the lint errors"}},
        {"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                              "content": [{"type": "output_text", "text": "Fixed them."}]}}))
    (item,) = read_traces(path)
    assert item.run_id == "s9#1" and item.trace.task == "Fix the lint errors"


PATCH = "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n*** End Patch\n"


@pytest.mark.parametrize("command, name", [
    (["apply_patch", PATCH], "apply_patch"),  # Codex's argv form of its patch tool
    (["applypatch", PATCH], "apply_patch"),
    (["bash", "-lc", f"apply_patch <<'PATCH'\n{PATCH}PATCH"], "apply_patch"),  # the heredoc under bash -lc
    (["bash", "-lc", f"cd /r && apply_patch <<\"EOF\"\n{PATCH}EOF\n"], "apply_patch"),
    (["bash", "-lc", "apply_patch --help"], "shell"),  # no patch: a command like any other
    (["bash", "-lc", f"cat <<'EOF' > notes.txt\n{PATCH}EOF"], "shell"),  # a patch written to a file, not applied
], ids=["argv", "applypatch", "heredoc", "cd-heredoc", "no-patch", "cat-heredoc"])
def test_apply_patch_through_the_shell_tool_is_the_patch_tool(tmp_path, command, name):
    path = tmp_path / "r.jsonl"
    path.write_text(_lines(
        {"type": "session_meta", "payload": {"id": "s1", "cwd": "/r"}},
        {"type": "response_item", "payload": {"type": "message", "role": "user",
                                              "content": [{"type": "input_text", "text": "Set x to 2 in a.py"}]}},
        {"type": "response_item", "payload": {"type": "function_call", "name": "shell", "call_id": "c1",
                                              "arguments": json.dumps({"command": command, "workdir": "/r"})}},
        {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1", "output": json.dumps(
            {"output": "Success. Updated the following files:\nM a.py\n", "metadata": {"exit_code": 0}})}},
        {"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                              "content": [{"type": "output_text", "text": "x is now 2."}]}}))
    (item,) = read_traces(path)
    step = item.trace.steps[0]
    assert step.action.name == name
    if name == "apply_patch":
        assert step.action.args == {"input": PATCH.rstrip("\n") if "<<" in str(command) else PATCH}
