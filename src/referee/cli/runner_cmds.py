"""CLI for the runner: run, grade, check, kinds, demo."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.text import Text

from referee.core.safetext import for_console, visible
from referee.errors import RefereeError

EXIT_INTERRUPTED = 130


def _console(json_mode: bool):
    from referee.report.console import make_console

    # with --json, stdout carries only the JSON object; humans read stderr. Without a terminal (a CI log, a
    # pipe), lines are never cut or wrapped (report/console.py)
    return make_console(stderr=json_mode)


def _lint_warnings(loaded, console, cache_dir: Path) -> None:
    try:
        from referee.lint import lint_plan
    except ImportError:
        return
    try:
        findings = lint_plan(loaded, cache_dir=cache_dir)  # controls are OCR'd once, not every run
    except RefereeError as exc:
        console.print(f"[yellow]lint skipped: {for_console(exc)}[/]")
        return
    for f in findings:
        console.print(f"[yellow]warning: too loose: {for_console(f)}[/]")


@click.command()
@click.argument("plans", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--agent", help="Command that performs each step (the command actor).")
@click.option("--out", default="runs", show_default=True, type=click.Path(file_okay=False),
              help="Where run directories go: OUT/<plan>/<UTC timestamp>/. Defaults for --out, --agent, "
                   "--retries and -j may come from [tool.referee] in pyproject.toml or a referee.toml.")
@click.option("--strict", is_flag=True, help="SKIPPED and FLAKY steps also fail the run (exit 1).")
@click.option("--json", "json_mode", is_flag=True, help="Print one JSON object with every run's verdicts.")
@click.option("--only", "only", multiple=True, metavar="STEP[,STEP]",
              help="Perform only these steps (in plan order); the others are not run and say so.")
@click.option("-k", "keyword", metavar="EXPR",
              help="Perform only the steps whose id matches EXPR: words (substrings, any case) with and/or/not.")
@click.option("--fail-fast", is_flag=True, help="Stop after the first step that FAILs or is an ERROR.")
@click.option("--retries", type=click.IntRange(0, 100), default=0, show_default=True,
              help="Perform a step that FAILs or is an ERROR again, up to N more times; a pass after a "
                   "failure is FLAKY.")
@click.option("-j", "--jobs", type=int, default=1, show_default=True,
              help="Plans run at once, each in its own process with its own run directory, app and ports.")
@click.option("--executor", "executor_kind", type=click.Choice(["local", "dask"]), default="local", show_default=True,
              help="dask: run the plans on a Dask cluster whose workers have the apps, agents and browsers "
                   "(docs/scale.md)")
@click.option("--scheduler", default=None, metavar="tcp://HOST:PORT",
              help="with --executor dask: a running Dask scheduler (default: a LocalCluster of --jobs workers)")
@click.option("--summary-md", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="Also write a Markdown summary for a CI job page (verdict counts, new failures against the "
                   "previous complete run, each FAIL with its reason, links); it is also appended to the file "
                   "$GITHUB_STEP_SUMMARY names when that is set.")
@click.option("--plan-on-stdin", "plan_sha256", default=None, hidden=True, metavar="SHA256",
              help="(for -j) the plan's text comes on stdin and must hash to SHA256; PLAN only names it")
def run(plans, agent, out, strict, json_mode, only, keyword, fail_fast, retries, jobs, executor_kind, scheduler,
        summary_md, plan_sha256):
    """Run PLANS with an acting agent, capture evidence, grade every step."""
    from referee.cli.history_cmds import end_of_run
    from referee.core.executors import check_options
    from referee.errors import UsageError
    from referee.plan.selection import check_selection, selected, split_ids
    from referee.report.console import LiveSteps, integrity_line, isolation_line, print_verdicts, summary_line
    from referee.rundir.schema import RunOptions
    from referee.runner.run import actor_spec, run_plan

    console = _console(json_mode)
    default_agent = None  # the defaults file's agent: only for plans that name no agent of their own
    if plan_sha256 is None:  # a -j child takes every option from its parent, which read the defaults file
        out, from_file, retries, jobs = _with_defaults(out=out, agent=agent, retries=retries, jobs=jobs)
        default_agent = from_file if agent is None else None
    check_options(executor_kind, None, scheduler, 1)  # before any plan: a stray --scheduler would be ignored here
    _check_summary_path(summary_md)
    if keyword is not None and not keyword.strip():  # `-k "$FILTER"` with FILTER unset must not run everything
        raise UsageError("-k '': it is empty", fix="give words to match step ids, or leave -k out")
    ids = split_ids(only)
    if only and not ids:
        raise UsageError(f"--only {' '.join(repr(o) for o in only)}: it names no step",
                         fix="give step ids (--only a,b), or leave --only out")
    loaded = _load_checked(plans, console, plan_sha256)  # every plan validates before anything runs

    def agent_of(lp) -> str | None:
        own = lp.plan.actor is not None and (lp.plan.actor.kind != "command" or lp.plan.actor.command)
        return agent if agent is not None else None if own else default_agent

    for lp in loaded:  # and has an agent: a plan without one stops everything before anything runs
        actor_spec(lp, agent_of(lp))
    check_selection([s.id for lp in loaded for s in lp.plan.steps], ids, keyword)
    options = RunOptions(only=ids, keyword=keyword, fail_fast=fail_fast, retries=retries)
    if jobs != 1 or executor_kind == "dask":
        chosen = []
        for p, lp in zip(plans, loaded):
            mine = [s.id for s in lp.plan.steps]
            if (ids or keyword) and not selected(mine, ids, keyword):
                console.print(Text(f"{lp.path}: no step matches --only/-k; not run", style="yellow"), highlight=False)
                continue
            # each plan runs as its own `referee run`: --only names only that plan's steps
            extra = [*(("--only", ",".join(i for i in ids if i in mine)) if ids else ()),
                     *(("-k", keyword) if keyword else ()), *(("--fail-fast",) if fail_fast else ()),
                     *(("--retries", str(retries)) if retries else ())]
            # the text validated here is the text it runs; its name prefixes its lines
            chosen.append((p, lp.text, tuple(extra), agent_of(lp), lp.name))
        browsers = [lp.path for lp in loaded if lp.plan.actor is not None and lp.plan.actor.kind == "browser"]
        if len(browsers) > 1 and jobs > 1 and executor_kind == "local":
            # Chromium's DevTools port takes any local client: one plan's agent can drive another's page
            console.print(Text(f"warning: {len(browsers)} browser plans run at once on this host; an agent can reach "
                               "the others' browsers over their DevTools ports (security-isolation.md); run them "
                               "with -j 1, or on separate hosts", style="yellow"), highlight=False)
        return _run_many(chosen, out, strict, json_mode, jobs, executor_kind, scheduler, summary_md)
    exit_code, payload, run_dirs = 0, [], []
    for lp in loaded:
        if (ids or keyword) and not selected([s.id for s in lp.plan.steps], ids, keyword):
            console.print(Text(f"{lp.path}: no step matches --only/-k; not run", style="yellow"), highlight=False)
            continue
        _lint_warnings(lp, console, Path(out) / ".lint-cache")
        every = [s.id for s in lp.plan.steps]
        kept = selected(every, ids, keyword) if ids or keyword else every
        with LiveSteps(console, lp.name, kept, deselected=len(every) - len(kept)) as live:
            outcome = run_plan(lp, out=Path(out), agent=agent_of(lp), on_event=live.event, options=options)
        res = outcome.results
        run_dirs.append(outcome.run_dir)
        print_verdicts(console, res)
        console.print(summary_line(res))
        console.print(integrity_line(res), highlight=False)
        if (line := isolation_line(outcome.isolation)) is not None:
            console.print(line, highlight=False)
        console.print(f"run directory: {for_console(outcome.run_dir)}", highlight=False)
        payload.append({"plan": res.plan, "run_dir": str(outcome.run_dir), "summary": res.summary,
                        "integrity": res.integrity.model_dump(mode="json"),
                        "isolation": outcome.isolation.model_dump() if outcome.isolation else None,
                        "steps": [s.model_dump(mode="json") for s in res.steps]})
        exit_code = max(exit_code, res.exit_code(strict))
        if outcome.error:
            console.print(f"[bold red]the run stopped early: {for_console(outcome.error)}[/]", highlight=False)
        if outcome.interrupted:
            console.print("[bold]interrupted: the run directory is gradeable with `referee grade`[/]")
            exit_code = EXIT_INTERRUPTED
        payload[-1]["versus"] = end_of_run(outcome, console)  # the last line: against the previous complete run
        if outcome.interrupted:
            break
    # a -j child (--plan-on-stdin) leaves the job page and OUT/index.html to its parent, which writes them once
    _write_summaries(run_dirs, summary_md, console, job_page=plan_sha256 is None)
    if run_dirs and plan_sha256 is None:
        _overview(Path(out), console)
    if json_mode:
        click.echo(json.dumps({"runs": payload}, indent=2))
    return exit_code


def _with_defaults(**given):
    """Each of `out`, `agent`, `retries`, `jobs` given, as on the command line, else from the defaults file
    (referee.core.settings), else the option's own default."""
    from click.core import ParameterSource

    from referee.core.settings import load_defaults

    ctx = click.get_current_context()
    if isinstance(ctx.obj, dict) and ctx.obj.get("no_defaults"):  # `referee demo` runs its own plans as shipped
        return tuple(given.values())
    defaults = load_defaults()
    return tuple(getattr(defaults, k) if ctx.get_parameter_source(k) in (ParameterSource.DEFAULT, None)
                 and getattr(defaults, k) is not None else v for k, v in given.items())


def _overview(out: Path, console) -> None:
    """OUT/index.html over every plan's runs in OUT (a warning, never a failure, when it cannot be written)."""
    from referee.cli.history_cmds import write_overview

    try:
        write_overview(out)
    except (OSError, RefereeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        console.print(f"[yellow]warning: {for_console(out)}/index.html not written: {for_console(why)}[/]",
                      highlight=False)


def _check_summary_path(summary_md: Path | None) -> None:
    """A --summary-md whose folder does not exist is a usage error before anything runs, not a lost summary after."""
    from referee.errors import UsageError

    if summary_md is not None and not Path(summary_md).absolute().parent.is_dir():
        raise UsageError(f"--summary-md {summary_md}: its folder does not exist", file=str(summary_md),
                         fix="make the folder first, or name a file in an existing one")


def _write_summaries(run_dirs: list[Path], summary_md: Path | None, console, job_page: bool = True) -> None:
    """The runs' Markdown summary (report/markdown.py), each against its plan's previous complete run
    (runner/history.py), to --summary-md and $GITHUB_STEP_SUMMARY. A summary that cannot be written is a
    warning: the verdicts stand."""
    import os

    from referee.report.markdown import STEP_SUMMARY, emit_summary, run_summary
    from referee.runner.history import compare, incomplete_reason, previous_complete, read_results

    env = {k: v for k, v in os.environ.items() if job_page or k != STEP_SUMMARY}
    if not run_dirs or (summary_md is None and not env.get(STEP_SUMMARY)):
        return
    parts = []
    try:
        for d in run_dirs:
            res = read_results(Path(d))
            prev = previous_complete(Path(d))
            versus = compare(read_results(prev), res, prev.name) if prev is not None else None
            parts.append((Path(d), res, versus, incomplete_reason(Path(d), res)))

        def render(base: Path) -> str:
            return "\n".join(run_summary(res, d, base, previous=v.previous if v else None,
                                         new_failures=v.new_failures if v else (), fixed=v.fixed if v else (),
                                         partial=partial) for d, res, v, partial in parts)

        emit_summary(render, summary_md, env)
    except (OSError, RefereeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        console.print(f"[yellow]warning: the Markdown summary was not written: {for_console(why)}[/]", highlight=False)


def _run_many(plans, out, strict, json_mode, jobs, executor_kind, scheduler, summary_md=None) -> int:
    """`referee run -j N` / `--executor dask`: each plan in its own `referee run`, one combined summary.

    `plans`: (plan path, its validated text, its --only/-k/--fail-fast/--retries arguments, its --agent, its name).
    Every line a plan's runner prints is shown prefixed `[name]`: here as it comes (its progress, while it runs),
    from a Dask worker when the plan is done."""
    import threading

    from referee.core.executors import check_options
    from referee.errors import UsageError
    from referee.runner.many import job_for, run_plans

    if jobs < 1:
        raise UsageError("-j must be at least 1", fix="give how many plans may run at once")
    options = check_options(executor_kind, jobs, scheduler, 1)
    names = [name for *_, name in plans]
    label = {p: f"[{visible(name, keep_newlines=False)}] " if names.count(name) == 1 else f"[{for_console(p)}] "
             for p, *_, name in plans}  # two plans of one name are told apart by their files
    echo_lock = threading.Lock()  # the plans' threads print whole lines, one at a time
    streamed = executor_kind == "local"

    def said(job, line: str) -> None:
        prefix = label.get(job.label, f"[{for_console(job.label)}] ")
        with echo_lock:  # its progress lines carry the prefix already
            click.echo(line if line.startswith(prefix) else prefix + line, err=True)

    def shown(r) -> None:  # when a plan is done: its output, unless it came line by line already
        prefix = label.get(r.plan, f"[{for_console(r.plan)}] ")
        with echo_lock:
            for line in ([] if streamed else r.output.rstrip().splitlines()):
                click.echo(line if line.startswith(prefix) else prefix + line, err=True)
            click.echo(f"{prefix}finished: exit {r.code}" + (f" ({r.note})" if r.note else ""), err=True)

    where = (f"dask ({scheduler or f'a LocalCluster of {jobs} workers on 127.0.0.1'})" if executor_kind == "dask"
             else f"{jobs} at a time, each in its own process")
    click.echo(f"referee: running {len(plans)} plan(s), {where}", err=True)
    combined = run_plans([job_for(p, out, agent, strict, extra, text=text) for p, text, extra, agent, _ in plans],
                         options, on_done=shown, on_line=said if streamed else None)
    click.echo("\n".join(combined.summary_lines()), err=json_mode)
    _write_summaries([Path(run["run_dir"]) for r in combined.runs for run in r.runs if run.get("run_dir")], summary_md,
                     _console(json_mode))
    if any(run.get("run_dir") for r in combined.runs for run in r.runs):
        _overview(Path(out), _console(json_mode))
    if json_mode:  # every plan given, in order, also one that ran nothing (its note says why)
        click.echo(json.dumps({"runs": [run for r in combined.runs for run in r.runs],
                               "plans": [{"plan": r.plan, "exit_code": r.code, "note": r.note or None,
                                          "run_dirs": [run.get("run_dir") for run in r.runs], "host": r.host}
                                         for r in combined.runs],
                               "exit_code": combined.exit_code, "interrupted": combined.interrupted}, indent=2))
    return combined.exit_code


ALLOW_UNSIGNED_HELP = ("Grade run directories without a seal this machine can check (made before runs were "
                       "sealed, by hand, or with another key); their results are marked UNVERIFIED.")


@click.command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option("--strict", is_flag=True, help="SKIPPED steps also fail (exit 1).")
@click.option("--json", "json_mode", is_flag=True, help="Print the verdicts as JSON.")
@click.option("--allow-unsigned", is_flag=True, help=ALLOW_UNSIGNED_HELP)
@click.option("--plan", "fixed_plan", type=click.Path(dir_okay=False), default=None, metavar="FIXED.yaml",
              help="Grade the run's sealed evidence with this corrected plan's validators into RUN/regrades/ "
                   "(the run's own results stay as they were).")
def grade(run_dirs, strict, json_mode, allow_unsigned, fixed_plan):
    """Re-grade RUN_DIRS from their sealed evidence alone (the app may be gone); the seal is checked first.

    A plan's runs folder (`runs/<plan>`) stands for its latest run; a regrade folder (RUN/regrades/...) is
    checked against its seal."""
    from referee.cli.regrade_cmds import check_regrade_folders, grade_with_plan
    from referee.grader import grade as grade_run
    from referee.report.console import integrity_line, isolation_line, print_verdicts, summary_line
    from referee.report.outputs import write_outputs
    from referee.report.steplines import ocr_line
    from referee.rundir.folders import resolve_run_dir

    console = _console(json_mode)
    if fixed_plan is not None:
        return grade_with_plan(run_dirs, fixed_plan, strict, json_mode, allow_unsigned, console, _load_checked)
    if (code := check_regrade_folders(run_dirs)) is not None:
        return code
    exit_code, payload = 0, []
    for given in run_dirs:
        d = resolve_run_dir(given)  # a plan's runs folder: its latest run
        res = grade_run(Path(d), allow_unsigned=allow_unsigned,  # OCR is what a re-grade can wait on: said
                        progress=lambda kind, sid, data: console.print(Text(ocr_line(sid, data)), highlight=False))
        try:
            write_outputs(Path(d), res)
        except OSError as exc:  # a read-only copy still grades; it just keeps its old files
            why = for_console(exc.strerror or exc)
            console.print(f"[yellow]warning: {for_console(d)}: results not written ({why}); "
                          "verdicts shown here only[/]", highlight=False)
        print_verdicts(console, res, title=f"referee grade: {d}")
        console.print(summary_line(res))
        console.print(integrity_line(res), highlight=False)
        if (line := isolation_line(_isolation_of(Path(d)))) is not None:
            console.print(line, highlight=False)
        payload.append({"plan": res.plan, "run_dir": str(d), "summary": res.summary,
                        "integrity": res.integrity.model_dump(mode="json"),
                        "steps": [s.model_dump(mode="json") for s in res.steps]})
        exit_code = max(exit_code, res.exit_code(strict))
    if json_mode:
        click.echo(json.dumps({"runs": payload}, indent=2))
    return exit_code


def _finding_line(err, level: str) -> str:
    """`file:line:col: warning: message; fix`, the form editors and CI problem matchers read."""
    return f"{err.where()}{level}: {visible(err.message, keep_newlines=False)}" + (f"; {err.fix}" if err.fix else "")


def _load_checked(plans, console, plan_sha256: str | None = None, needs="all") -> list:
    """Every plan loaded and checked before anything runs; all their errors at once (then exit 2).

    `plan_sha256`: the one plan's text comes on stdin, as a `-j` parent validated it (not the file, which
    an earlier plan's agent may have rewritten since)."""
    from referee.errors import UsageError
    from referee.plan.preflight import check_plan_file

    text = None
    if plan_sha256 is not None:
        import sys

        from referee.runner.many import read_frozen_plan

        if len(plans) != 1:
            raise UsageError("--plan-on-stdin takes exactly one plan", fix="give one PLAN")
        text = read_frozen_plan(sys.stdin.buffer, plan_sha256, plans[0])
    loaded, errors = [], []
    for p in plans:
        lp, found = check_plan_file(p, text=text, needs=needs)
        errors += found.errors
        for w in found.warnings:
            console.print(Text(_finding_line(w, "warning"), style="yellow"), highlight=False)
        if lp is not None:
            loaded.append(lp)
    if errors:
        for err in errors[:-1]:
            click.echo(f"referee: error: {err}", err=True)
        raise errors[-1]
    return loaded


def _isolation_of(run_dir: Path):
    """The manifest's record of how the agent ran; None for an unreadable manifest (the grade said why)."""
    from referee.rundir.schema import read_manifest

    try:
        return read_manifest(run_dir).isolation
    except RefereeError:
        return None


@click.command()
@click.argument("plans", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "json_mode", is_flag=True,
              help="Print {plan: {ok, errors: [{file, line, column, message, fix}], warnings}} for editors and CI.")
def check(plans, json_mode):
    """Validate PLANS without running anything: every error of every plan in one pass (exit 2 if any).

    Besides the plan's own schema, what would fail at run time: screen captures or `script:` without
    the browser actor, a python actor target that cannot be found, evidence that names no capture of
    its step, and `${VAR}` that is not set."""
    from referee.plan.preflight import check_plan_file, finding_json

    code, report = 0, {}
    for p in plans:
        lp, found = check_plan_file(p)
        code = 2 if found.errors else code
        summary = None
        if lp is not None:
            nval = sum(len(v) for v in lp.validators.values())
            skipped = [s.id for s in lp.plan.steps if not lp.validators.get(s.id)]
            summary = {"steps": len(lp.plan.steps), "validators": nval, "skipped": skipped}
        report[p] = {"ok": not found.errors, "errors": [finding_json(e) for e in found.errors],
                     "warnings": [finding_json(w) for w in found.warnings], **(summary or {})}
        if json_mode:
            continue
        for err in found.errors:  # the form every referee error has: `referee: error: file:line:col: ...; fix`
            click.echo(f"referee: error: {err}", err=True)
        for w in found.warnings:
            click.echo(_finding_line(w, "warning"))
        if found.errors:
            n, m = len(found.errors), len(found.warnings)
            more = f", {m} warning{'s' if m != 1 else ''}" if m else ""
            click.echo(f"{visible(p, keep_newlines=False)}: {n} error{'s' if n != 1 else ''}{more}")
        elif summary is not None:
            skipped = summary["skipped"]
            shown = visible(p, keep_newlines=False)
            click.echo(f"{shown}: ok ({summary['steps']} steps, {summary['validators']} validators"
                       + (f"; no validator, will be SKIPPED: {', '.join(skipped)}" if skipped else "") + ")")
    if json_mode:
        click.echo(json.dumps(report, indent=2))
    return code


@click.command()
@click.option("--json", "json_mode", is_flag=True, help="Print the table as JSON.")
@click.option("--actions", is_flag=True, help="List the ways of acting the auditor recognises instead.")
@click.option("--tools", type=click.Path(exists=True, dir_okay=False), default=None,
              help="With --actions: also list the entries of this tool map.")
@click.option("--readers", "readers_", is_flag=True,
              help="List the auditor's trace readers instead (`referee readers`).")
@click.option("--checks", "checks_", is_flag=True,
              help="List the auditor's rule checks instead, one line each, in the order they run.")
def kinds(json_mode, actions, tools, readers_, checks_):
    """List what a plan can name: validators, captures, actors, browser `script:` actions, `app:` and
    `actor:` fields (--actions: the auditor's ways of acting instead; --readers: its trace readers;
    --checks: its rule checks)."""
    if checks_:
        return _rule_checks(json_mode)
    if readers_:
        from referee.cli.audit_cmds import readers

        return readers.callback(json_mode)
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
    from referee.core.registry import check_plugins

    check_plugins(validator_specs, capture_specs)  # a listing that quietly left a broken plugin out looks complete
    table = {"validators": {n: {"summary": k.summary, "params": params(k.Params)} for n, k in validator_specs.items()},
             "captures": {n: {"summary": k.summary, "params": params(k.Params)} for n, k in capture_specs.items()},
             "actors": {n: {"summary": doc(a), "params": []} for n, a in actors.items()},
             "script actions": {v: {"summary": SUMMARY.get(v, doc(m))
                                    + (f" (shorthand: `{v}: TEXT` sets {SHORTHAND[v]})" if v in SHORTHAND else ""),
                                    "params": params(m)} for v, m in ACTIONS.items()},
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


def _rule_checks(json_mode: bool) -> int:
    from referee.audit.extract.checks import CHECKS

    rows = [{"name": c.name, "stage": c.stage, "fields": list(c.fields), "summary": c.summary} for c in CHECKS]
    if json_mode:
        click.echo(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        click.echo(f"{r['name']:<20} {r['stage']:<7} {r['summary']} [{', '.join(r['fields'])}]")
    return 0


def _action_kinds(json_mode: bool, tools: str | None) -> int:
    from pathlib import Path

    from referee.audit.extract.acting import NO_TOOLS, describe_layers

    catalog = NO_TOOLS
    if tools:
        from referee.audit.extract.toolmap import load_tool_map

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
    code = run.main(args=[*plans, "--out", out], standalone_mode=False, obj={"no_defaults": True})
    # the demo's job is to show overclaims caught: FAIL verdicts are its expected result
    return 0 if code in (0, 1) else code


COMMANDS = [run, grade, check, kinds, demo]

