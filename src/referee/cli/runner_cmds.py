"""CLI for the runner: run, grade, check, kinds, demo."""

from __future__ import annotations

import json
from pathlib import Path

import click

from referee.errors import RefereeError

EXIT_INTERRUPTED = 130


def _console(json_mode: bool):
    from rich.console import Console

    # with --json, stdout carries only the JSON object; humans read stderr
    return Console(stderr=json_mode, highlight=False)


def _lint_warnings(loaded, console, cache_dir: Path) -> None:
    try:
        from referee.lint import lint_plan
    except ImportError:
        return
    try:
        findings = lint_plan(loaded, cache_dir=cache_dir)  # controls are OCR'd once, not every run
    except RefereeError as exc:
        console.print(f"[yellow]lint skipped: {exc}[/]")
        return
    for f in findings:
        console.print(f"[yellow]warning: too loose: {f}[/]")


@click.command()
@click.argument("plans", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--agent", help="Command that performs each step (the command actor).")
@click.option("--out", default="runs", show_default=True, type=click.Path(file_okay=False),
              help="Where run directories go: OUT/<plan>/<UTC timestamp>/.")
@click.option("--strict", is_flag=True, help="SKIPPED steps also fail the run (exit 1).")
@click.option("--json", "json_mode", is_flag=True, help="Print one JSON object with every run's verdicts.")
def run(plans, agent, out, strict, json_mode):
    """Run PLANS with an acting agent, capture evidence, grade every step."""
    from referee.plan import load_plan
    from referee.report.console import LiveSteps, summary_line, verdict_table
    from referee.runner.run import run_plan

    console = _console(json_mode)
    loaded = [load_plan(p) for p in plans]  # every plan validates before anything runs
    exit_code, payload = 0, []
    for lp in loaded:
        _lint_warnings(lp, console, Path(out) / ".lint-cache")
        with LiveSteps(console, lp.name, [s.id for s in lp.plan.steps]) as live:
            outcome = run_plan(lp, out=Path(out), agent=agent, on_event=live.event)
        res = outcome.results
        console.print(verdict_table(res))
        console.print(summary_line(res))
        console.print(f"run directory: {outcome.run_dir}", highlight=False)
        payload.append({"plan": res.plan, "run_dir": str(outcome.run_dir), "summary": res.summary,
                        "steps": [s.model_dump(mode="json") for s in res.steps]})
        exit_code = max(exit_code, res.exit_code(strict))
        if outcome.error:
            console.print(f"[bold red]the run stopped early: {outcome.error}[/]", highlight=False)
        if outcome.interrupted:
            console.print("[bold]interrupted: the run directory is gradeable with `referee grade`[/]")
            exit_code = EXIT_INTERRUPTED
            break
    if json_mode:
        click.echo(json.dumps({"runs": payload}, indent=2))
    return exit_code


@click.command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option("--strict", is_flag=True, help="SKIPPED steps also fail (exit 1).")
@click.option("--json", "json_mode", is_flag=True, help="Print the verdicts as JSON.")
def grade(run_dirs, strict, json_mode):
    """Re-grade RUN_DIRS from their persisted evidence alone (the app may be gone)."""
    from referee.grader import grade as grade_run
    from referee.report.outputs import write_outputs
    from referee.report.console import summary_line, verdict_table

    console = _console(json_mode)
    exit_code, payload = 0, []
    for d in run_dirs:
        res = grade_run(Path(d))
        try:
            write_outputs(Path(d), res)
        except OSError as exc:  # a read-only copy still grades; it just keeps its old files
            console.print(f"[yellow]warning: {d}: results not written ({exc.strerror or exc}); "
                          "verdicts shown here only[/]", highlight=False)
        console.print(verdict_table(res, title=f"referee grade: {d}"))
        console.print(summary_line(res))
        payload.append({"plan": res.plan, "run_dir": str(d), "summary": res.summary,
                        "steps": [s.model_dump(mode="json") for s in res.steps]})
        exit_code = max(exit_code, res.exit_code(strict))
    if json_mode:
        click.echo(json.dumps({"runs": payload}, indent=2))
    return exit_code


@click.command()
@click.argument("plans", nargs=-1, required=True, type=click.Path(dir_okay=False))
def check(plans):
    """Validate PLANS without running anything."""
    from referee.plan import load_plan

    for p in plans:
        lp = load_plan(p)
        nval = sum(len(v) for v in lp.validators.values())
        skipped = [s.id for s in lp.plan.steps if not lp.validators.get(s.id)]
        click.echo(f"{p}: ok ({len(lp.plan.steps)} steps, {nval} validators"
                   + (f"; no validator, will be SKIPPED: {', '.join(skipped)}" if skipped else "") + ")")
    return 0


@click.command()
@click.option("--json", "json_mode", is_flag=True, help="Print the table as JSON.")
@click.option("--actions", is_flag=True, help="List the ways of acting the auditor recognises instead.")
@click.option("--tools", type=click.Path(exists=True, dir_okay=False), default=None,
              help="With --actions: also list the entries of this tool map.")
def kinds(json_mode, actions, tools):
    """List what a plan can name: validators, captures, actors, browser `script:` actions, `app:` and
    `actor:` fields (--actions: the auditor's ways of acting instead)."""
    if actions or tools:
        return _action_kinds(json_mode, tools)
    from referee.plan.captures import capture_specs
    from referee.plan.model import ActorSpec, AppSpec
    from referee.plan.script import ACTIONS, SHORTHAND, SUMMARY
    from referee.plan.validators import validator_specs
    from referee.runner.actors import actors, load_builtin

    def params(model, skip_kind: bool = True) -> list[str]:
        out = []
        for name, f in model.model_fields.items():
            if name == "kind" and skip_kind:
                continue
            out.append(name if f.is_required() else f"{name}={f.get_default(call_default_factory=True)!r}")
        return out

    def doc(obj) -> str:
        return (obj.__doc__ or "").strip().splitlines()[0] if obj.__doc__ else ""

    load_builtin()
    table = {"validators": {n: {"summary": k.summary, "params": params(k.Params)} for n, k in validator_specs.items()},
             "captures": {n: {"summary": k.summary, "params": params(k.Params)} for n, k in capture_specs.items()},
             "actors": {n: {"summary": doc(a), "params": []} for n, a in actors.items()},
             "script actions": {"goto": {"summary": SUMMARY["goto"], "params": ["url"]},
                                **{v: {"summary": SUMMARY.get(v, doc(m))
                                       + (f" (shorthand: `{v}: TEXT` sets {SHORTHAND[v]})" if v in SHORTHAND else ""),
                                       "params": params(m)} for v, m in ACTIONS.items()}},
             "plan fields": {"app": {"summary": doc(AppSpec), "params": params(AppSpec)},
                             "actor": {"summary": doc(ActorSpec), "params": params(ActorSpec, skip_kind=False)}}}
    if json_mode:
        click.echo(json.dumps(table, indent=2))
        return 0
    for section, entries in table.items():
        click.echo(f"{section}:")
        for n, info in entries.items():
            click.echo(f"  {n}: {info['summary']}")
            if info["params"]:
                click.echo(f"      params: {', '.join(info['params'])}")
    return 0


def _action_kinds(json_mode: bool, tools: str | None) -> int:
    from pathlib import Path

    from referee.audit.extract.acting import NO_TOOLS, describe_layers

    catalog = NO_TOOLS
    if tools:
        from referee.audit.toolmap import load_tool_map

        catalog, _ = load_tool_map(Path(tools))
    rows = describe_layers(catalog)
    if json_mode:
        click.echo(json.dumps([{"layer": a, "recognises": b} for a, b in rows], indent=2))
        return 0
    click.echo("ways of acting (first layer that matches wins):")
    for layer, what in rows:
        click.echo(f"  {layer}: {what}")
    return 0


@click.command()
@click.option("--out", default="runs", show_default=True, type=click.Path(file_okay=False),
              help="Where the demo's run directories go.")
@click.option("--no-browser", is_flag=True, help="Skip the browser journey (no Chromium needed).")
def demo(out, no_browser):
    """Run the bundled demo: a small web app, an agreeable agent, and the runner catching its overclaims."""
    from referee.demo import demo_plans

    plans = [str(p) for p in demo_plans(browser=not no_browser)]
    click.echo("referee demo: an agreeable agent claims pass on every step; the runner checks for itself.\n")
    code = run.main(args=[*plans, "--out", out], standalone_mode=False)
    # the demo's job is to show overclaims caught: FAIL verdicts are its expected result
    return 0 if code in (0, 1) else code


COMMANDS = [run, grade, check, kinds, demo]

