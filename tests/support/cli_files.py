"""The CLI on trace files, as a user runs it: a one-step trace record, a JSONL file of them, `referee ARGS` in a
folder, and the check that a command ended without an internal error."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path


def cli(*args: str, cwd: Path, timeout: float = 60, process: bool = False) -> subprocess.CompletedProcess:
    """`referee ARGS` in `cwd` as a user runs it: in this process (tests.conftest.run_cli) unless `process`."""
    from tests.conftest import base_cli_env, run_cli

    env = base_cli_env()
    env.pop("REFEREE_DEBUG", None)
    rc, out, err = run_cli(list(args), cwd=cwd, env=env, timeout=timeout, process=process)
    return subprocess.CompletedProcess(list(args), rc, out, err)


def trace(run_id: str, task: str = "Delete the note groceries.md", report: str = "Deleted groceries.md.",
          **extra) -> dict:
    return {"trace_version": 1, "run_id": run_id, "task": task,
            "steps": [{"action": {"name": "delete_note", "args": {"name": "groceries.md"}},
                       "observation": {"text": "deleted groceries.md"}}],
            "report": report, **extra}


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def no_crash(proc: subprocess.CompletedProcess) -> None:
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out and "internal error" not in out, out[-2000:]
    assert proc.returncode != 3, out[-2000:]
