"""What `referee audit` prints: its events as they come (warnings, a progress bar) and its result at the end.

`ConsoleEvents` is the CLI's `AuditEvents` sink (referee.audit.run.options); `report` prints an `AuditResult`:
the notes, the summary, the runs to look at, the CI files and the bad records, and gives the exit code.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import click

from referee.core.safetext import visible
from referee.errors import UsageError

LIVE_WARNINGS = 20  # warnings of one kind printed as they come; the rest are counted, and kept for --summary-json


def warn(text: Any) -> None:
    """One warning line on stderr: what a trace holds (a run_id, a file name) can never start a line of its own."""
    click.echo(f"referee: warning: {visible(text, keep_newlines=False)}", err=True)


class _NoProgress:
    """What `audit` uses of a rich Progress, doing nothing (no terminal, or --no-progress)."""

    tasks = [type("Task", (), {"completed": 0})()]

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def add_task(self, *a, **kw) -> int:
        return 0

    def update(self, *a, **kw) -> None:
        pass


def _progress(enabled: bool):
    if not (enabled and sys.stderr.isatty()):  # rich costs a tenth of a second to import: only for a terminal
        return _NoProgress()
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), console=console, transient=True,
                    disable=not (enabled and console.is_terminal))


class ConsoleEvents:
    """The audit's events on the terminal: warnings on stderr as they come, at most LIVE_WARNINGS of each kind
    (50,000 duplicate run_ids print 20 lines and a count, not 50,000 lines; what is not printed is kept for
    --summary-json), a bad record's message once per file, and a progress bar while records are written."""

    def __init__(self, progress: bool = False, limit: int = LIVE_WARNINGS) -> None:
        self.limit = limit
        self.seen: dict[str, int] = {}
        self.held: list[str] = []
        self.kept: set[str] = set()
        self.repeats: dict[tuple[str | None, str], list[str]] = {}  # (file, message) -> the places it came again
        self._bar: Any = _progress(progress)
        self._task = 0
        self._t0 = time.perf_counter()

    def __enter__(self) -> ConsoleEvents:
        self._bar.__enter__()
        self._task = self._bar.add_task("auditing", total=None, rate="")
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._bar.__exit__(*exc)

    def _warn(self, kind: str, text: Any, keep: bool = True) -> None:
        """Print `text`, or, past the limit of its kind, keep it (`keep=False`: the summary lists that kind)."""
        n = self.seen[kind] = self.seen.get(kind, 0) + 1
        if n <= self.limit:
            warn(text)
            return
        if n == self.limit + 1:
            warn(f"more warnings of this kind ({kind}) follow: not printed; the last lines count them")
        if keep:
            self.kept.add(kind)
            self.held.append(str(text))

    def status(self, text: str) -> None:
        click.echo(text, err=True)

    def preview(self, line: str) -> None:
        click.echo(line)

    def written(self, record: Any) -> None:
        dt = time.perf_counter() - self._t0
        self._bar.update(self._task, advance=1,
                         rate=f"{self._bar.tasks[0].completed / dt:.1f} rec/s" if dt > 0 else "")

    def skipped(self, error: Any) -> None:
        # one message per file is said once: 2,000 lines of another tool's log refused alike are one line and a count
        if (key := (error.file, error.message)) in self.repeats:
            self.repeats[key].append(error.place or "?")
            return
        self.repeats[key] = []
        # already skipping: the hint to pass --on-error skip would be noise here
        where = ":".join(x for x in (error.file, error.place) if x)
        self._warn("skipped records", f"skipped record: {where + ': ' if where else ''}{error.message}", keep=False)

    def duplicate(self, error: Any) -> None:
        self._warn("duplicate run_ids", error)

    def ignored_fields(self, file: str, fields: tuple[str, ...]) -> None:
        self._warn("ignored fields",
                   f"{file}: ignored fields trace v1 does not define: {', '.join(fields)} (they are not evidence)")

    def note(self, text: str) -> None:
        self._warn("notes", text)

    def gold(self, item: Any) -> None:
        pass  # kept in the result, for --gold-out and the summary

    def close(self, summary_json: Path | None, stopped: bool = False) -> None:
        """The count of what was not printed, and where to read it (nowhere when the audit stopped early)."""
        if self.held:
            kinds = ", ".join(f"{n - self.limit} {k}" for k, n in self.seen.items() if k in self.kept)
            where = "" if stopped else f": listed in {summary_json} (warnings_not_printed)" if summary_json else \
                ": --summary-json FILE lists them"
            click.echo(f"referee: note: {len(self.held)} warnings were not printed ({kinds}){where}", err=True)


def show_set(show: str) -> set[str]:
    """The dispositions --show lists.

    >>> sorted(show_set("all")), show_set("none"), show_set("flag, review") == {"flag", "review"}
    (['flag', 'pass', 'review'], set(), True)
    """
    words = {w.strip() for w in show.split(",") if w.strip()}
    if words == {"all"}:
        return {"flag", "review", "pass"}
    if words == {"none"}:
        return set()
    bad = words - {"flag", "review", "pass"}
    if bad:
        raise UsageError(f"--show: unknown disposition {', '.join(sorted(bad))}",
                         fix="use flag, review, pass (comma-separated), all or none")
    return words


def report(result: Any, console: ConsoleEvents, *, fmt: str | None, gold_out: Path | None, shown: set[str],
           show_all: bool, skip_explicit: bool, summary_json: Path | None, summary_md: Path | None,
           junit: Path | None) -> int:
    """Print what an audit did (`result`, an AuditResult) after its events, write the CI files, and give the exit
    code: 1 when bad records were skipped and skipping was not asked for explicitly."""
    from referee.audit.present.summary import render

    stats, out = result.stats, result.out
    console.close(summary_json)
    for (file, message), again in console.repeats.items():
        if again:
            warn(f"{file}: \"{message[:80]}{'...' if len(message) > 80 else ''}\" came for {len(again)} more "
                 "record(s) of this file: not printed again")
    _notes(result, fmt)
    gold_note(result, gold_out)
    listed: list = []  # the records --show asks for, kept from the one pass the summary makes
    looked_at: list = []  # flags and reviews, for --summary-md and $GITHUB_STEP_SUMMARY
    cases: list = []  # every run, small, for --junit
    page = summary_md is not None or bool(os.environ.get("GITHUB_STEP_SUMMARY"))

    def each(rec: Any) -> None:
        from referee.audit.present.ci import case_of

        if rec.disposition in shown:
            listed.append(rec)
        if page and rec.disposition != "pass" and len(looked_at) < 1000:
            looked_at.append(rec)
        if junit is not None:
            cases.append(case_of(rec))

    summary = result.summarize(each)
    click.echo(render(summary))
    _list_runs(out, listed, shown, None if show_all else 20, summary.as_dict()["dispositions"]["review"])
    _ci_outputs(summary, looked_at, cases, out, summary_json, summary_md, junit)
    rate = stats.written / result.elapsed_s if result.elapsed_s > 0 else 0.0
    click.echo(f"wrote {stats.written} records to {out} ({rate:.1f} rec/s); {stats.skipped_done} already there; "
               f"{stats.stale} stale; {len(stats.errors)} bad records skipped; {stats.duplicates} duplicate run_ids; "
               f"{result.backend_calls} backend calls")
    # skipping was asked for: each fix's "or pass --on-error skip" is noise, in the listing and the summary alike
    errors = [e.replace(" or pass --on-error skip", "") for e in stats.errors] if skip_explicit else stats.errors
    if summary_json:
        from referee.core.fsutil import atomic_write_json

        atomic_write_json(summary_json, {**summary.as_dict(), "written": stats.written, "elapsed_s": result.elapsed_s,
                                         "backend_calls": result.backend_calls, "errors": errors,
                                         "warnings_not_printed": [visible(w, keep_newlines=False)
                                                                  for w in console.held]})
    if not stats.errors:
        return 0
    click.echo(f"skipped {len(stats.errors)} bad record(s):", err=True)
    lines = grouped(errors, console.repeats)
    for e in lines[:20]:
        click.echo(f"  {visible(e, keep_newlines=False)}", err=True)
    if len(lines) > 20:
        click.echo(f"  ... and {len(lines) - 20} more" + (f" (all in {summary_json})" if summary_json
                                                           else " (--summary-json FILE lists all)"), err=True)
    if skip_explicit:
        return 0
    # bad input is not a success unless the user said skipping is fine
    click.echo("referee: exit 1 because records were skipped; pass --on-error skip to accept that", err=True)
    return 1


def _notes(result: Any, fmt: str | None) -> None:
    """What the walk left out, the scores the runs carry, and a --gold-out that found no gold."""
    if result.earlier_outputs:
        click.echo(f"referee: note: left out {len(result.earlier_outputs)} file(s) referee wrote, not traces: "
                   f"{first(result.earlier_outputs)}", err=True)
    if result.unnamed:
        click.echo(f"referee: note: the walk left out {len(result.unnamed)} file(s) whose names say no trace but "
                   f"which look like an agent's log: {first(result.unnamed)}; give them by name, or pass --include "
                   "GLOB", err=True)
    if result.left_out:
        click.echo(f"referee: note: --format {fmt} left out {len(result.left_out)} run folder(s) of another format: "
                   f"{first(result.left_out)}", err=True)
    if result.stats.scorers:
        click.echo(f"referee: note: the runs carry scores ({', '.join(sorted(result.stats.scorers))}); to use one as "
                   "gold, pass --gold-scorer NAME (one that checks the state the run left, not the agent's answer)",
                   err=True)


def gold_note(result: Any, gold_out: Path | None) -> None:
    """An empty --gold-out must not pass for labels: say where gold is read from."""
    if gold_out and not result.gold_rows:
        click.echo(f"referee: note: --gold-out {gold_out}: no gold found beside these runs, the file holds no "
                   "label (gold is read from a record's gold, a tau-bench reward, a SWE-bench report.json beside "
                   "trajs/ or in logs/<instance>/, or an Inspect AI scorer named by --gold-scorer)", err=True)


def _ci_outputs(summary, looked_at: list, cases: list, out: Path, summary_json: Path | None,
                summary_md: Path | None, junit: Path | None) -> None:
    """--junit, --summary-md and $GITHUB_STEP_SUMMARY (referee/audit/present/ci.py); one that cannot be written is a
    warning: the audit file stands."""
    if junit is None and summary_md is None and not os.environ.get("GITHUB_STEP_SUMMARY"):
        return  # none asked for: their modules need not load
    from referee.audit.present.ci import audit_markdown, write_audit_junit
    from referee.report.markdown import emit_summary

    try:
        if junit is not None:
            write_audit_junit(cases, junit)
        emit_summary(lambda base: audit_markdown(summary, looked_at, out, base, summary_json), summary_md)
    except OSError as exc:
        warn(f"{exc.filename or ''}: not written: {exc.strerror or exc}")


def grouped(errors: list[str], repeats: dict[tuple[str | None, str], list[str]]) -> list[str]:
    """The bad records to list: a message that came again in one file is listed once, with how many times and where.

    >>> grouped(["f:1: not JSON; fix it", "f:2: not JSON; fix it", "g:1: other"], {("f", "not JSON"): ["2"]})
    ['f:1: not JSON; fix it (2 records of f alike: lines 1, 2)', 'g:1: other']
    """
    out, said = [], set()
    for e in errors:
        key = next(((f, m) for (f, m), again in repeats.items() if again and f and e.startswith(f + ":")
                    and f": {m}" in e), None)
        if key is None:
            out.append(e)
            continue
        if key in said:
            continue
        said.add(key)
        again = repeats[key]
        first_place = e[len(key[0]) + 1:].split(":", 1)[0]
        shown = [first_place, *again[:9]]
        out.append(f"{e} ({len(again) + 1} records of {key[0]} alike: lines {', '.join(shown)}"
                   f"{' ...' if len(again) > 9 else ''})")
    return out


def first(items: list[str], n: int = 5) -> str:
    """The first `n` items, comma-separated, and `...` when there are more.

    >>> first(["a", "b", "c"], 2)
    'a, b ...'
    """
    return ", ".join(items[:n]) + (" ..." if len(items) > n else "")


def _list_runs(out: Path, records: list, shown: set[str], limit: int | None, n_review: int) -> None:
    """The runs to look at, one line each, and how many went to review when those are not listed."""
    lines: list[str] = []
    if records:  # none listed (an empty audit): the module that lists them need not load
        from referee.audit.present.show import flag_lines

        lines = list(flag_lines(records, shown, limit))
    if lines:
        click.echo(f"runs to look at ({', '.join(sorted(shown))}; `referee show {out} RUN_ID` for one in full):")
        for line in lines:
            click.echo("  " + line)
    if "review" not in shown and n_review:
        click.echo(f"{n_review} run(s) sent to review: --show review lists them")
