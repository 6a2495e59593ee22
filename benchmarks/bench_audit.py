"""Auditor benchmarks: rules audit records/s on tau-bench, replay records/s, llm concurrency speed-up
(loopback, 200 ms per call).

Run: python benchmarks/bench_audit.py [--corpus PATH] [--llm-traces 40] [--latency 0.2] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.support.llm_stub
sys.path.insert(0, str(ROOT / "src"))

from referee.audit.claim.reader import RulesClaimReader  # noqa: E402
from referee.audit.decide.policyfile import load_policy  # noqa: E402
from referee.audit.extract.llm import LLMExtractor  # noqa: E402
from referee.audit.extract.rules import RulesExtractor  # noqa: E402
from referee.audit.present.replay import replay_file  # noqa: E402
from referee.audit.run.cache import EvidenceCache  # noqa: E402
from referee.audit.run.pipeline import Auditor, audit_files, iter_items  # noqa: E402
from referee.core.llm import LLMClient, LLMConfig  # noqa: E402
from tests.support.llm_stub import LLMStub  # noqa: E402

SHARED = Path(os.environ.get("REFEREE_SHARED") or Path(__file__).resolve().parents[2] / "shared")
TAU = SHARED / "corpora" / "tau-bench-airline" / "gpt-4o-airline.json"
GOOD = {f: {"value": "yes", "support": [0]} for f in ("action", "target_id", "transition", "committed",
                                                      "final_supports_goal")}


def bench_rules(corpus: Path, tmp: Path, repeat: int) -> tuple[dict, Path]:
    rates = []
    out = tmp / "rules.jsonl"
    for i in range(repeat):
        out = tmp / f"rules{i}.jsonl"
        a = Auditor(load_policy("causal"), RulesExtractor(), RulesClaimReader())  # no cache: measure the work
        t0 = time.perf_counter()
        stats = audit_files([corpus], a, out)
        rates.append(stats.written / (time.perf_counter() - t0))
    return {"records": stats.written, "records_per_s_best": max(rates),
            "records_per_s_median": sorted(rates)[len(rates) // 2]}, out


def bench_replay(audit_jsonl: Path, repeat: int) -> dict:
    lp = load_policy("final-state")
    rates = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        n = sum(1 for _ in replay_file(audit_jsonl, lp))
        rates.append(n / (time.perf_counter() - t0))
    return {"records": n, "records_per_s_best": max(rates)}


def bench_llm(corpus: Path, tmp: Path, n_traces: int, latency: float, concurrency: int) -> dict:
    traces = tmp / "llm_traces.jsonl"
    with open(traces, "w") as fh:
        for k, item in enumerate(iter_items([corpus], None)):
            if k >= n_traces:
                break
            fh.write(item.trace.model_dump_json() + "\n")
    result = {"traces": n_traces, "latency_s": latency, "runs_per_trace": 1}
    with LLMStub(default=GOOD, latency_s=latency) as stub:
        for label, conc in (("serial", 1), ("concurrent", concurrency)):
            client = LLMClient(LLMConfig(base_url=stub.url, model="stub", concurrency=conc))
            cache = EvidenceCache(tmp / f"{label}.sqlite")  # fresh cache: every call reaches the server
            a = Auditor(load_policy("causal"), LLMExtractor(client), RulesClaimReader(), samples=1, cache=cache)
            stub.reset_counts()
            t0 = time.perf_counter()
            audit_files([traces], a, tmp / f"{label}.jsonl", concurrency=conc)
            dt = time.perf_counter() - t0
            result[label] = {"concurrency": conc, "seconds": round(dt, 3), "calls": stub.calls,
                             "records_per_s": round(n_traces / dt, 2)}
            client.close()
            cache.close()
    result["speedup"] = round(result["serial"]["seconds"] / result["concurrent"]["seconds"], 2)
    return result


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", type=Path, default=TAU)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--llm-traces", type=int, default=40)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        rules, out = bench_rules(args.corpus, tmp, args.repeat)
        report = {"rules_audit": rules, "replay": bench_replay(out, args.repeat),
                  "llm_concurrency": bench_llm(args.corpus, tmp, args.llm_traces, args.latency, args.concurrency)}
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
