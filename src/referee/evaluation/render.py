"""Render evaluation reports as rich tables, Markdown, or JSON; undefined metrics print as "n/a"."""

from __future__ import annotations

from dataclasses import dataclass

from referee.evaluation.equal_load import GATE
from referee.evaluation.metrics import fmt
from referee.evaluation.results import EvalReport, Metric, Scores

AXIS_TITLE = {"task_class": "task class", "group": "group", "split": "split",
              "leave_out_group": "leave one group out (scored on the rest)"}


@dataclass(frozen=True)
class Table:
    """A titled grid of strings, rendered by either back end."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""


def cell_ci(m: Metric, digits: int = 2) -> str:
    """A metric with its interval: "0.75 [0.62, 0.86]", or "n/a"; "(k n/a)" after it when k resamples were
    0/0 and left out of that interval (LEFT_OUT says so under the table).

    >>> cell_ci(Metric(value=0.75, lo=0.6, hi=0.9)), cell_ci(Metric(value=None))
    ('0.75 [0.60, 0.90]', 'n/a')
    >>> cell_ci(Metric(value=1.0, lo=1.0, hi=1.0, undefined_resamples=368))
    '1.00 [1.00, 1.00] (368 n/a)'
    """
    if m.value is None:
        return "n/a"
    if m.lo is None or m.hi is None:
        return fmt(m.value, digits)
    left_out = f" ({m.undefined_resamples} n/a)" if m.undefined_resamples else ""
    return f"{fmt(m.value, digits)} [{fmt(m.lo, digits)}, {fmt(m.hi, digits)}]{left_out}"


LEFT_OUT = "(k n/a): in k resamples the metric was 0/0; they are left out of its interval"


def _left_out(rows: list[Scores], metrics: tuple[str, ...], caption: str = "") -> str:
    """`caption`, with LEFT_OUT after it when a cell of `metrics` in `rows` carries a count (as cell_ci shows)."""
    shown = any(s.metrics[n].value is not None and s.metrics[n].lo is not None and s.metrics[n].undefined_resamples
                for s in rows for n in metrics)
    return "; ".join(c for c in (caption, LEFT_OUT if shown else "") if c)


def fmt_p(p: float | None) -> str:
    """A p-value: three decimals, scientific below 0.001, and a floor where a float underflows.

    >>> fmt_p(None), fmt_p(0.0625), fmt_p(2.8e-73), fmt_p(0.0)
    ('n/a', '0.062', '2.8e-73', '<1e-300')
    """
    if p is None:
        return "n/a"
    if p == 0.0:
        return "<1e-300"
    return f"{p:.2g}" if p < 0.001 else f"{p:.3f}"


def _kinds(rep: EvalReport | None) -> dict[str, str]:
    return {m.name: m.kind for m in rep.methods} if rep is not None else {}


def _rows(rep: EvalReport | None, rows: list[Scores] | None) -> list[Scores]:
    """The rows a table shows: `rows` when given, else the report's overall scores."""
    if rows is not None:
        return rows
    if rep is None:
        raise ValueError("a table needs a report or its rows")
    return rep.overall


def detection_table(rep: EvalReport | None, rows: list[Scores] | None = None, title: str = "") -> Table:
    """TP/FP/FN, flags, precision, recall and F1 with intervals, one row per method (kind shown with a report)."""
    rows = _rows(rep, rows)
    kinds = _kinds(rep)
    head = ("method", "kind") if kinds else ("method",)
    return Table(title or "Detection view (only flag is a positive prediction)",
                 head + ("TP", "FP", "FN", "flag", "precision", "recall", "F1"),
                 tuple(((s.method, kinds.get(s.method, "")) if kinds else (s.method,))
                       + (str(s.counts["tp"]), str(s.counts["fp"]), str(s.counts["fn"]), str(s.counts["flag"]),
                          cell_ci(s.metrics["precision"]), cell_ci(s.metrics["recall"]), cell_ci(s.metrics["f1"]))
                       for s in rows),
                 caption=_left_out(rows, ("precision", "recall", "f1")))


def gating_table(rep: EvalReport | None, rows: list[Scores] | None = None, title: str = "") -> Table:
    """Flags, reviews, blocked positives, blocked recall, silent-pass rate, load and yield, one row per method."""
    rows = _rows(rep, rows)
    return Table(title or "Gating view (flag and review both block automatic pass)",
                 ("method", "flag", "review", "blocked", "blocked recall", "silent-pass", "load", "yield"),
                 tuple((s.method, str(s.counts["flag"]), str(s.counts["review"]),
                        f"{s.counts['blocked_positives']}/{s.counts['positives']}",
                        cell_ci(s.metrics["blocked_recall"]), cell_ci(s.metrics["silent_pass_rate"]),
                        cell_ci(s.metrics["inspection_load"]), cell_ci(s.metrics["inspection_yield"]))
                       for s in rows),
                 caption=_left_out(rows, ("blocked_recall", "silent_pass_rate", "inspection_load",
                                          "inspection_yield")))


def equal_load_table(rep: EvalReport) -> Table | None:
    """Each method's load and blocked recall beside claim-gate-only's expected blocked recall at that load."""
    if not rep.equal_load:
        return None
    kinds = _kinds(rep)
    g = rep.overall_of(GATE)
    s, r = g.counts["flag"] + g.counts["review"], g.metrics["blocked_recall"].value
    how = (f"At load L it inspects a random share of the {s} success claims it blocks: expected blocked recall "
           f"min(1, L x {g.counts['n']} / {s}) x {fmt(r)}. " if s and r is not None
           else "With no success claim or no positive the comparison is n/a. ")
    return Table("At equal load with claim-gate-only",
                 ("method", "kind", "load", "blocked recall", "gate blocked recall at that load", "difference",
                  "yield", "gate yield"),
                 tuple((e.method, kinds.get(e.method, ""), fmt(e.load), fmt(e.blocked_recall),
                        fmt(e.gate_blocked_recall_at_load),
                        cell_ci(Metric(value=e.difference, lo=e.difference_lo, hi=e.difference_hi)),
                        fmt(e.yield_), fmt(e.gate_yield)) for e in rep.equal_load),
                 caption=f"{GATE} alone: load {fmt(g.metrics['inspection_load'].value)}, blocked recall {fmt(r)}. "
                         + how + "difference = blocked recall - gate blocked recall at that load (> 0: the method "
                         "beats the gate at equal load; interval: both resampled jointly over the same runs)")


def natural_key(text: str) -> tuple:
    """Sort "g2" before "g10".

    >>> sorted(["10", "9", "a"], key=natural_key)
    ['9', '10', 'a']
    """
    import re

    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", text) if p)


def breakdown_tables(rep: EvalReport, method: str, max_rows: int = 20) -> list[Table]:
    """One table per axis for one method: counts, F1 and blocked recall per slice.

    With more than `max_rows` slices (0: no limit) the largest are shown and the caption says how many
    more the JSON report holds.
    """
    out = []
    for axis, title in AXIS_TITLE.items():
        rows = sorted((s for s in rep.breakdowns if s.method == method and s.axis == axis),
                      key=lambda s: natural_key(s.slice))
        if not rows:
            continue
        caption = ""
        if max_rows and len(rows) > max_rows:
            keep = sorted(rows, key=lambda s: -s.counts["n"])[:max_rows] if axis != "leave_out_group" else \
                sorted(rows, key=lambda s: -(rep.overall_of(method).counts["n"] - s.counts["n"]))[:max_rows]
            caption = f"{len(rows) - max_rows} more slices not shown (largest first); all are in --json"
            rows = sorted(keep, key=lambda s: natural_key(s.slice))
        out.append(Table(f"{method} by {title}",
                         (axis.replace("leave_out_group", "left out"), "N", "positives", "TP/FP/FN", "precision",
                          "recall", "F1", "blocked recall", "inspection load"),
                         tuple((s.slice, str(s.counts["n"]), str(s.counts["positives"]),
                                f"{s.counts['tp']}/{s.counts['fp']}/{s.counts['fn']}",
                                cell_ci(s.metrics["precision"]), cell_ci(s.metrics["recall"]),
                                cell_ci(s.metrics["f1"]), cell_ci(s.metrics["blocked_recall"]),
                                cell_ci(s.metrics["inspection_load"])) for s in rows),
                         _left_out(rows, ("precision", "recall", "f1", "blocked_recall", "inspection_load"), caption)))
    return out


def paired_table(rep: EvalReport) -> Table | None:
    if not rep.paired:
        return None
    return Table(f"Paired flags against {rep.primary} (same records)", columns=
                 ("other method", f"+pos (only {rep.primary})", "+pos (only other)", f"+neg (only {rep.primary})",
                  "+neg (only other)", "sign test p"),
                 caption="+pos: positives only one of the two flags; +neg: false positives only one adds; "
                         "exact two-sided sign test over the discordant positives",
                 rows=tuple((p.other, str(p.positives_primary_only), str(p.positives_other_only),
                        str(p.negatives_primary_only), str(p.negatives_other_only), fmt_p(p.p_positives))
                       for p in rep.paired))


def header_lines(rep: EvalReport) -> list[str]:
    c = rep.coverage
    first = rep.overall[0].counts if rep.overall else {"n": 0, "positives": 0}
    b = rep.bootstrap
    lines = [f"audit: {rep.audit}   gold: {rep.gold}",
             f"scored {c.evaluated} of {c.audit_records} audit records; {first['positives']} positives "
             "(claim success, gold not completed)",
             (f"intervals: {int(b.level * 100)}% percentile bootstrap, {b.resamples} resamples, seed {b.seed} "
              f"({b.engine})" if b.resamples else "intervals: none (--resamples 0)")]
    if rep.misses:
        lines.append(f"positives {rep.primary} did not flag: "
                     + ", ".join(f"{k} {v}" for k, v in rep.misses.items())
                     + " (claim-side: the claim reading is not success; trace-side: the trace state is completed;"
                       " uncertain: unknown state, sent to review"
                     + ("; other: state not_completed, yet the policy did not flag it" if "other" in rep.misses
                        else "") + ")")
    rc = rep.risk_curve
    if rc is not None:
        def ci(lo: float | None, hi: float | None) -> str:
            return f" [{fmt(lo)}, {fmt(hi)}]" if lo is not None else ""

        lines.append(f"risk ordering vs {GATE} (flags, then the riskiest first): at load {fmt(rc.load)} blocked "
                     f"recall difference {fmt(rc.difference)}{ci(rc.difference_lo, rc.difference_hi)}; area between "
                     f"the curves {fmt(rc.area)}{ci(rc.area_lo, rc.area_hi)}")
    return lines + [f"note: {n}" for n in rep.notes]


def report_tables(rep: EvalReport, breakdown_for: list[str] | None = None, max_rows: int = 20) -> list[Table]:
    """The tables of a full report, in print order."""
    tables = [detection_table(rep), gating_table(rep)]
    et = equal_load_table(rep)
    if et:
        tables.append(et)
    pt = paired_table(rep)
    if pt:
        tables.append(pt)
    for m in breakdown_for if breakdown_for is not None else [rep.primary]:
        tables.extend(breakdown_tables(rep, m, max_rows))
    return tables


def to_markdown(tables: list[Table], header: list[str] | None = None) -> str:
    """Pipe tables, one per section, with `|` in cells escaped.

    >>> print(to_markdown([Table("T", ("a", "b"), (("1", "n/a"),))]))
    ### T
    <BLANKLINE>
    | a | b |
    | --- | --- |
    | 1 | n/a |
    <BLANKLINE>
    """
    parts: list[str] = []
    for line in header or []:
        parts.append(f"- {line}")
    if header:
        parts.append("")
    for t in tables:
        parts.append(f"### {t.title}")
        parts.append("")
        parts.append("| " + " | ".join(t.columns) + " |")
        parts.append("| " + " | ".join("---" for _ in t.columns) + " |")
        for r in t.rows:
            parts.append("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
        if t.caption:
            parts.append("")
            parts.append(t.caption)
        parts.append("")
    return "\n".join(parts)


def print_rich(tables: list[Table], header: list[str] | None = None, console=None) -> None:
    """Print tables with rich (wide terminals get one line per method)."""
    from rich.console import Console
    from rich.table import Table as RichTable

    if console is None:
        console = Console()
        if not console.is_terminal:  # piped or redirected: do not squeeze the tables into 80 columns
            console = Console(width=200)
    for line in header or []:
        console.print(line, markup=False, highlight=False)
    for t in tables:
        rt = RichTable(title=t.title, caption=t.caption or None, title_justify="left", show_lines=False)
        for i, col in enumerate(t.columns):
            rt.add_column(col, justify="left" if i == 0 else "right", no_wrap=i == 0, overflow="fold")
        for r in t.rows:
            rt.add_row(*r)
        console.print(rt)


def render(rep: EvalReport, fmt_: str = "rich", breakdown_for: list[str] | None = None, console=None,
           max_rows: int = 20) -> str | None:
    """Render a report as "json" or "markdown" (returned) or print it with rich (returns None)."""
    if fmt_ == "json":
        return rep.model_dump_json(indent=2)
    tables = report_tables(rep, breakdown_for, max_rows)
    if fmt_ == "markdown":
        return to_markdown(tables, header_lines(rep))
    print_rich(tables, header_lines(rep), console=console)
    return None
