"""`referee eval` time on synthetic records with 1,000 bootstrap resamples (not a test).

Run: python benchmarks/bench_eval.py [--records 10000] [--resamples 1000] [--votes 5] [--repeat 3] [--json OUT]

Prints, per stage, the best of `repeat` runs: writing nothing (records are generated once), the
full in-process `referee eval AUDIT --gold GOLD --json` (3 baselines + 4 replayed policies, every
breakdown and leave-one-group-out, all with intervals), the same without policies, the bootstrap
alone (every method, slice and metric), and peak Python memory of the full run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from referee.cli.main import main  # noqa: E402
from referee.evaluation.baselines import RECORD_BASELINES, auditor_method, baselines  # noqa: E402
from referee.evaluation.bootstrap import BootstrapSpec  # noqa: E402
from referee.evaluation.dataset import tally  # noqa: E402
from referee.evaluation.gold import load_gold  # noqa: E402
from referee.evaluation.results import evaluate  # noqa: E402
from referee.evaluation.synthetic import write_synthetic  # noqa: E402


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _cli(args: list[str]) -> None:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(args)
    if code != 0:
        raise SystemExit(f"referee {' '.join(args)} exited {code}")


def run(records: int, resamples: int, votes: int, repeat: int) -> dict:
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        audit, gold = write_synthetic(Path(d), records, seed=0, votes=votes)
        gen_s = time.perf_counter() - t0
        base = ["eval", str(audit), "--gold", str(gold), "--json", "-o", str(Path(d) / "r.json"),
                "--resamples", str(resamples), "--no-plot"]
        full_s = _best(lambda: _cli(base), repeat)
        no_pol_s = _best(lambda: _cli(base + ["--no-policies"]), repeat)
        methods = [auditor_method()] + [baselines.get(n)() for n in RECORD_BASELINES]
        t = tally(audit, load_gold(gold), methods)
        boot_s = _best(lambda: evaluate(t, BootstrapSpec(resamples=resamples)), repeat)
        slices = len(evaluate(t, BootstrapSpec(resamples=2)).breakdowns) + len(methods)
        tracemalloc.start()
        _cli(base)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        plot_s = _best(lambda: _cli(base[:-1] + ["--plot", str(Path(d) / "p.png")]), 1)  # base ends in --no-plot
    return {"records": records, "resamples": resamples, "votes_per_record": votes,
            "generate_s": round(gen_s, 2), "eval_full_s": round(full_s, 2),
            "eval_no_policies_s": round(no_pol_s, 2), "bootstrap_only_s": round(boot_s, 3),
            "bootstrapped_scores": slices, "eval_with_plot_s": round(plot_s, 2),
            "peak_python_mib": round(peak / 2 ** 20, 1)}


def main_(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--votes", type=int, default=5, help="extraction runs per synthetic record")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args(argv)
    res = run(a.records, a.resamples, a.votes, a.repeat)
    for k, v in res.items():
        print(f"{k:32s} {v}")
    if a.json:
        a.json.write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main_())
