"""A plan's history as console lines (`referee history`), as Markdown for a CI job page, and the one line
`referee run` ends with against the previous complete run.

Console lines are plain and never wrapped (a CI log is read by people and parsers alike); what an agent
could have put in a step id passes through `safetext.for_console`, in Markdown through `for_markdown`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from referee.core.safetext import for_console as con
from referee.core.safetext import for_markdown as md
from referee.report.history_model import History
from referee.report.markdown import ROWS, link, table

__all__ = ["CELL", "history_lines", "history_markdown", "versus_line"]

CELL = {"PASS": "PASS", "FAIL": "FAIL", "ERROR": "ERROR", "SKIPPED": "SKIP", "FLAKY": "FLAKY", None: "-"}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def versus_line(previous: str | None, new_failures: Sequence[str], fixed: Sequence[str]) -> str:
    """What `referee run` says last about a run against the previous complete run of its plan.

    >>> versus_line("20261202T030000Z", ["flaky_add"], ["a", "b"])
    'vs 20261202T030000Z: 1 new failure: flaky_add; 2 fixed: a, b'
    >>> versus_line("20261202T030000Z", [], []), versus_line(None, [], [])
    ('vs 20261202T030000Z: no new failure; 0 fixed', 'first complete run of this plan')
    """
    if previous is None:
        return "first complete run of this plan"
    n = len(new_failures)
    said = (f"{_plural(n, 'new failure')}: {', '.join(new_failures)}" if n else "no new failure")
    said += f"; {len(fixed)} fixed" + (f": {', '.join(fixed)}" if fixed else "")
    return con(f"vs {previous}: {said}")


def _named(h: History) -> list[tuple[str, str]]:
    """(label, what) for each finding of the window, in the order they are told."""
    out = []
    if len(h.runs) >= 2:
        against = h.runs[-2].name
        out.append((f"new failures (vs {against})", ", ".join(h.new_failures) or "none"))
        out.append(("fixed", ", ".join(h.fixed) or "none"))
    if h.flips:
        out.append(("flips across runs", "; ".join(f"{s} ({why})" for s, why in h.flips.items())))
    if h.slower:
        out.append(("slower", "; ".join(f"{t.step} {t.now_s:.2f}s, median before {t.median_s:.2f}s"
                                         for t in h.slower)))
    return out


def history_lines(h: History) -> list[str]:
    """The history as plain console lines: a grid (steps as rows, runs as columns numbered from the oldest,
    newest last), the runs' names, the skipped runs with why, then new failures, fixed, flips and slower steps."""
    lines = [con(f"history of {h.plan}: {_plural(len(h.runs), 'complete run')} (oldest first)"
                 + (f", {len(h.skipped)} skipped" if h.skipped else ""))]
    if h.runs:
        width = max([4, *(len(con(s)) for s in h.steps)])
        head = "  ".join(f"#{i:<4}" for i in range(1, len(h.runs) + 1))
        lines.append(f"{'step':<{width}}  {head}".rstrip())
        new, fixed, slow = set(h.new_failures), set(h.fixed), {t.step for t in h.slower}
        for s in h.steps:
            cells = "  ".join(f"{CELL.get(v, v or '-'):<5}" for v in h.row(s))
            mark = " new failure" if s in new else " fixed" if s in fixed else ""
            mark += (" flips" if s in h.flips else "") + (" slower" if s in slow else "")
            lines.append(f"{con(s):<{width}}  {cells}{mark}".rstrip())
        lines.append("runs: " + ", ".join(f"#{i} {con(r.name)}" for i, r in enumerate(h.runs, 1)))
    else:
        lines.append("no complete run yet")
    for sk in h.skipped:
        lines.append(con(f"skipped {sk.name}: {sk.why}"))
    for label, what in _named(h):
        lines.append(con(f"{label}: {what}"))
    return lines


def history_markdown(h: History, plan_dir: Path, base: Path) -> str:
    """The history as Markdown for a CI job page; links (relative to `base`) to each run's report."""
    lines = [f"### referee history: {md(h.plan)}", "",
             f"{_plural(len(h.runs), 'complete run')}, oldest first" + (f"; {len(h.skipped)} skipped" if h.skipped
                                                                       else "") + "."]
    for label, what in _named(h):
        lines += ["", f"**{md(label)}**: {md(what, limit=1000)}"]
    if h.runs:
        head = ["step", *(link(f"#{i}", plan_dir / r.name / "report.html", base) for i, r in enumerate(h.runs, 1))]
        new, fixed, slow = set(h.new_failures), set(h.fixed), {t.step for t in h.slower}
        rows = []
        for s in h.steps[:ROWS]:
            tag = " (new failure)" if s in new else " (fixed)" if s in fixed else ""
            tag += (" (flips)" if s in h.flips else "") + (" (slower)" if s in slow else "")
            rows.append([md(s) + tag, *(CELL.get(v, v or "-") for v in h.row(s))])
        lines += ["", *table(head, rows, len(h.steps) - ROWS)]
        lines += ["", "Runs: " + ", ".join(f"#{i} {md(r.name)}" for i, r in enumerate(h.runs, 1))]
    if h.skipped:
        lines += ["", "Skipped (not complete): " + "; ".join(f"{md(s.name)} ({md(s.why, limit=200)})"
                                                              for s in h.skipped)]
    return "\n".join([*lines, ""])
