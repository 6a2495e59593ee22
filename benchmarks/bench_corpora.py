"""The auditor on every development corpus: claim accuracy against the blind labels, F1, blocked recall, load.

Run after every rules change (house rule: a gain on one corpus that costs another more than 0.02 F1
is not kept). Uses the CLI exactly as a user would: `referee audit` with a sniffed format, then
`referee eval --json`. Positives come from the blind claim labels (tests/data/claims), so the
claim reader is measured, not assumed.

    python benchmarks/bench_corpora.py [--policy causal] [--out DIR] [--markdown]
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
sys.path.insert(0, str(REPO / "tests"))
from support.corpora import shared_dir  # noqa: E402

sys.path.insert(0, str(REPO / "benchmarks" / "adapters"))
import who_and_when  # noqa: E402

CLAIMS = REPO / "tests" / "data" / "claims"
REFEREE = [sys.executable, "-m", "referee.cli.main"]


def corpora(work: Path) -> list[tuple[str, Path, str]]:
    """(name, input path, blind-label stem) for each corpus present; who-and-when goes through its adapter."""
    root = shared_dir() / "corpora"
    out = []
    tau = root / "tau-bench-airline" / "gpt-4o-airline.json"
    if tau.exists():
        out.append(("tau-bench", tau, "tau-bench"))
    swe = root / "mini-swe-agent-swebench"
    if swe.exists():
        # gold straight from the harness reports, so any version of the reader is measured the same way
        with open(work / "mini-swe-agent.gold.jsonl", "w") as g:
            for rep in sorted((swe / "reports").glob("*.report.json")):
                body = json.loads(rep.read_text())
                body = body.get(rep.name[:-len(".report.json")], body)
                g.write(json.dumps({"run_id": rep.name[:-len(".report.json")], "completed": bool(body["resolved"])})
                        + "\n")
        out.append(("mini-swe-agent", swe / "trajs", "mini-swe-agent"))
    ww = root / "who-and-when"
    if ww.exists():
        traces, gold = work / "who-and-when.jsonl", work / "who-and-when.gold.jsonl"
        with open(traces, "w") as t, open(gold, "w") as g:
            for trace, row in who_and_when.iter_corpus(ww):
                t.write(json.dumps(trace) + "\n")
                g.write(json.dumps(row) + "\n")
        out.append(("who-and-when", traces, "who-and-when"))
    return out


def run(cmd: list[str]) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(map(str, cmd))}\n{done.stderr[-2000:]}")
    return done


def measure(name: str, src: Path, stem: str, work: Path, policy: str) -> dict:
    out = work / f"{name}.audit.jsonl"
    gold = work / f"{name}.gold.jsonl"
    for p in (out, Path(str(out) + ".cache.sqlite")):
        p.unlink(missing_ok=True)
    t0 = time.perf_counter()
    cmd = REFEREE + ["audit", str(src), "--out", str(out), "--policy", policy, "--no-progress"]
    if name == "tau-bench":
        cmd += ["--gold-out", str(gold)]
    run(cmd)
    secs = time.perf_counter() - t0
    blind = {row["run_id"]: row["claim"] for row in map(json.loads, open(CLAIMS / f"{stem}.blind.jsonl"))}
    recs = [json.loads(line) for line in open(out)]
    acc = sum(blind.get(r["run_id"]) == r["claim"]["label"] for r in recs) / len(recs)
    rows = [json.loads(line) for line in open(gold)]
    labelled = work / f"{name}.gold+claims.jsonl"
    with open(labelled, "w") as fh:
        for row in rows:
            fh.write(json.dumps({"run_id": row["run_id"], "completed": row["completed"],
                                 "claim": blind[row["run_id"]]}) + "\n")
    ev = json.loads(run(REFEREE + ["eval", str(out), "--gold", str(labelled), "--json", "--no-plot",
                                   "--resamples", "0"]).stdout)
    overall = {(o["method"], o["axis"]): o for o in ev["overall"]}

    def m(method: str, key: str):
        o = overall.get((method, "all"))
        v = o["metrics"][key]["value"] if o else None
        return None if v is None else round(v, 3)

    eq = {e["method"]: e for e in ev.get("equal_load", [])}
    a = overall[("auditor", "all")]["counts"]
    success = sum(r["claim"]["label"] == "success" for r in recs)
    return {"corpus": name, "runs": len(recs), "claim_accuracy": round(acc, 3), "positives": a["positives"],
            "flag": a["flag"], "review": a["review"], "pass": a["pass"],
            "f1": m("auditor", "f1"), "precision": m("auditor", "precision"), "recall": m("auditor", "recall"),
            "blocked_recall": m("auditor", "blocked_recall"), "load": m("auditor", "inspection_load"),
            "gate_load": m("claim-gate-only", "inspection_load"), "gate_f1": m("claim-gate-only", "f1"),
            "gate_blocked_recall_at_load": None if "auditor" not in eq else
            round(eq["auditor"]["gate_blocked_recall_at_load"] or 0, 3),
            "success_claims_blocked": round(sum(r["claim"]["label"] == "success" and r["disposition"] != "pass"
                                                for r in recs) / success, 3) if success else None,
            "records_per_s": round(len(recs) / secs, 1)}


COLS = ["corpus", "runs", "claim_accuracy", "positives", "flag", "review", "pass", "precision", "recall", "f1",
        "blocked_recall", "load", "gate_load", "gate_f1", "gate_blocked_recall_at_load", "success_claims_blocked",
        "records_per_s"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", default="causal")
    ap.add_argument("--out", type=Path, default=None, help="keep the audit files here (default: a temp folder)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    work = a.out or Path(tempfile.mkdtemp(prefix="referee-corpora-"))
    work.mkdir(parents=True, exist_ok=True)
    found = corpora(work)
    if not found:
        print("no corpora under", shared_dir() / "corpora", file=sys.stderr)
        return 1
    rows = [measure(n, p, s, work, a.policy) for n, p, s in found]
    if a.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"policy {a.policy}; audit files in {work}")
    print("| " + " | ".join(COLS) + " |")
    print("|" + "---|" * len(COLS))
    for r in rows:
        print("| " + " | ".join("n/a" if r[c] is None else str(r[c]) for c in COLS) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
