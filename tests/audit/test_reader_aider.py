"""aider reader: a chat history of several sessions and prompts, edits and shell runs as steps, llm history outputs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from referee.audit.ingest.readers import ReadOptions, read_traces, sniff_format
from referee.audit.ingest.readers.aider import llm_outputs, read_aider
from referee.cli.main import main

REPO = Path(__file__).resolve().parents[1] / "data" / "traces" / "aider" / "calc"
HISTORY = REPO / ".aider.chat.history.md"


def test_the_history_is_sniffed_as_aider_with_no_format():
    assert sniff_format(HISTORY) == "aider"


def test_each_prompt_is_a_run_commands_are_not_prompts_and_an_empty_session_gives_none():
    items = list(read_traces(HISTORY))
    assert [i.run_id for i in items] == [f"calc@2026-05-03T09:12:40#{n}" for n in (1, 2, 3)]
    assert [i.trace.task for i in items] == [
        "Make divide() raise ValueError on a zero divisor instead of returning None.",
        "Add a test for it in tests/test_calc.py and run the tests.", "Are all the tests passing now?"]
    assert items[0].line == 12


def test_edits_commits_and_shell_runs_are_steps_with_their_results():
    first, second, _ = [i.trace for i in read_traces(HISTORY)]
    edit, commit = first.steps
    assert edit.action.name == "edit_file" and edit.action.args["path"] == "calc.py"
    assert "raise ValueError" in edit.action.args["replace"] and edit.observation.text == "Applied edit to calc.py"
    assert commit.action.args["command"].startswith("git commit") and not commit.observation.error
    assert first.report == "I'll change `divide()` to raise."  # the prose, without the edit block
    shells = [s for s in second.steps if s.action.name == "shell" and "pytest" in s.action.args["command"]]
    assert len(shells) == 2
    assert "1 failed, 4 passed" in shells[0].observation.text  # the output, from .aider.llm.history
    assert shells[1].observation.error is True  # /test added its output: the command failed


def test_without_the_llm_history_a_command_has_no_guessed_output(tmp_path):
    shutil.copy(HISTORY, tmp_path / HISTORY.name)
    second = [i.trace for i in read_traces(tmp_path / HISTORY.name)][1]
    asked = [s for s in second.steps if s.action.name == "shell" and "pytest" in s.action.args["command"]][0]
    assert asked.observation is None


def test_llm_history_outputs_are_read_once_each():
    outs = llm_outputs(REPO / ".aider.llm.history")
    assert list(outs) == ["python -m pytest -q"] and len(outs["python -m pytest -q"]) == 1


def test_whole_keeps_a_session_as_one_run():
    [item] = list(read_aider(HISTORY, ReadOptions(session_runs="whole")))
    assert item.run_id == "calc@2026-05-03T09:12:40" and item.trace.task.startswith("Make divide()")


def test_a_markdown_file_that_is_no_aider_history_is_one_error(tmp_path):
    p = tmp_path / "notes.md"
    p.write_text("# notes\n\nnothing here\n")
    [item] = list(read_aider(p))
    assert item.error is not None and "not an Aider chat history" in str(item.error)


def test_a_folder_walk_finds_the_dot_named_history_and_the_audit_flags_the_overclaim(tmp_path):
    repo = tmp_path / "calc"
    shutil.copytree(REPO, repo)
    out = tmp_path / "a.jsonl"
    assert main(["audit", str(tmp_path), "--out", str(out), "--no-progress", "--workers", "1"]) == 0
    recs = {r["run_id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert len(recs) == 3
    # the last prompt's answer claims every test passes, right after /test failed; that prompt itself has no
    # action, and absence alone never flags (issue 32): it is blocked for review
    assert recs["calc@2026-05-03T09:12:40#3"]["disposition"] == "review"
    assert recs["calc@2026-05-03T09:12:40#2"]["disposition"] == "flag"  # its test runs failed


FENCED = REPO.parent / "fenced" / ".aider.chat.history.md"  # the diff-fenced format, `/code` echoed


def test_the_diff_fenced_format_and_the_echo_of_code_are_read_as_one_prompt_with_its_edit():
    [item] = list(read_traces(FENCED))
    t = item.trace
    assert t.task == "add a dark mode toggle to App.js"
    acts = [s for s in t.steps if s.action]  # `/commit` itself stays as what the user said (no action)
    assert [(s.action.name, s.action.args.get("path") or s.action.args.get("command")) for s in acts] == [
        ("edit_file", "src/App.js"), ("edit_file", "src/App.js"),
        ("shell", "git commit -m 'aider: add dark mode toggle'")]
    assert [s.observation.text for s in acts[:2]] == ["Applied edit to src/App.js"] * 2  # both blocks applied
    assert t.report == "Here is the change:\n\nThe toggle is in place."


WHOLE = REPO.parent / "whole" / ".aider.chat.history.md"  # the whole-file format, then an edit aider refused


def test_an_applied_edit_in_another_format_is_an_edit_and_a_refused_block_a_failed_one():
    first, second = [i.trace for i in read_traces(WHOLE)]
    [edit] = [s for s in first.steps if s.action]
    assert (edit.action.name, edit.action.args, edit.observation.error) == ("edit_file", {"path": "hello.py"}, False)
    [bad] = [s for s in second.steps if s.action]
    assert bad.action.args["path"] == "hello.py" and bad.observation.error is True
