"""The library's entry points (referee.run, referee.grade, referee.audit_runs): docs/api.md's examples run as
written, the CLI's flags and the library's options agree, and the audit's events reach the sink given."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

import referee
from referee.audit.run.options import AuditOptions, CallbackEvents, NoEvents
from referee.cli.audit_cmds import audit as audit_command
from referee.cli.audit_flags import options_from
from referee.errors import TraceError, UsageError

ROOT = Path(__file__).resolve().parents[1]
PRINTING = ("traces", "out", "show", "progress", "summary_json", "summary_md", "junit")


def test_the_examples_of_docs_api_run_in_order_and_hold(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "api.md").read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 3
    monkeypatch.chdir(tmp_path)
    # the example's agent is `python agent.py`: the python this test runs with
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    names: dict = {}
    for block in blocks:
        exec(compile(block, "docs/api.md", "exec"), names)
    assert any(step == "write_greeting" for _, step in names["steps"])  # on_event heard the step
    assert (tmp_path / "audit.jsonl").exists() and names["result"].stats.written == 1


def test_the_cli_defaults_are_the_library_defaults():
    ctx = audit_command.make_context("audit", ["t.jsonl", "--out", "a.jsonl"])
    flags = {k: v for k, v in ctx.params.items() if k not in PRINTING}
    assert options_from(flags) == AuditOptions()


def test_every_audit_option_has_a_flag_and_every_flag_an_option_or_a_printing_job():
    ctx = audit_command.make_context("audit", ["t.jsonl", "--out", "a.jsonl", "--include", "*.json", "--workers", "3",
                                               "--temperature", "none", "--record-cpu-s", "2"])
    flags = {k: v for k, v in ctx.params.items() if k not in PRINTING}
    options = options_from(flags, summary_json=Path("s.json"))
    assert options.include == ("*.json",) and options.workers == 3 and options.llm.temperature is None
    assert options.record_cpu_s == 2 and options.other_outputs == (("summary_json", Path("s.json")),)
    renamed = {"fmt", "runs", "executor_kind", "base_url", "model", "concurrency", "timeout", "connect_timeout",
               "max_tokens", "temperature", "api_key_env", "max_retries"}
    assert set(flags) - renamed <= set(AuditOptions.__dataclass_fields__)


def _traces(path: Path) -> Path:
    rows = [{"trace_version": 1, "run_id": "a", "task": "Delete note N1", "steps": [], "report": "Done."},
            {"trace_version": 1, "run_id": "a", "task": "Delete note N2", "steps": [], "report": "Done."},
            {"trace_version": 1, "task": "no run_id", "steps": []}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_audit_runs_tells_its_events_to_the_sink_and_counts_them_in_the_result(tmp_path):
    heard: list[tuple[str, str]] = []
    events = CallbackEvents(written=lambda rec: heard.append(("written", rec.run_id)),
                            duplicate=lambda err: heard.append(("duplicate", err.message)),
                            skipped=lambda err: heard.append(("skipped", err.message)))
    result = referee.audit_runs([_traces(tmp_path / "t.jsonl")], tmp_path / "a.jsonl", AuditOptions(workers=1), events)
    assert [kind for kind, _ in heard] == ["written", "duplicate", "skipped"]
    assert result.stats.written == 1 and result.stats.duplicates == 1 and len(result.stats.errors) == 1
    assert result.summarize().as_dict()["dispositions"]["review"] == 1  # no actions: absence never flags


def test_audit_runs_with_on_error_stop_raises_the_bad_record(tmp_path):
    with pytest.raises(TraceError):
        referee.audit_runs([_traces(tmp_path / "t.jsonl")], tmp_path / "a.jsonl",
                           AuditOptions(workers=1, on_error="stop"), NoEvents())


def test_a_users_mistake_is_a_referee_error_not_a_traceback(tmp_path):
    with pytest.raises(UsageError, match="--samples must be at least 1"):
        referee.audit_runs([_traces(tmp_path / "t.jsonl")], tmp_path / "a.jsonl", AuditOptions(samples=0))
    with pytest.raises(UsageError, match="given as an input and as --out"):
        referee.audit_runs([tmp_path / "t.jsonl"], tmp_path / "t.jsonl")


def test_an_event_sink_made_of_functions_refuses_an_event_that_does_not_exist():
    with pytest.raises(TypeError, match="no audit event writen"):
        CallbackEvents(writen=print)
