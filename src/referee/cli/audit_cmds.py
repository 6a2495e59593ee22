"""`referee audit` and `referee replay`: thin click commands over referee.audit (heavy imports inside)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from referee.errors import UsageError


def _progress(enabled: bool):
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), console=console, transient=True,
                    disable=not (enabled and console.is_terminal))


def _make_backends(backend: str, claims: str, base_url, model, concurrency, timeout, max_retries, tools=None):
    """Both backends through their registries (referee.audit.backends); the LLM client is made only when
    a chosen backend declares `needs_llm`."""
    from referee.audit.backends import make_backends

    def llm_client():
        from referee.llm import LLMClient, LLMConfig

        return LLMClient(LLMConfig.from_env(base_url, model, concurrency=concurrency, timeout_s=timeout,
                                            max_retries=max_retries))

    return make_backends(backend, claims, llm_client=llm_client, tools=tools)


@click.command("audit")
@click.argument("traces", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--format", "fmt", default=None,
              help="referee | openai-chat | tau-bench | mini-swe-agent | a plugin (default: sniffed per file; "
                   "a run directory is referee-run)")
@click.option("--backend", default="rules", show_default=True, help="evidence extractor: rules | llm | a plugin")
@click.option("--claims", default="rules", show_default=True, help="claim reader: rules | llm | a plugin")
@click.option("--tools", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="a tool map (tools.yaml): your tools' names or patterns -> read/create/edit/delete/send, "
                   "target argument, failure marker (docs/auditor.md)")
@click.option("--policy", default="causal", show_default=True,
              help="causal | final-state | low-load | unanimous | strict | PATH")
@click.option("--samples", "--runs", "runs", type=int, default=None,
              help="extraction samples per trace, voted on (default 1 for rules, 5 for llm; --runs is the old name)")
@click.option("--out", type=click.Path(path_type=Path), required=True, help="audit.jsonl to append to (resumable)")
@click.option("--cache", type=click.Path(path_type=Path), default=None,
              help="SQLite evidence cache (default OUT.cache.sqlite)")
@click.option("--on-error", type=click.Choice(["skip", "stop"]), default="skip", show_default=True,
              help="A bad trace record: skip it (listed at the end) or stop at it. By default bad records are "
                   "skipped but the exit code is 1; --on-error skip given explicitly accepts them (exit 0).")
@click.option("--base-url", default=None, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
@click.option("--model", default=None, help="model name for the llm backend")
@click.option("--concurrency", type=int, default=8, show_default=True, help="traces in flight (llm backend)")
@click.option("--timeout", type=float, default=60.0, show_default=True, help="seconds per model call")
@click.option("--max-retries", type=int, default=4, show_default=True,
              help="llm backend: retries of one model call (429, 5xx, timeouts) before it counts as failed.")
@click.option("--gold-out", type=click.Path(path_type=Path), default=None, help="write gold labels found in the traces")
@click.option("--summary-json", type=click.Path(path_type=Path), default=None, help="also write the summary as JSON")
@click.option("--progress/--no-progress", default=True, help="Show a progress bar on a terminal.")
@click.option("--show", "show", default="flag", show_default=True,
              help="Which runs to list after the summary: flag, review, pass (comma-separated), all, or none. "
                   "Given explicitly, every such run is listed (default: the first 20 flags).")
def audit(traces, fmt, backend, claims, tools, policy, runs, out, cache, on_error, base_url, model, concurrency,
          timeout, max_retries, gold_out, summary_json, progress, show):
    """Audit finished agent runs: claim from the report alone, evidence from the trace alone, policy decides.

    TRACES are trace files, folders of them, or referee run directories (a folder with manifest.json,
    or runs/ above them): there only the SKIPPED steps are audited, as advisory records.
    """
    import time

    from referee.audit.cache import EvidenceCache
    from referee.audit.auditfile import iter_records
    from referee.audit.pipeline import Auditor, audit_files
    from referee.audit.policyfile import load_policy
    from referee.audit.summary import render, summarize

    if runs is not None and runs < 1:
        raise UsageError("--samples must be at least 1")
    shown = _show_set(show)
    ctx = click.get_current_context()
    show_all = ctx.get_parameter_source("show") is not click.core.ParameterSource.DEFAULT
    skip_explicit = ctx.get_parameter_source("on_error") is not click.core.ParameterSource.DEFAULT
    if not _preview_run_dirs(traces):
        click.echo("nothing to audit: no SKIPPED step in the given run directories (PASS/FAIL/ERROR verdicts "
                   "stand as graded)")
        return 0
    lp = load_policy(policy)
    backends = _make_backends(backend, claims, base_url, model, concurrency, timeout, max_retries, tools)
    n_runs = runs or backends.default_runs
    cache_db = EvidenceCache(cache or out.with_name(out.name + ".cache.sqlite"))
    auditor = Auditor(lp, backends.extractor, backends.claim_reader, samples=n_runs, cache=cache_db)
    gold: dict[str, bool] = {}
    gold_rows: list[dict] = []

    def on_gold(item):
        gold[item.run_id] = item.gold.completed
        gold_rows.append({"run_id": item.run_id, "completed": item.gold.completed,
                          "group": (item.trace.meta or {}).get("group") if item.trace else None})

    def on_err(err):
        # already skipping: the hint to pass --on-error skip would be noise here
        where = ":".join(x for x in (err.file, err.place) if x)
        click.echo(f"referee: warning: skipped record: {where + ': ' if where else ''}{err.message}", err=True)

    def on_ignored(file, fields):
        click.echo(f"referee: warning: {file}: ignored fields trace v1 does not define: {', '.join(fields)} "
                   "(they are not evidence)", err=True)

    def on_dup(err):
        click.echo(f"referee: warning: {err}", err=True)

    t0 = time.perf_counter()
    with _progress(progress) as bar:
        task = bar.add_task("auditing", total=None, rate="")

        def on_record(rec):
            dt = time.perf_counter() - t0
            bar.update(task, advance=1, rate=f"{bar.tasks[0].completed / dt:.1f} rec/s" if dt > 0 else "")

        try:
            stats = audit_files(traces, auditor, out, fmt=fmt, on_error=on_error,
                                concurrency=concurrency if backends.client is not None else 1,
                                on_record=on_record, on_error_cb=on_err, on_gold=on_gold, on_duplicate=on_dup,
                                on_ignored=on_ignored)
        finally:
            cache_db.close()
            backends.close()
    elapsed = time.perf_counter() - t0
    if gold_out:
        from referee.fsutil import atomic_write_text

        atomic_write_text(gold_out, "".join(json.dumps(r) + "\n" for r in gold_rows))
    summary = summarize((rec for _, rec in iter_records(out)), gold or None)
    summary.duplicates = stats.duplicates
    click.echo(render(summary))
    _list_runs(out, shown, None if show_all else 20)
    rate = stats.written / elapsed if elapsed > 0 else 0.0
    click.echo(f"wrote {stats.written} records to {out} ({rate:.1f} rec/s); {stats.skipped_done} already there; "
               f"{len(stats.errors)} bad records skipped; {stats.duplicates} duplicate run_ids; "
               f"{auditor.backend_calls} backend calls")
    if summary_json:
        from referee.fsutil import atomic_write_json

        atomic_write_json(summary_json, {**summary.as_dict(), "written": stats.written, "elapsed_s": elapsed,
                                         "backend_calls": auditor.backend_calls, "errors": stats.errors})
    if stats.errors:
        click.echo(f"skipped {len(stats.errors)} bad record(s):", err=True)
        for e in stats.errors[:20]:
            click.echo(f"  {e}", err=True)
        if len(stats.errors) > 20:
            click.echo(f"  ... and {len(stats.errors) - 20} more" + (f" (all in {summary_json})" if summary_json
                                                                      else " (--summary-json FILE lists all)"),
                       err=True)
        # bad input is not a success unless the user said skipping is fine
        if not skip_explicit:
            click.echo("referee: exit 1 because records were skipped; pass --on-error skip to accept that", err=True)
            return 1
    return 0


def _show_set(show: str) -> set[str]:
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


def _list_runs(out: Path, shown: set[str], limit: int | None) -> None:
    """The runs to look at, one line each, and how many went to review when those are not listed."""
    from referee.audit.auditfile import iter_records
    from referee.audit.show import flag_lines

    latest = {rec.run_id: rec for _, rec in iter_records(out)}  # a re-audited run: its newest record
    lines = list(flag_lines(latest.values(), shown, limit))
    if lines:
        click.echo(f"runs to look at ({', '.join(sorted(shown))}; `referee show {out} RUN_ID` for one in full):")
        for line in lines:
            click.echo("  " + line)
    n_review = sum(1 for r in latest.values() if r.disposition == "review")
    if "review" not in shown and n_review:
        click.echo(f"{n_review} run(s) sent to review: --show review lists them")


@click.command("show")
@click.argument("audit_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("run_id")
@click.option("--traces", type=click.Path(exists=True, path_type=Path), default=None,
              help="The trace file the audit read, to show the text of the steps each finding cites.")
@click.option("--format", "fmt", default=None, help="Format of --traces (default: sniffed).")
def show_cmd(audit_file, run_id, traces, fmt):
    """Print one audit record readably: claim, evidence with its cited steps, disposition and why."""
    from referee.audit.show import find_record, find_view, render_record

    rec = find_record(audit_file, run_id)
    if rec is None:
        raise UsageError(f"no record for run_id '{run_id}'", file=str(audit_file),
                         fix="use a run_id the audit printed (or `referee audit ... --show all`)")
    view = find_view(traces, run_id, fmt) if traces is not None else None
    if traces is not None and view is None:
        click.echo(f"referee: warning: run_id '{run_id}' is not in {traces}; showing the record alone", err=True)
    click.echo(render_record(rec, view))
    return 0


def _preview_run_dirs(paths) -> bool:
    """Say, per run directory given, what is graded and what will be audited; False when nothing will be."""
    from referee.audit.pipeline import run_dirs_under
    from referee.audit.readers import is_trajectory_file
    from referee.audit.readers.referee_run import describe_run_dir, is_run_dir
    from referee.errors import RefereeError

    anything = False
    for p in paths:
        dirs = list(run_dirs_under(p)) if Path(p).is_dir() else []
        if not is_run_dir(p) and Path(p).is_dir() and any(
                (c.is_file() and (c.suffix in (".json", ".jsonl") or is_trajectory_file(c)))
                or (c.is_dir() and any(is_trajectory_file(t) for t in c.iterdir())) for c in Path(p).iterdir()):
            anything = True  # a folder of trace files (or of trajectories) too
        if not dirs:
            anything = anything or not is_run_dir(p)
            continue
        for d in dirs:
            try:
                info = describe_run_dir(d)
            except RefereeError:
                anything = True  # the reader reports it as a bad record
                continue
            click.echo(info.line())
            anything = anything or bool(info.skipped)
    return anything


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
    from referee.audit.policyfile import load_policy
    from referee.audit.replay import replay_file
    from referee.audit.summary import AuditSummary, render

    lp = load_policy(policy)
    gold_map: dict[str, bool] = {}
    if gold:
        from referee.evaluation.gold import load_gold

        gold_map = {rid: g.completed for rid, g in load_gold(gold).items()}
    summary = AuditSummary()
    fh = None
    if out is not None:
        fh = sys.stdout if str(out) == "-" else open(out.with_name(out.name + ".tmp"), "w", encoding="utf-8")
    try:
        for rec in replay_file(audit_file, lp):
            summary.add(rec, gold_map or None)
            if fh is not None:
                fh.write(rec.model_dump_json() + "\n")
    finally:
        if fh is not None and fh is not sys.stdout:
            fh.close()
    if out is not None and str(out) != "-":
        out.with_name(out.name + ".tmp").replace(out)
    click.echo(render(summary), err=fh is sys.stdout)
    return 0


COMMANDS = [audit, replay, show_cmd]
