"""Fit the risk weights (src/referee/audit/decide/risk.yaml) on the development corpora, leave-one-corpus-out.

Reads what `benchmarks/bench_corpora.py --out DIR` leaves in DIR: <name>.audit.jsonl (records of version 6,
with trace signals) and <name>.gold+claims.jsonl (gold completion and the blind claim label). The target is
the evaluation's positive: a success claim whose work was not done. The model is a logistic regression with
an L2 penalty, fitted by gradient descent in numpy; features that raise risk (risk.RAISING) are kept at
weight >= 0. Each corpus gets an intercept of its own while the weights are fitted (risk orders the runs of
one file, and corpora differ in how often a success claim is wrong: with one intercept, a feature common in
a corpus of few positives learns that corpus's base rate instead of what it says within a corpus); the
shipped intercept is then fitted on all runs with the weights held. Leave-one-corpus-out: each corpus is
scored with weights fitted on the others only, and never with weights that saw it; the shipped file
(--write) is fitted on every corpus given.

    python tools/fit_risk.py DIR [--write src/referee/audit/decide/risk.yaml] [--l2 0.01] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
from referee.audit.decide.risk import FEATURES, RAISING, RiskModel, record_features, score  # noqa: E402
from referee.audit.run.auditfile import iter_records  # noqa: E402
from referee.evaluation.bootstrap import BootstrapSpec  # noqa: E402
from referee.evaluation.metrics import is_positive  # noqa: E402
from referee.evaluation.riskcurve import RiskItem, compare_at  # noqa: E402

NAMES = list(FEATURES)


@dataclass(frozen=True)
class Corpus:
    """One development corpus: feature rows, positives, and what the auditor and the gate did on each run."""

    name: str
    x: np.ndarray
    y: np.ndarray
    gate_blocks: list[bool]
    dispositions: list[str]


def load_corpus(folder: Path, name: str) -> Corpus:
    """The records of `name` in `folder` that have a gold label, as a feature matrix and positives."""
    gold = {r["run_id"]: r for r in map(json.loads, open(folder / f"{name}.gold+claims.jsonl"))}
    rows, ys, gates, disps = [], [], [], []
    for _, rec in iter_records(folder / f"{name}.audit.jsonl"):
        g = gold.get(rec.run_id)
        if g is None:
            continue
        f = record_features(rec)
        rows.append([f[n] for n in NAMES])
        ys.append(is_positive(g.get("claim") or rec.claim.label, bool(g["completed"])))
        gates.append(rec.claim.label == "success")
        disps.append(rec.disposition)
    return Corpus(name, np.array(rows, dtype=float).reshape(-1, len(NAMES)), np.array(ys, dtype=float), gates, disps)


def fit(x: np.ndarray, y: np.ndarray, l2: float = 0.01, steps: int = 4000, rate: float = 1.0,
        groups: np.ndarray | None = None) -> tuple[float, list]:
    """(intercept, weights) of an L2-penalised logistic regression; raising features projected to >= 0.

    `groups` (a corpus index per row): each group gets its own intercept while the weights are fitted, and the
    intercept returned is then fitted on every row with those weights held.

    >>> x = np.array([[0.0], [0.0], [1.0], [1.0]]); y = np.array([0.0, 0.0, 1.0, 0.0])
    >>> b, w = fit(x, y, l2=0.0, steps=20000); round(b, 1) < -3 and w[0] > 3
    True
    >>> x = np.array([[1.0], [1.0], [0.0], [0.0]] * 2 + [[0.0]] * 8); y = np.array([1.0, 0, 0, 0] * 2 + [1.0] * 8)
    >>> g = np.array([0] * 8 + [1] * 8)  # within group 0 the feature marks the positives; group 1 is all positive
    >>> fit(x, y, l2=0.0)[1][0] < 0 < fit(x, y, l2=0.0, groups=g)[1][0]
    True
    """
    n, d = x.shape
    gi = np.zeros(n, int) if groups is None else np.unique(np.asarray(groups), return_inverse=True)[1]
    k = int(gi.max()) + 1 if n else 1
    w, b = np.zeros(d), np.zeros(k)
    keep = np.array([NAMES[i] in RAISING for i in range(d)]) if d == len(NAMES) else np.zeros(d, bool)
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(x @ w + b[gi])))
        gw = x.T @ (p - y) / n + l2 * w
        gb = np.bincount(gi, weights=p - y, minlength=k) / np.maximum(np.bincount(gi, minlength=k), 1)
        w, b = w - rate * gw, b - rate * gb
        w[keep] = np.maximum(w[keep], 0.0)
    if k == 1:
        return float(b[0]), [float(v) for v in w]
    b0, z = float(np.average(b, weights=np.bincount(gi, minlength=k))), x @ w
    for _ in range(steps):
        b0 -= rate * float(np.mean(1 / (1 + np.exp(-(z + b0))) - y))
    return b0, [float(v) for v in w]


def stack(corpora: list[Corpus]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows, positives and corpus index of every run of `corpora`."""
    return (np.vstack([c.x for c in corpora]), np.concatenate([c.y for c in corpora]),
            np.concatenate([np.full(len(c.y), i) for i, c in enumerate(corpora)]))


def model_of(b: float, w: list) -> RiskModel:
    return RiskModel(1, round(b, 4), {n: round(v, 4) for n, v in zip(NAMES, w)}, "fit")


def items(c: Corpus, m: RiskModel) -> list[RiskItem]:
    return [RiskItem(bool(y), g, score(dict(zip(NAMES, row)), m), d)
            for row, y, g, d in zip(c.x, c.y, c.gate_blocks, c.dispositions)]


def loco(corpora: list[Corpus], l2: float, spec: BootstrapSpec | None) -> list[dict]:
    """Each corpus scored with weights fitted on the others only: risk-ordered blocked recall at the auditor's
    load against the gate's at that load, the difference with its interval, and the area between the curves."""
    out = []
    for held in corpora:
        train = [c for c in corpora if c.name != held.name]
        assert held.name not in {c.name for c in train}
        x, y, g = stack(train)
        b, w = fit(x, y, l2, groups=g)
        its = items(held, model_of(b, w))
        load = sum(d != "pass" for d in held.dispositions) / len(held.dispositions)
        cmp_ = compare_at(its, load, spec)
        k = int(load * len(its) + 1e-9)
        out.append({"corpus": held.name, "fitted_on": [c.name for c in train], "runs": len(its),
                    "positives": int(held.y.sum()), "load": round(load, 3),
                    "risk_blocked_recall": round(cmp_.risk_recall[k], 3) if cmp_.risk_recall else None,
                    "gate_blocked_recall": round(cmp_.gate_recall[k], 3) if cmp_.gate_recall else None,
                    "difference": None if cmp_.difference is None else round(cmp_.difference, 3),
                    "difference_ci": [None if v is None else round(v, 3) for v in (cmp_.difference_ci.lo,
                                                                                  cmp_.difference_ci.hi)],
                    "area": None if cmp_.area is None else round(cmp_.area, 3),
                    "area_ci": [None if v is None else round(v, 3) for v in (cmp_.area_ci.lo, cmp_.area_ci.hi)]})
    return out


def risk_yaml(b: float, w: list, fitted_on: list[str], l2: float) -> str:
    """The risk file's text for fitted weights."""
    lines = ["# The auditor's risk model (audit/decide/risk.py): risk = 1 / (1 + exp(-(intercept + sum weight *",
             "# feature))). Every feature is in [0, 1] and general: none names a tool, site or entity. Features that",
             "# raise risk (risk.RAISING) never get a negative weight. Written by tools/fit_risk.py; every record",
             "# carries this file's SHA-256.",
             "risk_version: 1",
             f"fitted_on: [{', '.join(fitted_on)}]",
             f"note: L2 logistic regression (l2 {l2}) fitted on all of fitted_on, weights with an intercept per "
             "corpus, then one intercept; leave-one-corpus-out scores are in docs/evaluation.md",
             f"intercept: {round(b, 4)}",
             "features:"]
    for n, v in zip(NAMES, w):
        lines.append(f"- name: {n}\n  meaning: {json.dumps(FEATURES[n])}\n  weight: {round(v, 4)}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--corpora", nargs="*", default=None, help="names (default: every <name>.gold+claims.jsonl)")
    ap.add_argument("--l2", type=float, default=0.01)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--write", type=Path, default=None, help="write the risk file fitted on every corpus here")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    names = a.corpora or sorted(p.name[:-len(".gold+claims.jsonl")] for p in a.folder.glob("*.gold+claims.jsonl"))
    corpora = [load_corpus(a.folder, n) for n in names]
    spec = BootstrapSpec(resamples=a.resamples, seed=0) if a.resamples > 0 else None
    rows = loco(corpora, a.l2, spec) if len(corpora) > 1 else []
    x, y, g = stack(corpora)
    b, w = fit(x, y, a.l2, groups=g)
    if a.write:
        a.write.write_text(risk_yaml(b, w, names, a.l2))
    if a.json:
        print(json.dumps({"loco": rows, "intercept": b, "weights": dict(zip(NAMES, w))}, indent=1))
        return 0
    print("| corpus | fitted on | runs | positives | load | risk blocked recall | gate at load | difference [95%] "
          "| area between curves [95%] |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['corpus']} | {' + '.join(r['fitted_on'])} | {r['runs']} | {r['positives']} | {r['load']} | "
              f"{r['risk_blocked_recall']} | {r['gate_blocked_recall']} | {r['difference']} {r['difference_ci']} | "
              f"{r['area']} {r['area_ci']} |")
    print(f"\nfitted on {', '.join(names)}: intercept {b:.3f}; " + ", ".join(f"{n} {v:.3f}" for n, v in zip(NAMES, w)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
