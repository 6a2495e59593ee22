"""Run `referee audit` on a file as a user would (in this process: tests.support.incli), and read back its records
by run id."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.incli import completed


def audit_file(path: Path, out: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict[str, dict]]:
    """`referee audit PATH --out OUT ARGS...`: the finished process and its audit records, keyed by run_id."""
    run = completed(["audit", path, "--out", out, "--no-progress", *args])
    recs = {r["run_id"]: r for r in map(json.loads, out.read_text().splitlines())} if out.exists() else {}
    return run, recs
