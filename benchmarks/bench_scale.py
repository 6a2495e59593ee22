"""Scale benchmark: rules audit records/s with 1 and N workers (a local pool, and Dask's LocalCluster), replay, and
`referee audit` start-up, each as a ratio to a bare `json.loads` of the same trace lines, measured back to back.

The corpus is `--copies` copies of a real corpus (tau-bench by default) with every run_id and task text made
unique, as trace v1 JSONL. Every round measures, in this order: the bare parse, the audit with 1 worker (in
this process), with N workers (a process pool), on Dask (a LocalCluster of N on loopback, started for that
measurement alone and timed apart), and replay; the table reports each round, and CPU seconds (this
process, and the pool's workers), so that a shared machine's contention can be seen: with
`kernel.sched_autogroup_enabled` the processes of one session share one session's CPU, however many there are.

The report ends with `best`: each time's fastest round, and the ratios of those.

With `--distinct N` the corpus is N distinct runs instead, drawn in turn from every development corpus,
each changed (its digits renamed, its steps cut, repeated or swapped; `make_distinct`): copies repeat every
text but the task, so the content caches of the rules hit more on them than on runs that differ.

Run: python benchmarks/bench_scale.py [--corpus PATH] [--copies 20] [--distinct N] [--workers 2] [--chunk-size 50]
                                      [--rounds 2] [--no-dask] [--json OUT]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import referee.core.executors as executors  # noqa: E402
from referee.audit.claim.reader import RulesClaimReader  # noqa: E402
from referee.audit.decide.policyfile import load_policy  # noqa: E402
from referee.audit.extract.rules import RulesExtractor  # noqa: E402
from referee.audit.present.replay import replay_file  # noqa: E402
from referee.audit.run.cache import EvidenceCache  # noqa: E402
from referee.audit.run.parallel import ParallelAudit  # noqa: E402
from referee.audit.run.pipeline import Auditor, audit_files, iter_items  # noqa: E402
from referee.core.executors import ExecutorOptions, LocalPool  # noqa: E402

SHARED = Path(os.environ.get("REFEREE_SHARED") or ROOT.parent / "shared")
TAU = SHARED / "corpora" / "tau-bench-airline" / "gpt-4o-airline.json"
TICK = os.sysconf("SC_CLK_TCK")


def make_corpus(src: Path, out: Path, copies: int) -> int:
    traces = [it.trace for it in iter_items([src], None) if it.trace is not None]
    with open(out, "w", encoding="utf-8") as fh:
        for c in range(copies):
            for t in traces:
                d = json.loads(t.model_dump_json(exclude_none=True))
                d["run_id"], d["task"] = f"{t.run_id}-c{c}", f"{t.task} (copy {c})"
                fh.write(json.dumps(d) + "\n")
    return len(traces) * copies


def _dev_traces() -> list[dict]:
    """Every trace of the development corpora present (tau-bench, mini-swe-agent, who-and-when), as trace v1 dicts."""
    root = SHARED / "corpora"
    out = [json.loads(it.trace.model_dump_json(exclude_none=True))
           for src in (TAU, root / "mini-swe-agent-swebench" / "trajs") if src.exists()
           for it in iter_items([src], None) if it.trace is not None]
    if (root / "who-and-when").exists():
        sys.path.insert(0, str(ROOT / "benchmarks" / "adapters"))
        import who_and_when

        out += [trace for trace, _ in who_and_when.iter_corpus(root / "who-and-when")]
    return out


def _digits(value: object, table: dict[int, int]) -> object:
    """`value` with every digit of every string and number in it renamed by `table` (one permutation of 0-9)."""
    if isinstance(value, str):
        return value.translate(table)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        text = repr(value).translate(table)
        return value if text[:1] == "0" and text[1:2].isdigit() else type(value)(text)
    if isinstance(value, list):
        return [_digits(v, table) for v in value]
    if isinstance(value, dict):
        return {k: _digits(v, table) for k, v in value.items()}
    return value


def make_distinct(out: Path, n: int, seed: int = 7) -> int:
    """`n` distinct runs drawn in turn from every development corpus and changed, so that no text repeats from
    one run to the next the way `make_corpus`'s copies repeat theirs: in each run every digit of every text and
    number (task, observations, arguments, report) is renamed by one permutation of 0-9 of its own (ids stay
    consistent inside the run), and its steps are, by chance, cut short, one repeated or two swapped."""
    import random

    bases = _dev_traces()
    with open(out, "w", encoding="utf-8") as fh:
        for i in range(n):
            rng = random.Random(seed * 1_000_003 + i)
            perm = list("0123456789")
            rng.shuffle(perm)
            table = {ord(str(k)): v for k, v in enumerate(perm)}
            d = {k: v if k == "trace_version" else _digits(v, table) for k, v in bases[i % len(bases)].items()}
            steps = d.get("steps") or []
            roll = rng.random()
            if len(steps) > 3 and roll < 0.25:
                steps = steps[:-rng.randint(1, 3)]
            elif steps and roll < 0.45:
                k = rng.randrange(len(steps))
                steps = steps[:k + 1] + steps[k:]
            elif len(steps) > 1 and roll < 0.65:
                k = rng.randrange(len(steps) - 1)
                steps = steps[:k] + [steps[k + 1], steps[k]] + steps[k + 2:]
            d["steps"] = steps
            d["run_id"] = f"{d.get('run_id')}-d{i}"
            fh.write(json.dumps(d) + "\n")
    return n


def cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def proc_cpu(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, IndexError, ValueError):
        return 0.0


class CountingPool(LocalPool):
    """A LocalPool that reads its workers' CPU seconds before it closes (they are the forkserver's children)."""

    worker_cpu = 0.0

    def close(self) -> None:
        CountingPool.worker_cpu += sum(proc_cpu(p.pid) for p in self._pool._processes.values())
        super().close()


def bare_parse(path: Path) -> float:
    t0 = time.perf_counter()
    with open(path, "rb") as fh:
        for line in fh:
            json.loads(line)
    return time.perf_counter() - t0


def audit(path: Path, tmp: Path, name: str, executor=None) -> tuple[float, int, float]:
    out = tmp / f"{name}.jsonl"
    for p in tmp.glob(f"{name}.jsonl*"):
        p.unlink()
    cache = EvidenceCache(out.with_name(out.name + ".cache.sqlite"))  # as `referee audit` does
    a = Auditor(load_policy("causal"), RulesExtractor(), RulesClaimReader(), cache=cache)
    c0, t0 = cpu_self(), time.perf_counter()
    stats = audit_files([path], a, out, executor=executor)
    cache.close()
    return time.perf_counter() - t0, stats.written, cpu_self() - c0


def replay(path: Path) -> float:
    lp = load_policy("final-state")
    t0 = time.perf_counter()
    for rec in replay_file(path, lp):
        rec.model_dump_json()
    return time.perf_counter() - t0


def startup(tmp: Path, n: int = 5) -> dict:
    # as installed: pip writes the bytecode of a wheel's modules, and `make setup` that of this checkout; without
    # it (PYTHONDONTWRITEBYTECODE set) each start would compile every module it imports again
    compileall.compile_dir(str(ROOT / "src"), quiet=1)
    empty = tmp / "empty.jsonl"
    empty.write_text("")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    walls, cpus = [], []
    for i in range(n):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "referee.cli.main", "audit", str(empty), "--out",
                        str(tmp / f"e{i}.jsonl"), "--no-progress"], env=env, check=True, capture_output=True)
        walls.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
    return {"wall_s_median": round(statistics.median(walls), 3), "wall_s_min": round(min(walls), 3),
            "cpu_s_median": round(statistics.median(cpus), 3)}


def dask_round(corpus: Path, tmp: Path, args: argparse.Namespace, n: int, t1: float) -> dict:
    """The audit on a Dask LocalCluster started for it and closed after: an idle cluster's event loops and
    heartbeats cost some 10% of a 2-core machine, so it is not left running while 1 and N workers are timed."""
    from distributed import Client, LocalCluster

    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None)
    client = Client(cluster)
    started = time.perf_counter() - t0
    try:
        exd = ParallelAudit(ExecutorOptions("dask", args.workers, cluster.scheduler_address, args.chunk_size))
        td, _, _ = audit(corpus, tmp, "dask", exd)
    finally:
        client.close()
        cluster.close()
    return {"dask_cluster_start_s": round(started, 2), "audit_dask_s": round(td, 2),
            "audit_dask_rps": round(n / td, 1), "speedup_dask_over_1": round(t1 / td, 2)}


def best_of(rounds: list[dict]) -> dict:
    """Each time's fastest round, and the ratios of those: on a shared machine one round's figures move by a
    quarter or more from run to run, and the fastest is the nearest to what the code costs (as `timeit` takes)."""
    keys = ("bare_parse_s", "audit_1_s", "audit_n_s", "audit_dask_s", "replay_s")
    got = {k: min(r[k] for r in rounds) for k in keys if rounds and all(k in r for r in rounds)}
    if "bare_parse_s" in got:
        bare = got["bare_parse_s"]
        got.update({f"ratio_{k[:-2]}_to_bare": round(got[k] / bare, 2) for k in keys[1:] if k in got})
    if "audit_1_s" in got:
        got.update({f"speedup_{k[6:-2]}_over_1": round(got["audit_1_s"] / got[k], 2)
                    for k in ("audit_n_s", "audit_dask_s") if k in got})
    return got


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", type=Path, default=TAU)
    ap.add_argument("--copies", type=int, default=20)
    ap.add_argument("--distinct", type=int, default=0, metavar="N",
                    help="instead of copies of --corpus: N distinct runs drawn from every development corpus")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--chunk-size", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--no-dask", action="store_true")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    executors.LocalPool = CountingPool  # type: ignore[misc]  (make_pool builds this one)
    report: dict = {"corpus": str(args.corpus), "copies": args.copies, "workers": args.workers,
                    "chunk_size": args.chunk_size, "load_before": os.getloadavg(), "rounds": []}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        corpus = tmp / "corpus.jsonl"
        report["runs"] = make_distinct(corpus, args.distinct) if args.distinct else \
            make_corpus(args.corpus, corpus, args.copies)
        if args.distinct:
            report["corpus"], report["copies"] = "distinct runs of the development corpora", 0
        report["startup"] = startup(tmp)
        for _ in range(args.rounds):
            rnd: dict = {"load": os.getloadavg()[0]}
            bare = bare_parse(corpus)
            t1, n, cpu1 = audit(corpus, tmp, "serial")
            if n != report["runs"]:  # a corpus the audit skips records of measures nothing
                raise SystemExit(f"bench_scale: the audit wrote {n} of {report['runs']} records")
            CountingPool.worker_cpu = 0.0
            ex = ParallelAudit(ExecutorOptions("local", args.workers, None, args.chunk_size))
            tn, _, cpun = audit(corpus, tmp, "pool", ex)
            rnd.update({"bare_parse_s": round(bare, 3), "audit_1_s": round(t1, 2), "audit_n_s": round(tn, 2),
                        "audit_1_rps": round(n / t1, 1), "audit_n_rps": round(n / tn, 1),
                        "ratio_1_to_bare": round(t1 / bare, 1), "ratio_n_to_bare": round(tn / bare, 1),
                        "speedup_n_over_1": round(t1 / tn, 2),
                        "cpu_1_s": round(cpu1, 2), "cpu_n_parent_s": round(cpun, 2),
                        "cpu_n_workers_s": round(CountingPool.worker_cpu, 2)})
            # what the CPU accounting allows on N free cores: the parent and the workers' share of them
            par, wrk = cpun, CountingPool.worker_cpu
            if wrk:
                rnd["speedup_on_free_cores"] = round(cpu1 / max(par, (par + wrk) / args.workers), 2)
            if not args.no_dask:
                rnd.update(dask_round(corpus, tmp, args, n, t1))
            tr = replay(tmp / "serial.jsonl")
            rnd.update({"replay_s": round(tr, 3), "replay_rps": round(n / tr, 1),
                        "ratio_replay_to_bare": round(tr / bare, 2)})
            serial = (tmp / "serial.jsonl").read_bytes()
            rnd["pool_output_identical"] = serial == (tmp / "pool.jsonl").read_bytes()
            if not args.no_dask:
                rnd["dask_output_identical"] = serial == (tmp / "dask.jsonl").read_bytes()
            rnd["load_after"] = os.getloadavg()[0]
            report["rounds"].append(rnd)
            print(json.dumps(rnd), flush=True)
    report["best"] = best_of(report["rounds"])
    report["load_after"] = os.getloadavg()
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
