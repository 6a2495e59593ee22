"""Helpers for evaluation tests: audit-record builders and a judge that believes the report when it sees one."""

from __future__ import annotations

import json
from pathlib import Path

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


def audit_and_gold(tmp_path: Path, records: list[dict], gold_csv: str) -> tuple[Path, Path]:
    """An audit.jsonl of `records` and a gold.csv with `gold_csv`, in tmp_path."""
    audit = write_jsonl(tmp_path / "audit.jsonl", records)
    gold = tmp_path / "gold.csv"
    gold.write_text(gold_csv)
    return audit, gold


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
