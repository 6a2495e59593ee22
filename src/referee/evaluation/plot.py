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


def coinciding(points: list[Point]) -> list[list[Point]]:
    """Methods drawn at the same place (load and silent-pass rate equal to 4 decimals) grouped as one point.

    >>> a, b, c = Point("a", "policy", 0.5, 0.2), Point("b", "policy", 0.5, 0.2), Point("c", "baseline", 1.0, 0.0)
    >>> [[p.name for p in g] for g in coinciding([a, b, c])]
    [['a', 'b'], ['c']]
    """
    groups: dict[tuple[float, float], list[Point]] = {}
    for p in points:
        if p.load is not None and p.silent is not None:
            groups.setdefault((round(p.load, 4), round(p.silent, 4)), []).append(p)
    return list(groups.values())


KIND_NAMES = {"auditor": "auditor", "policy": "policy", "baseline": "baseline", "judge": "judge",
              "predictions": "predictions"}
_MARKER_GLYPHS = {"*": "\u2605", "o": "\u25cf", "s": "\u25a0", "^": "\u25b2", "D": "\u25c6"}


def legend_label(group: list[Point], width: int = 38) -> str:
    """The legend entry of methods drawn at one place: each name once (the marker says the kind), wrapped.

    >>> legend_label([Point("auditor", "auditor", .3, .5), Point("policy:causal", "policy", .3, .5)])
    'auditor = policy:causal'
    >>> print(legend_label([Point(n, "policy", .3, .5) for n in ("policy:causal", "policy:unanimous", "policy:strict")],
    ...                    width=30))
    policy:causal =
      policy:unanimous =
      policy:strict
    """
    names = list(dict.fromkeys(p.name for p in group))
    lines, line = [], ""
    for i, name in enumerate(names):
        part = name + (" =" if i < len(names) - 1 else "")
        if line and len(line) + 1 + len(part) > width:
            lines.append(line)
            line = "  " + part
        else:
            line = f"{line} {part}" if line else part
    lines.append(line)
    return "\n".join(lines)


def _err(v: float, ci: tuple[float | None, float | None]) -> tuple[float, float]:
    lo, hi = ci
    return (max(0.0, v - lo) if lo is not None else 0.0, max(0.0, hi - v) if hi is not None else 0.0)


PLOT_FORMATS = ("png", "pdf", "svg")  # what matplotlib writes without another package


def plot_tradeoff(rep: EvalReport, path: Path, *, title: str | None = None) -> list[str]:
    """Draw the trade-off at `path` (written atomically), as PNG, PDF or SVG by its suffix; returns names left out
    as undefined (`draw_tradeoff` makes the figure)."""
    from referee.core.fsutil import atomic_write_bytes
    from referee.errors import UsageError

    fmt = Path(path).suffix.lower().lstrip(".") or "png"
    if fmt not in PLOT_FORMATS:
        raise UsageError(f"--plot {path}: a plot is written as {', '.join('.' + f for f in PLOT_FORMATS)}",
                         fix="name the file .png, .pdf or .svg")
    fig, skipped = draw_tradeoff(rep, title=title)
    import matplotlib.pyplot as plt

    try:
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt)
    finally:
        plt.close(fig)
    atomic_write_bytes(Path(path), buf.getvalue())
    return skipped


def risk_plot_path(path: Path) -> Path:
    """Where the risk curves go, beside the trade-off plot.

    >>> risk_plot_path(Path("a/x.tradeoff.png")).name
    'x.tradeoff.risk.png'
    """
    path = Path(path)
    return path.with_name(path.stem + ".risk" + path.suffix)


def plot_risk_curves(rep: EvalReport, path: Path) -> bool:
    """Draw blocked recall against load for the risk ordering and the gate on one plot at `path` (False: the report
    has no risk curve, nothing written)."""
    from referee.core.fsutil import atomic_write_bytes
    from referee.errors import require

    rc = rep.risk_curve
    if rc is None or not rc.loads:
        return False
    mpl = require("matplotlib", "plot")
    mpl.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5), dpi=120, layout="constrained")
    try:
        ax.plot(rc.loads, rc.risk_blocked_recall, label="auditor: flags, then the riskiest first",
                drawstyle="steps-post")
        ax.plot(rc.loads, rc.gate_blocked_recall, label="claim-gate-only (random share of success claims)",
                linestyle="--")
        ax.axvline(rc.load, color="grey", linewidth=0.8, label=f"the auditor's load {rc.load:.2f}")
        ax.set_xlabel("inspection load  (inspected / N)")
        ax.set_ylabel("blocked recall")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.grid(True, alpha=0.3)
        area = "n/a" if rc.area is None else f"{rc.area:.3f}"
        diff = "n/a" if rc.difference is None else f"{rc.difference:+.3f}"
        ax.set_title(f"Blocked recall against load: area between {area}, difference at load {diff}", fontsize=10)
        ax.legend(loc="lower right", fontsize=8)
        buf = io.BytesIO()
        fig.savefig(buf, format=Path(path).suffix.lower().lstrip(".") or "png")
    finally:
        plt.close(fig)
    atomic_write_bytes(Path(path), buf.getvalue())
    return True


def draw_tradeoff(rep: EvalReport, *, title: str | None = None):  # -> (matplotlib Figure, names not drawn)
    """The trade-off figure (the caller closes it) and the names left out as undefined.

    Names go in a legend below the axes, never on the plane, so no two labels overlap and the plane keeps the
    figure's width; methods that coincide are one point whose legend entry names each of them once. The title is
    wrapped to the figure's width, and the layout makes room for title and legend (nothing is clipped).
    """
    import textwrap

    from referee.errors import require

    mpl = require("matplotlib", "plot")
    mpl.use("Agg", force=True)
    import matplotlib.pyplot as plt

    pts = tradeoff_points(rep)
    skipped = [p.name for p in pts if p.load is None or p.silent is None]
    groups = coinciding(pts)
    ncol = 1 if len(groups) <= 2 else 2 if len(groups) <= 6 else 3
    fig, ax = plt.subplots(figsize=(8, 6.5 + 0.25 * max(0, len(groups) - 6)), dpi=120, layout="constrained")
    colors = plt.get_cmap("tab10" if len(groups) <= 10 else "tab20")
    for i, g in enumerate(groups):
        p = next((q for q in g if q.kind == "auditor"), g[0])  # the auditor's marker wins a shared point
        assert p.load is not None and p.silent is not None
        xe, ye = _err(p.load, p.load_ci), _err(p.silent, p.silent_ci)
        ax.errorbar([p.load], [p.silent], xerr=[[xe[0]], [xe[1]]], yerr=[[ye[0]], [ye[1]]],
                    fmt=MARKERS.get(p.kind, "o"), markersize=11 if p.kind == "auditor" else 7,
                    color=colors(i % colors.N), capsize=3, alpha=0.9, label=legend_label(g))
    ax.set_xlabel("inspection load  (flag + review) / N")
    ax.set_ylabel("silent-pass rate  (auto-passed positives / positives)")
    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(-0.03, 1.03)
    ax.grid(True, alpha=0.3)
    n = rep.overall[0].counts["n"] if rep.overall else 0
    pos = rep.overall[0].counts["positives"] if rep.overall else 0
    bars = f"{int(rep.bootstrap.level * 100)}% bootstrap bars" if rep.bootstrap.resamples else "no intervals"
    ax.set_title("\n".join(textwrap.wrap(title or f"Load vs silent pass: {n} records, {pos} positives ({bars})", 70)),
                 fontsize=10)
    if groups:
        kinds = [k for k in MARKERS if any(q.kind == k for g in groups for q in g)]
        fig.legend(loc="outside lower center", ncol=ncol, fontsize=7, frameon=False,
                   title="  ".join(f"{_MARKER_GLYPHS.get(MARKERS[k], '')} {KIND_NAMES[k]}" for k in kinds),
                   title_fontsize=7)
    if skipped:
        ax.text(0.01, 0.01, "undefined, not drawn: " + ", ".join(skipped), transform=ax.transAxes, fontsize=7)
    return fig, skipped
