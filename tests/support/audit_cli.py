"""Run `referee audit` on a file as a user would, in a child process, and read back its records by run id."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def audit_file(path: Path, out: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict[str, dict]]:
    """`referee audit PATH --out OUT ARGS...`: the finished process and its audit records, keyed by run_id."""
    run = subprocess.run([sys.executable, "-m", "referee.cli.main", "audit", str(path), "--out", str(out),
                          "--no-progress", *args], capture_output=True, text=True, timeout=180)
    recs = {r["run_id"]: r for r in map(json.loads, out.read_text().splitlines())} if out.exists() else {}
    return run, recs
