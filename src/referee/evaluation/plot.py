"""The load vs silent-pass trade-off plot: one point per method and policy, with bootstrap error bars (matplotlib)."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from referee.evaluation.results import EvalReport

MARKERS = {"auditor": "*", "policy": "o", "baseline": "s", "judge": "^", "predictions": "D"}


@dataclass(frozen=True)
class Point:
    """One method on the trade-off plane; None where the metric is undefined (not plotted)."""

    name: str
    kind: str
    load: float | None
    silent: float | None
    load_ci: tuple[float | None, float | None] = (None, None)
    silent_ci: tuple[float | None, float | None] = (None, None)


def tradeoff_points(rep: EvalReport) -> list[Point]:
    """Inspection load and silent-pass rate of every method in the report, e.g.
    `[(p.name, p.load, p.silent) for p in tradeoff_points(rep)]` -> `[("auditor", 0.48, 0.23), ...]`.
    """
    kinds = {m.name: m.kind for m in rep.methods}
    pts = []
    for s in rep.overall:
        ld, sp = s.metrics["inspection_load"], s.metrics["silent_pass_rate"]
        pts.append(Point(s.method, kinds.get(s.method, ""), ld.value, sp.value, (ld.lo, ld.hi), (sp.lo, sp.hi)))
    return pts


def _err(v: float, ci: tuple[float | None, float | None]) -> tuple[float, float]:
    lo, hi = ci
    return (max(0.0, v - lo) if lo is not None else 0.0, max(0.0, hi - v) if hi is not None else 0.0)


def plot_tradeoff(rep: EvalReport, path: Path, *, title: str | None = None) -> list[str]:
    """Draw the trade-off as a PNG at `path` (written atomically); returns names left out as undefined."""
    from referee.errors import require
    from referee.fsutil import atomic_write_bytes

    mpl = require("matplotlib", "plot")
    mpl.use("Agg", force=True)
    import matplotlib.pyplot as plt

    pts = tradeoff_points(rep)
    skipped = [p.name for p in pts if p.load is None or p.silent is None]
    fig, ax = plt.subplots(figsize=(7.5, 5.5), dpi=120)
    try:
        labels: dict[tuple[float, float], list[str]] = {}
        for p in pts:
            if p.load is None or p.silent is None:
                continue
            xe, ye = _err(p.load, p.load_ci), _err(p.silent, p.silent_ci)
            ax.errorbar([p.load], [p.silent], xerr=[[xe[0]], [xe[1]]], yerr=[[ye[0]], [ye[1]]],
                        fmt=MARKERS.get(p.kind, "o"), markersize=11 if p.kind == "auditor" else 7,
                        capsize=3, alpha=0.9, label=f"{p.name} ({p.kind})")
            labels.setdefault((round(p.load, 4), round(p.silent, 4)), []).append(p.name)
        for (x, y), names in labels.items():  # methods on the same point share one label
            ax.annotate(" = ".join(names), (x, y), textcoords="offset points", xytext=(6, 6), fontsize=8)
        ax.set_xlabel("inspection load  (flag + review) / N")
        ax.set_ylabel("silent-pass rate  (auto-passed positives / positives)")
        ax.set_xlim(-0.03, 1.03)
        ax.set_ylim(-0.03, 1.03)
        ax.grid(True, alpha=0.3)
        n = rep.overall[0].counts["n"] if rep.overall else 0
        pos = rep.overall[0].counts["positives"] if rep.overall else 0
        ax.set_title(title or f"Load vs silent pass: {n} records, {pos} positives "
                              f"({int(rep.bootstrap.level * 100)}% bootstrap bars)", fontsize=10)
        if any(p.load is not None and p.silent is not None for p in pts):
            ax.legend(fontsize=7, loc="best")
        if skipped:
            ax.text(0.01, 0.01, "undefined, not drawn: " + ", ".join(skipped), transform=ax.transAxes, fontsize=7)
        buf = io.BytesIO()
        fig.tight_layout()
        fig.savefig(buf, format="png")
    finally:
        plt.close(fig)
    atomic_write_bytes(Path(path), buf.getvalue())
    return skipped
