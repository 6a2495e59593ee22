"""Per-record worst case: `referee audit` on each hostile trace of issue 30 (cases 1 and 2), one record each.

Each case is audited in a child process with a hard timeout (a record that backtracks without end is shown
as `>T s`, not waited for). `plain` is an ordinary one-record trace, for the cost of starting the CLI.

    python benchmarks/bench_redos.py [--timeout 120] [--case NAME ...] [--json]

To time another checkout's code, run it with that checkout's `src` first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.support.hostile_traces import CASES, _step, _v1  # noqa: E402

PLAIN = ("plain.jsonl", lambda: _v1("plain", "Find the user", [_step("get_user", {"id": 7}, '{"id": 7}')]))


def time_case(name: str, work: Path, timeout: float) -> dict:
    """Seconds `referee audit` took on the case's file (None past the timeout), its exit code, its size."""
    fname, build = PLAIN if name == "plain" else CASES[name]
    src = work / name / fname
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(build())
    out = work / name / "audit.jsonl"
    cmd = [sys.executable, "-m", "referee.cli.main", "audit", str(src), "--out", str(out), "--no-progress",
           "--workers", "1"]
    t0 = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"case": name, "bytes": src.stat().st_size, "seconds": None, "rc": None}
    return {"case": name, "bytes": src.stat().st_size, "seconds": round(time.perf_counter() - t0, 2),
            "rc": done.returncode}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--case", action="append", choices=["plain", *CASES], help="only these cases (repeatable)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="referee-redos-") as tmp:
        rows = [time_case(n, Path(tmp), a.timeout) for n in (a.case or ["plain", *CASES])]
    if a.json:
        print(json.dumps(rows, indent=1))
        return 0
    print("| case | bytes | seconds | exit |")
    print("|---|---|---|---|")
    for r in rows:
        secs = f">{a.timeout:.0f}" if r["seconds"] is None else str(r["seconds"])
        print(f"| {r['case']} | {r['bytes']} | {secs} | {'-' if r['rc'] is None else r['rc']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
