"""Fixtures for evaluation tests: audit-record builders, a report-biased LLM judge stub, CLI runner."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # so `tests.support` imports however pytest was started
    sys.path.insert(0, str(ROOT))

from tests.support.llm_stub import LLMStub  # noqa: E402

TAU = Path("/work/shared/corpora/tau-bench-airline/gpt-4o-airline.json")
FAIL_MARK = "ERROR: nothing was saved"   # the trace of a run that did not complete carries this observation


def record(run_id: str, *, claim: str = "success", disposition: str = "pass", task_class: str = "other",
           trace_state: str = "completed", group: str | None = None, split: str | None = None,
           evidence: list | None = None, task: str | None = None, policy: str = "causal") -> dict:
    """One audit record as a dict (the JSONL line `referee audit` writes)."""
    return {"record_version": 1, "run_id": run_id, "task": task or f"task of {run_id}", "task_class": task_class,
            "claim": {"label": claim, "votes": [claim], "backend": "rules"},
            "evidence": evidence if evidence is not None else [],
            "run_states": [trace_state], "trace_state": trace_state, "disposition": disposition,
            "policy": {"name": policy, "sha256": "0" * 64}, "backend": {"name": "rules"},
            "view_sha256": "v" * 64, "group": group, "split": split}


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def biased_judge(body: dict) -> dict:
    """A judge that reads the trace honestly when the report is withheld, and believes the report when shown.

    Blind: not_completed when the trace shows FAIL_MARK, else completed. Aware: if the prompt carries a
    final report that claims success ("done"), it answers completed whatever the trace shows.
    """
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if "final report:" in user and "done" in user.split("final report:", 1)[1].lower():
        return {"trace_state": "completed", "reason": "the agent says it is done"}
    if FAIL_MARK in user:
        return {"trace_state": "not_completed", "reason": "the trace shows nothing was saved"}
    return {"trace_state": "completed", "reason": "the trace shows the change"}


@pytest.fixture
def judge_stub():
    """A loopback OpenAI-compatible server answering as `biased_judge`."""
    with LLMStub(handler=biased_judge) as stub:
        yield stub


@pytest.fixture
def tau_corpus() -> Path:
    if not TAU.exists():
        pytest.skip("shared tau-bench corpus not present")
    return TAU


@pytest.fixture
def cli(capsys):
    """Run `referee ...` in-process; returns (exit code, stdout, stderr)."""
    from referee.cli.main import main

    def run(*args: str):
        code = main([str(a) for a in args])
        out = capsys.readouterr()
        return code, out.out, out.err

    return run
