"""Markdown summaries for CI job pages: a run's verdicts (`referee run --summary-md`), and where summaries go.

GitHub Actions shows the Markdown a step appends to the file `$GITHUB_STEP_SUMMARY` names; GitLab
and others publish a file (`--summary-md FILE`). What an agent or an app wrote (a reason quoting a
captured body, a claim note, a step id) is untrusted: it passes through `safetext.for_markdown`, so it
can neither add markup, HTML or links nor break the table. Links are relative paths, from the folder
of the file the summary is written to (the run directory and the report sit beside it in an artifact).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence
from urllib.parse import quote

from referee.core.fsutil import atomic_write_text
from referee.core.safetext import for_markdown as md

if TYPE_CHECKING:  # importing the grader package loads the plan loader: an audit's summary needs neither
    from referee.grader.results import RunResults, StepResult

__all__ = ["ROWS", "emit_summary", "link", "run_summary", "table"]

ROWS = 50  # table rows at most: a job page is read, not searched
REASON = 300  # characters of a reason shown; the report has the rest
STEP_SUMMARY = "GITHUB_STEP_SUMMARY"


def link(text: str, target: Path, base: Path) -> str:
    """A Markdown link to `target`, as a relative path from the folder `base` (percent-encoded: any file name).

    >>> link("report", Path("/w/runs/p/1/report.html"), Path("/w"))
    '[report](runs/p/1/report.html)'
    >>> link("r", Path("/w/a b(1).html"), Path("/w/out"))
    '[r](../a%20b%281%29.html)'
    """
    rel = os.path.relpath(os.path.abspath(target), os.path.abspath(base))
    return f"[{md(text)}]({quote(rel.replace(os.sep, '/'), safe='/')})"


def table(head: Sequence[str], rows: Iterable[Sequence[str]], more: int = 0) -> list[str]:
    """A GFM table of cells already escaped; `more`: rows left out, said below it."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    if more > 0:
        lines.append(f"\n… and {more} more (the report lists every step)")
    return lines


def _claim(step: StepResult) -> str:
    if step.claim is None:
        return "no claim"
    said = step.claim.get("pass")
    word = "pass" if said is True else "not pass" if said is False else "?"
    note = step.claim.get("note")
    return (f"**{word}** (OVERCLAIM)" if step.overclaim else word) + (f": {md(note, limit=120)}" if note else "")


def _counts(summary: Mapping[str, int]) -> str:
    from referee.grader.results import VERDICTS

    parts = [f"{summary.get(v, 0)} {v}" for v in VERDICTS if summary.get(v, 0) or v in ("PASS", "FAIL", "ERROR")]
    if n := summary.get("deselected", 0):  # left out by --only/-k: in no verdict's count
        parts.append(f"{n} deselected")
    over = summary.get("overclaims", 0)
    parts.append(f"{over} overclaim{'s' if over != 1 else ''}")
    for key, word in (("plan_errors", "plan error"), ("agent_failures", "agent failure")):  # as the console says
        if n := summary.get(key, 0):
            parts.append(f"{n} {word}{'s' if n != 1 else ''}")
    return " · ".join(parts)


def run_summary(results: RunResults, run_dir: Path, base: Path, *, previous: str | None = None,
                new_failures: Sequence[str] = (), fixed: Sequence[str] = (), partial: str | None = None) -> str:
    """One run as Markdown: verdict counts, what changed against the previous complete run, each step that did
    not pass (and each overclaim) with its reason and the agent's claim, and links to the report.

    `previous`: the previous complete run's name (None: there is none); `partial`: why this run is not complete
    (`runner.history.incomplete_reason`), said above the comparison (which covers the steps it performed).
    """
    bad = results.exit_code() != 0
    lines = [f"### referee run: {md(results.plan)}: {'❌ FAIL' if bad else '✅ PASS'}", "", _counts(results.summary)]
    if results.integrity.status != "verified":
        lines += ["", f"**Evidence {results.integrity.status}**: {md(results.integrity.reason, limit=REASON)}"]
    lines.append("")
    if partial:
        lines += [f"This run is not complete ({md(partial, limit=REASON)}): it will not be compared with later "
                  "runs; below, only the steps it performed are compared.", ""]
    if previous is None:
        lines.append("No earlier complete run of this plan to compare with.")
    else:
        n = len(new_failures)
        said = f"**{n} new failure{'s' if n != 1 else ''}**" + (": " + ", ".join(md(s) for s in new_failures)
                                                                  if n else "")
        said += f"; {len(fixed)} fixed" + (": " + ", ".join(md(s) for s in fixed) if fixed else "")
        lines.append(f"Against the previous complete run {md(previous)}: {said}.")
    new = set(new_failures)
    shown = [s for s in results.steps if s.not_run is None and (s.verdict != "PASS" or s.overclaim or s.id in new)
             and not (s.verdict == "SKIPPED" and not s.overclaim)]
    if shown:
        rows = [[md(s.id), f"**{s.verdict}**" + (" (new)" if s.id in new else ""), md(s.reason, limit=REASON),
                 _claim(s)] for s in shown[:ROWS]]
        lines += ["", *table(["step", "verdict", "reason", "agent claimed"], rows, len(shown) - ROWS)]
    skipped = [s.id for s in results.steps if s.verdict == "SKIPPED" and s.not_run is None]
    if skipped:
        lines += ["", f"SKIPPED (no validator, never PASS): {', '.join(md(s) for s in skipped[:ROWS])}"]
    run_dir = Path(run_dir)
    lines += ["", f"Report: {link('report.html', run_dir / 'report.html', base)} · "
                  f"{link('junit.xml', run_dir / 'junit.xml', base)} · "
                  f"{link('results.json', run_dir / 'results.json', base)}", ""]
    return "\n".join(lines)


def emit_summary(render: Callable[[Path], str], summary_md: Path | None,
                 env: Mapping[str, str] | None = None) -> list[Path]:
    """Write a summary where CI reads it: `summary_md` (replaced, atomically) and the file `$GITHUB_STEP_SUMMARY`
    names (appended to, as GitHub expects: each step adds its part). `render(base)` makes the Markdown with
    links relative to the folder `base`. Returns the files written."""
    env = os.environ if env is None else env
    written = []
    if summary_md is not None:
        path = Path(summary_md)
        atomic_write_text(path, render(path.absolute().parent))
        written.append(path)
    step = env.get(STEP_SUMMARY)
    if step:
        # GitHub renders the summary with the workspace as the place relative links start from
        with open(step, "a", encoding="utf-8") as fh:
            fh.write(render(Path.cwd()) + "\n")
        written.append(Path(step))
    return written
