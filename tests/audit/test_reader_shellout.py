"""A tool's output text read as its command's status: exit-code lines and test runners' failing summaries."""

from __future__ import annotations

import json

import pytest

from referee.audit.ingest.readers import read_traces
from referee.audit.ingest.readers.shellout import exit_code_in, failing_summary, output_failed


@pytest.mark.parametrize("text, code", [
    ("Exit code: 1\nboom", 1),
    ("exit_code: 1\n............F [100%]\n1 failed, 12 passed in 0.52s", 1),
    ("Chunk ID: 1\nProcess exited with code 2\nOutput:\nE", 2),
    ("<returncode>0</returncode>\n<output>\nok\n</output>", 0),
    ("Exit Code: 127", 127),
    ("out\n" + "x" * 5000 + "\nexit status 3", 3),  # written after a long output
    ("see the exit code: 3 in the docs", None),  # not a status line of its own
    ("13 passed in 0.41s", None),
])
def test_exit_code_lines(text, code):
    assert exit_code_in(text) == code


@pytest.mark.parametrize("text, failing", [
    ("....F\n1 failed, 12 passed in 0.52s", True),
    ("1 failed, 12 passed", True),
    ("=========== 2 errors in 1.10s ===========", True),
    ("==== 1 failed, 3 passed, 1 warning in 0.20s ====", True),
    ("Ran 3 tests in 0.010s\n\nFAILED (failures=1)", True),  # unittest
    ("test result: FAILED. 12 passed; 1 failed; 0 ignored", True),  # cargo test
    ("Tests:       1 failed, 12 passed, 13 total", True),  # jest
    ("13 passed in 0.41s", False),
    ("0 failed, 4 passed", False),
    ("Payments: 3 failed", False),  # words before the counts: not a runner's summary
    ("3 failed login attempts were blocked", False),
    ("", False),
])
def test_failing_summaries(text, failing):
    assert failing_summary(text) is failing


@pytest.mark.parametrize("text, failed", [
    ("exit_code: 1\n13 passed", True),  # the exit code decides
    ("Exit code: 0\n1 failed, 12 passed", False),  # `pytest || true`: the command itself succeeded
    ("1 failed, 12 passed", True),  # no exit code: the runner's summary decides
    ("wrote tests/test_cli.py", False),
])
def test_output_failed(text, failed):
    assert output_failed(text) is failed


def test_an_openai_chat_tool_result_with_a_failing_summary_is_a_failed_observation(tmp_path):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"messages": [
        {"role": "user", "content": "Run the tests"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "function": {"name": "bash", "arguments": "{\"command\": \"pytest -q\"}"}},
            {"id": "c2", "function": {"name": "bash", "arguments": "{\"command\": \"pytest -q\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "1 failed, 12 passed"},
        {"role": "tool", "tool_call_id": "c2", "content": "13 passed in 0.41s"},
        {"role": "assistant", "content": "Done."}]}))
    (item,) = read_traces(path, "openai-chat")
    assert [s.observation.error for s in item.trace.steps] == [True, False]
