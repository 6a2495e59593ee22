"""CLI for nightly runs: `referee history` and `referee prune`, and what `referee run` adds at its end (the line
against the previous complete run, the HTML index pages)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from referee.core.safetext import for_console
from referee.errors import RefereeError, UsageError


@click.command()
@click.argument("runs_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--last", type=click.IntRange(1, 1000), default=10, show_default=True,
              help="How many complete runs to compare, the newest.")
@click.option("--json", "json_mode", is_flag=True, help="Print the history as one JSON object.")
@click.option("--summary-md", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="Also write the history as Markdown for a CI job page (appended to $GITHUB_STEP_SUMMARY too).")
def history(runs_dir, last, json_mode, summary_md):
    """Each step's verdicts over the last complete runs of a plan (RUNS_DIR: OUT/<plan>): new failures, fixed
    steps, steps that flip between runs, steps grown slower; partial and interrupted runs listed as skipped."""
    from referee.report.history_view import history_lines, history_markdown
    from referee.report.markdown import emit_summary
    from referee.runner.history import load_history

    if summary_md is not None and not summary_md.absolute().parent.is_dir():
        raise UsageError(f"--summary-md {summary_md}: its folder does not exist", file=str(summary_md),
                         fix="make the folder first, or name a file in an existing one")
    h = load_history(runs_dir, last)
    emit_summary(lambda base: history_markdown(h, Path(runs_dir), base), summary_md)
    if json_mode:
        click.echo(json.dumps(h.to_json(), indent=2))
    else:
        click.echo("\n".join(history_lines(h)))
    return 0


@click.command()
@click.argument("runs_dir", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--keep", type=click.IntRange(1, None), required=True, metavar="N",
              help="Complete runs to keep per plan, the newest (`latest` and `previous` are kept too).")
@click.option("--dry-run", is_flag=True, help="Say what would be removed; remove nothing.")
def prune(runs_dir, keep, dry_run):
    """Remove old run directories of a plan's runs folder (OUT/<plan>), or of each plan in OUT: keep the newest N
    complete runs, what `latest` and `previous` name, and every run newer than those kept. Links are never followed."""
    from referee.runner.prune import prune as prune_runs

    results = prune_runs(runs_dir, keep, dry_run=dry_run)
    verb = "would remove" if dry_run else "removed"
    code = 0
    for p in results:
        for d in p.removed:
            click.echo(f"{verb} {for_console(d)}")
        for d, why in p.failed:
            click.echo(f"referee: warning: {for_console(d)} not removed: {for_console(why)}", err=True)
            code = 1
        click.echo(f"{for_console(p.plan_dir)}: {verb} {len(p.removed)}, kept {len(p.kept)}")
    if not dry_run:
        for p in results:
            _quietly(lambda: write_plan_index(p.plan_dir))
    return code


def _quietly(write) -> str | None:
    """Run an index writer; why it failed (an index is a convenience: it never fails a command), or None."""
    try:
        write()
    except (OSError, RefereeError) as exc:
        return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return None


def write_plan_index(plan_dir: Path) -> None:
    """(Re)write OUT/<plan>/index.html from the plan's runs."""
    from referee.report.history_html import write_plan_index as write
    from referee.runner.history import load_history

    write(plan_dir, load_history(plan_dir))


def write_overview(out: Path) -> None:
    """(Re)write OUT/index.html over every plan's runs folder in OUT."""
    from referee.report.history_html import write_overview as write
    from referee.runner.history import load_history, plan_folders

    write(out, [(p.name, load_history(p)) for p in plan_folders(out)])


def end_of_run(outcome, console) -> dict:
    """What `referee run` says last about one run: the line against the previous complete run of its plan, and
    whether the links moved; then its plan's index.html. Returns the same for --json."""
    from rich.text import Text

    from referee.report.history_view import versus_line
    from referee.runner.history import compare, read_results

    prev = outcome.previous
    versus = None
    if prev is not None:
        try:
            versus = compare(read_results(prev), outcome.results, prev.name)
        except RefereeError:
            versus, prev = None, None
    line = versus_line(prev.name if prev is not None else None, versus.new_failures if versus else (),
                       versus.fixed if versus else ())
    if outcome.incomplete is not None:
        if prev is None:
            line = "no earlier complete run of this plan to compare with"
        console.print(Text(line), highlight=False, soft_wrap=True)  # one line each, however narrow the log
        console.print(Text(f"this run is not complete ({for_console(outcome.incomplete)}): `latest` and `previous` "
                           "left as they were", style="yellow"), highlight=False, soft_wrap=True)
    else:
        console.print(Text(line, style="bold red" if versus and versus.new_failures else ""), highlight=False,
                      soft_wrap=True)
    why = _quietly(lambda: write_plan_index(Path(outcome.run_dir).parent))
    if why is not None:
        console.print(Text(f"warning: index.html not written: {for_console(why)}", style="yellow"), highlight=False)
    return {"previous": prev.name if prev is not None else None,
            "new_failures": list(versus.new_failures) if versus else [],
            "fixed": list(versus.fixed) if versus else [], "complete": outcome.incomplete is None,
            "incomplete": outcome.incomplete}


COMMANDS = [history, prune]
