"""Does an optional accelerator pay? CPU time of `referee audit` on a corpus with and without orjson (and RE2).

Each variant runs `referee audit` in a fresh process whose `sys.modules` blocks the modules left out (an
import of a blocked module raises ImportError, as where it is not installed), `--workers 1`, and is timed
by the CPU time of that process (wall time misleads on a busy machine); the fastest of `--rounds` is kept,
as `timeit` does. Every variant must write the same audit records (their SHA-256 is compared).

    python benchmarks/bench_fast.py [--corpus PATH | --distinct N] [--rounds 3] [--variant none --variant orjson ...]

It decided the `fast` extra's removal (docs/scale.md): on the code before it (commit 291adb5) neither RE2 nor
orjson paid by a margin above this machine's noise. referee imports neither since; the script stays to measure
the next accelerator proposed the same way (name its module in VARIANTS).

`--distinct N`: N distinct runs drawn from every development corpus (`bench_scale.make_distinct`), one JSONL file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from support.corpora import shared_dir  # noqa: E402

# variant -> the accelerator modules it blocks
VARIANTS = {"none": ("orjson", "re2"), "orjson": ("re2",), "re2": ("orjson",), "both": ()}

_CHILD = r"""
import resource, sys
for name in sys.argv[1].split(",") if sys.argv[1] else []:
    sys.modules[name] = None  # `import name` raises ImportError
from referee.cli.main import cli
try:
    cli(sys.argv[2:], standalone_mode=False)
finally:
    r = resource.getrusage(resource.RUSAGE_SELF)
    sys.stderr.write(f"\ncpu_s={r.ru_utime + r.ru_stime}\n")
"""


def one(corpus: Path, blocked: tuple[str, ...], out: Path) -> tuple[float, str]:
    """(CPU seconds, SHA-256 of the audit records) of one audit of `corpus` with `blocked` modules left out."""
    out.unlink(missing_ok=True)
    for extra in out.parent.glob(out.name + ".*"):
        extra.unlink()
    cmd = [sys.executable, "-c", _CHILD, ",".join(blocked), "audit", str(corpus), "--out", str(out),
           "--no-progress", "--workers", "1"]
    got = subprocess.run(cmd, capture_output=True, text=True)
    cpu = [ln for ln in got.stderr.splitlines() if ln.startswith("cpu_s=")]
    if not cpu or not out.exists():
        raise SystemExit(f"audit failed ({' '.join(cmd[3:])}):\n{got.stderr[-2000:]}")
    return float(cpu[-1].split("=")[1]), hashlib.sha256(out.read_bytes()).hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = shared_dir() / "corpora" / "tau-bench-airline" / "gpt-4o-airline.json"
    ap.add_argument("--corpus", type=Path, default=default, help=f"the input to audit (default {default})")
    ap.add_argument("--distinct", type=int, default=0, help="instead of --corpus: N distinct runs (bench_scale)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variant", action="append", choices=list(VARIANTS), help="default: all")
    ap.add_argument("--json", default=None, help="write the results here as JSON")
    args = ap.parse_args()
    variants = args.variant or list(VARIANTS)
    best: dict[str, float] = {}
    shas: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        if args.distinct:
            sys.path.insert(0, str(REPO / "benchmarks"))
            from bench_scale import make_distinct

            args.corpus = Path(tmp) / f"distinct-{args.distinct}.jsonl"
            make_distinct(args.corpus, args.distinct)
        for _ in range(args.rounds):  # variants interleaved: a load that comes and goes touches each alike
            for v in variants:
                cpu, sha = one(args.corpus, VARIANTS[v], Path(tmp) / f"{v}.audit.jsonl")
                best[v] = min(best.get(v, cpu), cpu)
                shas[v] = sha
    base = best.get("none")
    print(f"{args.corpus.name}: fastest of {args.rounds} rounds, CPU seconds of the whole `referee audit` process")
    for v in variants:
        ratio = f"  {base / best[v]:.2f}x vs none" if base else ""
        print(f"  {v:7} {best[v]:7.2f}s{ratio}  records {shas[v][:12]}")
    same = len(set(shas.values())) == 1
    print("same records in every variant: " + ("yes" if same else "NO"))
    if args.json:
        Path(args.json).write_text(json.dumps({"corpus": str(args.corpus), "cpu_s": best, "sha": shas}, indent=2))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
