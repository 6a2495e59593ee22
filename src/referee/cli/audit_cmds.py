"""`referee audit`, `replay`, `show` and `readers`: thin click commands over the library (heavy imports inside)."""

from __future__ import annotations

import json
import sys
from contextlib import nullcontext
from pathlib import Path

import click
from click.core import ParameterSource

from referee.cli.audit_console import ConsoleEvents, report, show_set, warn
from referee.cli.audit_flags import audit_flags, options_from
from referee.errors import UsageError


@click.command("audit")
@audit_flags
def audit(traces, out, show, progress, summary_json, summary_md, junit, **flags):
    """Audit finished agent runs: claim from the report alone, evidence from the trace alone, policy decides.

    TRACES are trace files, run folders (a referee run directory: only its SKIPPED steps, as advisory
    records, after its seal is checked and it is graded again; a BrowserGym/AgentLab experiment folder;
    an OpenHands session), folders walked for them, or quoted globs. `referee readers` lists the formats.
    """
    from referee.audit.run.session import audit_runs

    options = options_from(flags, summary_json=summary_json)
    shown = show_set(show)
    source = click.get_current_context().get_parameter_source
    console = ConsoleEvents(progress)
    try:
        with console:
            result = audit_runs(traces, out, options, console)
    except BaseException:
        console.close(None, stopped=True)
        raise
    if result.nothing_to_audit:
        click.echo("nothing to audit: no SKIPPED step in the given run directories (PASS/FAIL/ERROR verdicts "
                   "stand as graded)")
        return 0
    return report(result, console, fmt=options.format, gold_out=options.gold_out, shown=shown,
                  show_all=source("show") is not ParameterSource.DEFAULT, summary_json=summary_json,
                  skip_explicit=source("on_error") is not ParameterSource.DEFAULT, summary_md=summary_md, junit=junit)


@click.command("show")
@click.argument("audit_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("run_id")
@click.option("--traces", type=click.Path(exists=True, path_type=Path), default=None,
              help="The trace file the audit read, to show the text of the steps each finding cites.")
@click.option("--format", "fmt", default=None, help="Format of --traces (default: sniffed).")
def show_cmd(audit_file, run_id, traces, fmt):
    """Print one audit record readably: claim, evidence with its cited steps, disposition and why."""
    from referee.audit.present.show import find_record, find_view, render_record

    rec = find_record(audit_file, run_id)
    if rec is None:
        raise UsageError(f"no record for run_id '{run_id}'", file=str(audit_file),
                         fix="use a run_id the audit printed (or `referee audit ... --show all`)")
    view = find_view(traces, run_id, fmt) if traces is not None else None
    if traces is not None and view is None:
        warn(f"run_id '{run_id}' is not in {traces}; showing the record alone")
    click.echo(render_record(rec, view))
    return 0


@click.command("replay")
@click.argument("audit_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--policy", default="causal", show_default=True,
              help="causal | final-state | low-load | unanimous | strict | PATH")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="write the replayed records here ('-': stdout)")
@click.option("--gold", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="gold labels (CSV or JSONL: run_id, completed), as for `referee eval`, to report misreports")
def replay(audit_file, policy, out, gold):
    """Recompute trace states and dispositions under another policy, from cached evidence only (no model)."""
    from referee.audit.decide.policyfile import load_policy
    from referee.audit.ingest.inputs import own_outputs
    from referee.audit.present.replay import replay_file
    from referee.audit.present.summary import AuditSummary, render
    from referee.core.lockfile import exclusive

    lp = load_policy(policy)
    to_file = out is not None and str(out) != "-"
    # before OUT.lock or anything else is written: an --out that is an input would be written over
    own_outputs([audit_file, *([gold] if gold else []), Path(lp.path)], out=out if to_file else None)
    gold_map: dict[str, bool] = {}
    if gold:
        from referee.evaluation.gold import load_gold

        gold_map = {rid: g.completed for rid, g in load_gold(gold).items()}
    summary = AuditSummary()
    # replacing a file a running `referee audit` appends to would lose its records: take its lock
    with exclusive(out, by="referee replay", fix="wait for it to finish, or give another --out") if to_file \
            else nullcontext():
        fh = None
        tmp = out.with_name(out.name + ".tmp") if to_file else None
        if out is not None:
            fh = sys.stdout if tmp is None else open(tmp, "w", encoding="utf-8")
        try:
            try:
                for rec in replay_file(audit_file, lp):
                    summary.add(rec, gold_map or None)
                    if fh is not None:
                        fh.write(rec.model_dump_json() + "\n")
            finally:
                if fh is not None and fh is not sys.stdout:
                    fh.close()
            if tmp is not None:
                tmp.replace(out)
        except BaseException:
            if tmp is not None:
                tmp.unlink(missing_ok=True)  # a replay that failed leaves --out as it was, and no half file beside
            raise
    click.echo(render(summary), err=fh is sys.stdout)
    return 0


@click.command("readers")
@click.option("--json", "json_mode", is_flag=True, help="Print the table as JSON.")
def readers(json_mode):
    """List the trace readers: the format name for --format, what each needs, and how it is sniffed."""
    from referee.audit.ingest.readers import reader_infos, trace_readers
    from referee.core.registry import check_plugins

    rows = reader_infos()
    check_plugins(trace_readers)  # a listing that quietly left a broken plugin out looks complete
    if json_mode:
        click.echo(json.dumps([r.as_dict() for r in rows], indent=2))
        return 0
    click.echo("trace readers (--format NAME; without it each file and run folder is sniffed):")
    for r in rows:
        click.echo(f"  {r.name}: {r.summary}")
        click.echo(f"      sniffed: {r.sniffs}")
        click.echo(f"      needs: {r.needs}")
    return 0


COMMANDS = [audit, replay, show_cmd, readers]
