"""Run and grade time of a step whose agent leaves sparse files (issue 29, hole 4; not a test).

Usage: python benchmarks/bench_sparse.py [--files 8] [--mib 512] [--src PATH] [--isolation auto]
An agent makes `--files` sparse files of `--mib` MiB each (`truncate`: no data, no disk) and claims pass;
the plan's one validator reads a small file it also writes. Prints the wall time of `referee run` and of
`referee grade` over the finished run, the step's agent/runner split as the manifest records it (when the
code records one), and whether the sparse files were taken. `--src`: the source tree to time (another
checkout's `src`, for a before/after comparison; default: this one).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
AGENT = '''
import json, os, sys
d = os.environ["REFEREE_AGENT_DIR"]
for i in range(int(sys.argv[1])):
    with open(os.path.join(d, f"sparse{i}.bin"), "wb") as fh:
        fh.truncate(int(sys.argv[2]) << 20)
open(os.path.join(d, "note.txt"), "w").write("done")
open(os.environ["REFEREE_CLAIM_FILE"], "w").write(json.dumps({"pass": True, "note": "made them"}))
'''


def timed(args: list[str], src: Path, cwd: Path) -> tuple[float, int, str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "referee.cli.main", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=3600)
    return time.perf_counter() - t0, proc.returncode, proc.stdout + proc.stderr


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--mib", type=int, default=512)
    ap.add_argument("--src", type=Path, default=HERE / "src")
    ap.add_argument("--isolation", default="auto")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="referee-bench-sparse-", dir="/tmp"))
    try:
        os.chmod(base, 0o755)
        (base / "agent.py").write_text(AGENT)
        os.chmod(base / "agent.py", 0o644)
        py = next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if os.access(p, os.X_OK)), sys.executable)
        (base / "plan.yaml").write_text(
            f"name: sparse\nactor: {{isolation: {args.isolation}}}\nsteps:\n  - id: fill\n    do: make files\n"
            "    validators:\n      - {kind: text_contains, evidence: note.txt, text: done}\n")
        agent = f"{py} {base / 'agent.py'} {args.files} {args.mib}"
        run_s, rc, out = timed(["run", "plan.yaml", "--out", "out", "--agent", agent], args.src.resolve(), base)
        run_dir = (base / "out" / "sparse" / "latest").resolve()
        if not (run_dir / "manifest.json").exists():
            sys.exit(f"the run made no run directory (rc={rc}):\n{out[-3000:]}")
        grade_s, grc, gout = timed(["grade", str(run_dir)], args.src.resolve(), base)
        m = json.loads((run_dir / "manifest.json").read_text())
        rec = m["steps"]["fill"]
        taken = sum(1 for f in m["files"] if "sparse" in f["path"])
        print(f"{args.files} x {args.mib} MiB sparse, src {args.src}, isolation {args.isolation}")
        print(f"  referee run   {run_s:6.2f} s (rc {rc})   referee grade {grade_s:6.2f} s (rc {grc})")
        print(f"  sparse files taken as evidence: {taken} of {args.files}; not taken: {len(rec.get('not_taken', []))}")
        if rec.get("agent_s") is not None:
            print(f"  step record: agent {rec['agent_s']:.2f} s, runner {rec['runner_s']:.2f} s "
                  f"(hashing {rec.get('hash_s') or 0:.2f} s, {rec.get('hashed_bytes') or 0} bytes)")
        print("  console: " + next((ln.strip() for ln in out.splitlines() if "agent exited" in ln), "?"))
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
