"""CLI for screens: `referee lint` (validators against negative controls) and `referee report` (report.html)."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command()
@click.argument("plan", type=click.Path(dir_okay=False))
@click.option("--control", "controls", multiple=True, type=click.Path(dir_okay=False),
              help="A negative control (screenshot, aria snapshot, HTML, capture JSON) the plan must NOT accept. "
                   "Repeatable.")
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None,
              help="Keep OCR of controls here between runs (e.g. .referee-cache).")
@click.option("--json", "json_mode", is_flag=True, help="Print the findings as JSON.")
def lint(plan, controls, cache_dir, json_mode):
    """Flag validators of PLAN that also hold on a negative control (too loose); exit 1 if any."""
    from referee.lint import lint_plan
    from referee.plan import load_plan

    loaded = load_plan(plan, needs="checks")  # what the lint evaluates: no capture, so no capture's variable
    report = lint_plan(loaded, controls, cache_dir=Path(cache_dir) if cache_dir else None)
    if json_mode:
        click.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
        return 0 if report.ok else 1
    if not report.controls:
        click.echo(f"{plan}: no controls (give --control FILE or `controls:` in the plan); nothing to compare against",
                   err=True)
    for p in report.script_problems:
        click.echo(f"script: {p}")
    marks = {"loose": "TOO LOOSE", "specific": "ok", "negative": "negative"}
    not_applicable = 0
    for f in report.checks:
        if f.status == "not_applicable":  # folded: one line says how many, not one row each
            not_applicable += 1
            continue
        what = f"matched {_shown(f.matched)}" if f.status == "loose" else _shown(f.reason, quote=False)
        click.echo(f"{marks[f.status]:9} {f.step} / {f.validator} on {f.control}: {what}")
    if not_applicable:
        click.echo(f"n/a       {not_applicable} validator/control pair(s) where the validator does not read that "
                   "kind of control (--json lists them)")
    for step, control in report.steps_passing_on_control:
        click.echo(f"WARNING: step '{step}' would PASS on control {control}: every validator holds there")
    n = len(report.loose)
    click.echo(f"{plan}: {n} too-loose validator finding(s), {len(report.script_problems)} script problem(s), "
               f"{len(report.controls)} control(s)")
    return 0 if report.ok else 1


def _shown(value, *, quote: bool = True, limit: int = 160) -> str:
    r"""A matched value or reason as one printable line: binary evidence shows as escapes, never raw bytes.

    >>> print(_shown(b"\x89PNG\r\n\x1a\x00"))
    '\x89PNG\r\n\x1a\x00'
    """
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", errors="backslashreplace")
    text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(value))
    text = f"'{text}'" if quote else text
    return text if len(text) <= limit else text[:limit - 3] + "..."


@click.command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(file_okay=False, exists=True))
@click.option("--allow-unsigned", is_flag=True,
              help="Report run directories without a seal this machine can check, marked UNVERIFIED.")
def report(run_dirs, allow_unsigned):
    """Regenerate report.html (and results.json, junit.xml) in each RUN_DIR by re-grading it (a plan's
    runs folder, `runs/<plan>`, stands for its latest run).

    A results.json already there is never trusted: it could have been written by anyone who could
    write the run directory. Exit 1 when a seal does not hold.
    """
    from referee.report.outputs import grade_to_disk
    from referee.rundir.folders import resolve_run_dir

    code = 0
    for given in run_dirs:
        d = resolve_run_dir(given)  # a plan's runs folder: its latest run
        res = grade_to_disk(Path(d), allow_unsigned=allow_unsigned)
        click.echo(str(Path(d) / "report.html"))
        if res.integrity.status != "verified":
            click.echo(f"{d}: {'SEAL CHECK FAILED' if res.integrity.status == 'failed' else 'UNVERIFIED'}: "
                       f"{res.integrity.reason}", err=True)
        if res.integrity.status == "failed":
            code = 1
    return code


COMMANDS = [lint, report]
