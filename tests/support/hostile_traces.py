"""Traces written against the auditor's regexes (issue 30, cases 1 and 2): each field is one an agent writes.

Shared by tests/audit/test_patterns_linear.py and benchmarks/bench_redos.py. Each case is a file the
reader sniffs as it would a real one (trace v1 JSONL, a mini-swe-agent trajectory, an OpenAI chat).
"""

from __future__ import annotations

import json
from typing import Any, Callable


def _v1(run_id: str, task: str, steps: list[dict[str, Any]], report: str = "Done.") -> str:
    return json.dumps({"trace_version": 1, "run_id": run_id, "task": task, "steps": steps, "report": report}) + "\n"


def _step(name: str, args: dict[str, Any], text: str = "ok") -> dict[str, Any]:
    return {"action": {"name": name, "args": args}, "observation": {"text": text}}


def sql_comments() -> str:
    """411 bytes: a query of `/* */` 32 times then ` zzz` (the SQL verb's comment group backtracked 2^n)."""
    return _v1("sql-comments", "Find the user", [_step("run_sql", {"query": "/* */" * 32 + " zzz"})])


def no_rows_newlines() -> str:
    """A SQL write whose result is 100,000 newlines then `x` (`^\\s*` under re.M: quadratic)."""
    return _v1("no-rows", "Deactivate user 7", [_step("run_sql", {"query": "UPDATE users SET active = 0 WHERE id = 7"},
                                                      "\n" * 100_000 + "x")])


def shell_append() -> str:
    """A shell command of 100,000 newlines then `appendx` (SWE-agent's file commands, `\\n\\s*` per line)."""
    return _v1("shell-append", "Fix the bug in util.py", [_step("bash", {"command": "\n" * 100_000 + "appendx"})])


def write_file_slashes() -> str:
    """A `write_file` path of 100,000 `/` then `!` (a path pattern of two overlapping classes: quadratic)."""
    return _v1("write-file-path", "Fix the bug in util.py",
               [_step("write_file", {"path": "/" * 100_000 + "!", "content": "x = 1\n"})])


def open_commas() -> str:
    """`open(,` 30,000 times in a command (Python's `open(..., 'w')` test scanned to the end from each `open(`)."""
    return _v1("open-commas", "Fix the bug in util.py", [_step("bash", {"command": "open(," * 30_000})])


def report_fence() -> str:
    """A report of a code fence and 400,000 `a` (the claim reader's code-block pattern: 4 s at 100,000)."""
    return _v1("report-fence", "Find the user", [_step("get_user", {"id": 7}, '{"id": 7}')],
               report="```" + "a" * 400_000)


def mini_swe_bash() -> str:
    """A mini-swe-agent turn of 20,000 unclosed ```` ```bash ```` blocks (the action pattern's lazy body)."""
    msgs = [{"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "<pr_description>\nRename foo to bar\n</pr_description>"},
            {"role": "assistant", "content": "THOUGHT: look.\n\n" + "```bash\n\t" * 20_000},
            {"role": "user", "content": "<returncode>0</returncode>\n<output>\n</output>"},
            {"role": "assistant",
             "content": "THOUGHT: done.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"}]
    return json.dumps({"info": {"exit_status": "Submitted"}, "messages": msgs, "instance_id": "acme__widgets-42",
                       "trajectory_format": "mini-swe-agent-1"})


def chat_courtesy() -> str:
    """An OpenAI chat whose last turn is `if you have ` and `help ` 80,000 times then `.x` (the courtesy closing)."""
    msgs = [{"role": "user", "content": "Cancel reservation XEHM4B"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "cancel_reservation", "arguments": '{"reservation_id": "XEHM4B"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": '{"status": "cancelled"}'},
            {"role": "assistant", "content": "If you have " + "help " * 80_000 + ".x"}]
    return json.dumps([{"run_id": "chat-courtesy", "task": "Cancel reservation XEHM4B", "messages": msgs}])


def handoff_name() -> str:
    """An action named `transfer` 25,000 times (the hand-off pattern's `\\w*` ran to the end from each one)."""
    return _v1("handoff-name", "Cancel reservation XEHM4B", [_step("transfer" * 25_000, {"id": "XEHM4B"})])


def sed_options() -> str:
    """A command of `sed -` 40,000 times (each `sed` took every later `-sed` for one of its options)."""
    return _v1("sed-options", "Fix the bug in util.py", [_step("bash", {"command": "sed -" * 40_000})])


# name -> (file name, builder): the file name's suffix is what the reader sniffs
CASES: dict[str, tuple[str, Callable[[], str]]] = {
    "sql-comments": ("sql.jsonl", sql_comments),
    "no-rows-newlines": ("norows.jsonl", no_rows_newlines),
    "shell-append": ("append.jsonl", shell_append),
    "write-file-slashes": ("path.jsonl", write_file_slashes),
    "open-commas": ("open.jsonl", open_commas),
    "report-fence": ("fence.jsonl", report_fence),
    "mini-swe-bash": ("acme__widgets-42.traj.json", mini_swe_bash),
    "chat-courtesy": ("chat.json", chat_courtesy),
    "handoff-name": ("handoff.jsonl", handoff_name),
    "sed-options": ("sed.jsonl", sed_options),
}
