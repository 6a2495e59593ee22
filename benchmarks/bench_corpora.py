"""The auditor on every development corpus: claim accuracy against the blind labels, F1, blocked recall, load.

Run after every rules change (house rule: a gain on one corpus that costs another more than 0.02 F1
is not kept). Uses the CLI exactly as a user would: `referee audit` with a sniffed format, then
`referee eval --json`. Positives come from the blind claim labels (tests/data/claims), so the
claim reader is measured, not assumed.

    python benchmarks/bench_corpora.py [--policy causal] [--out DIR] [--loco] [--resamples 1000]

Per corpus it prints the auditor's equal-load difference against claim-gate-only with its 95% interval
(`eq_difference`), flag precision (`precision`), and the risk ordering's difference at the auditor's load
with the shipped risk weights (`risk_difference`). `--loco` adds the leave-one-corpus-out table of risk
(tools/fit_risk.py): each corpus scored with weights fitted on the other corpora only.
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


def measure(name: str, src: Path, stem: str, work: Path, policy: str, resamples: int = 1000) -> dict:
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
                                   "--resamples", str(resamples)]).stdout)
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
            "eq_difference": ival(eq.get("auditor", {}), "difference"),
            "risk_difference": ival(ev.get("risk_curve") or {}, "difference"),
            "risk_area": ival(ev.get("risk_curve") or {}, "area"),
            "success_claims_blocked": round(sum(r["claim"]["label"] == "success" and r["disposition"] != "pass"
                                                for r in recs) / success, 3) if success else None,
            "records_per_s": round(len(recs) / secs, 1)}


def ival(row: dict, key: str) -> str | None:
    """`value [lo, hi]` of one statistic of an eval row (its interval when eval computed one)."""
    v = row.get(key)
    if v is None:
        return None
    lo, hi = row.get(f"{key}_lo"), row.get(f"{key}_hi")
    return f"{v:.3f}" + (f" [{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None else "")


COLS = ["corpus", "runs", "claim_accuracy", "positives", "flag", "review", "pass", "precision", "recall", "f1",
        "blocked_recall", "load", "gate_load", "gate_f1", "gate_blocked_recall_at_load", "eq_difference",
        "risk_difference", "risk_area", "success_claims_blocked", "records_per_s"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", default="causal")
    ap.add_argument("--out", type=Path, default=None, help="keep the audit files here (default: a temp folder)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of eval (0: no intervals)")
    ap.add_argument("--loco", action="store_true", help="also the leave-one-corpus-out table of risk")
    a = ap.parse_args(argv)
    work = a.out or Path(tempfile.mkdtemp(prefix="referee-corpora-"))
    work.mkdir(parents=True, exist_ok=True)
    found = corpora(work)
    if not found:
        print("no corpora under", shared_dir() / "corpora", file=sys.stderr)
        return 1
    rows = [measure(n, p, s, work, a.policy, a.resamples) for n, p, s in found]
    loco = loco_rows(work, [n for n, _, _ in found], a.resamples) if a.loco and len(found) > 1 else []
    if a.json:
        print(json.dumps({"corpora": rows, "loco": loco} if a.loco else rows, indent=1))
        return 0
    print(f"policy {a.policy}; audit files in {work}")
    print("| " + " | ".join(COLS) + " |")
    print("|" + "---|" * len(COLS))
    for r in rows:
        print("| " + " | ".join("n/a" if r[c] is None else str(r[c]) for c in COLS) + " |")
    if loco:
        print("\nleave-one-corpus-out risk (weights fitted on the other corpora only; tools/fit_risk.py):")
        print("| corpus | fitted on | load | risk blocked recall | gate at load | difference [95%] | area [95%] |")
        print("|---|---|---|---|---|---|---|")
        for r in loco:
            print(f"| {r['corpus']} | {' + '.join(r['fitted_on'])} | {r['load']} | {r['risk_blocked_recall']} | "
                  f"{r['gate_blocked_recall']} | {r['difference']} {r['difference_ci']} | {r['area']} "
                  f"{r['area_ci']} |")
    return 0


def loco_rows(work: Path, names: list[str], resamples: int) -> list[dict]:
    """The leave-one-corpus-out rows of tools/fit_risk.py over the audit files just written."""
    sys.path.insert(0, str(REPO / "tools"))
    import fit_risk

    from referee.evaluation.bootstrap import BootstrapSpec

    corpora = [fit_risk.load_corpus(work, n) for n in names]
    return fit_risk.loco(corpora, 0.01, BootstrapSpec(resamples=resamples, seed=0) if resamples > 0 else None)


if __name__ == "__main__":
    raise SystemExit(main())
