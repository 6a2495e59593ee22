"""`referee audit` and `referee replay`: thin click commands over referee.audit (heavy imports inside)."""

from __future__ import annotations

import json
import sys
from contextlib import nullcontext
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
@click.option("--out", type=click.Path(path_type=Path), required=True,
              help="audit.jsonl to append to (resumable; one writer at a time)")
@click.option("--cache", type=click.Path(path_type=Path), default=None,
              help="SQLite evidence cache (default OUT.cache.sqlite)")
@click.option("--on-error", type=click.Choice(["skip", "stop"]), default="skip", show_default=True)
@click.option("--base-url", default=None, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
@click.option("--model", default=None, help="model name for the llm backend")
@click.option("--concurrency", type=int, default=8, show_default=True, help="traces in flight (llm backend)")
@click.option("--timeout", type=float, default=60.0, show_default=True,
              help="seconds per model request, from connect to the last byte of the answer")
@click.option("--max-retries", type=int, default=4, show_default=True)
@click.option("--gold-out", type=click.Path(path_type=Path), default=None, help="write gold labels found in the traces")
@click.option("--summary-json", type=click.Path(path_type=Path), default=None, help="also write the summary as JSON")
@click.option("--reaudit-changed", is_flag=True,
              help="audit again the runs whose record in --out was made with another backend, model, prompt, "
                   "samples, claim reader, policy or view version (default: stop and say so)")
@click.option("--progress/--no-progress", default=True)
def audit(traces, fmt, backend, claims, tools, policy, runs, out, cache, on_error, base_url, model, concurrency,
          timeout, max_retries, gold_out, summary_json, reaudit_changed, progress):
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
                                on_ignored=on_ignored, reaudit_changed=reaudit_changed)
        finally:
            cache_db.close()
            backends.close()
    elapsed = time.perf_counter() - t0
    if gold_out:
        from referee.fsutil import atomic_write_text

        atomic_write_text(gold_out, "".join(json.dumps(r) + "\n" for r in gold_rows))
    summary = summarize((rec for _, rec in iter_records(out)), gold or None)
    summary.duplicates = stats.duplicates
    summary.stale, summary.retried, summary.reaudited = stats.stale, stats.retried, stats.reaudited
    click.echo(render(summary))
    rate = stats.written / elapsed if elapsed > 0 else 0.0
    click.echo(f"wrote {stats.written} records to {out} ({rate:.1f} rec/s); {stats.skipped_done} already there; "
               f"{stats.stale} stale; {len(stats.errors)} bad records skipped; {stats.duplicates} duplicate run_ids; "
               f"{auditor.backend_calls} backend calls")
    if summary_json:
        from referee.fsutil import atomic_write_json

        atomic_write_json(summary_json, {**summary.as_dict(), "written": stats.written, "elapsed_s": elapsed,
                                         "backend_calls": auditor.backend_calls, "errors": stats.errors})
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
              help="gold labels (JSONL: run_id, completed) to report misreports")
def replay(audit_file, policy, out, gold):
    """Recompute trace states and dispositions under another policy, from cached evidence only (no model)."""
    from referee.audit.policyfile import load_policy
    from referee.audit.replay import replay_file
    from referee.audit.summary import AuditSummary, render

    from referee.lockfile import exclusive

    lp = load_policy(policy)
    gold_map: dict[str, bool] = {}
    if gold:
        from referee.fsutil import iter_jsonl

        from referee.errors import GoldError

        for lineno, line in iter_jsonl(gold):
            try:
                row = json.loads(line)
                gold_map[str(row["run_id"])] = bool(row["completed"])
            except (ValueError, KeyError, TypeError):
                raise GoldError("a gold line needs JSON with run_id and completed", file=str(gold), place=str(lineno),
                                fix='write one {"run_id": ..., "completed": true|false} per line') from None
    summary = AuditSummary()
    to_file = out is not None and str(out) != "-"
    # replacing a file a running `referee audit` appends to would lose its records: take its lock
    with exclusive(out, by="referee replay", fix="wait for it to finish, or give another --out") if to_file \
            else nullcontext():
        fh = None
        if out is not None:
            fh = sys.stdout if not to_file else open(out.with_name(out.name + ".tmp"), "w", encoding="utf-8")
        try:
            for rec in replay_file(audit_file, lp):
                summary.add(rec, gold_map or None)
                if fh is not None:
                    fh.write(rec.model_dump_json() + "\n")
        finally:
            if fh is not None and fh is not sys.stdout:
                fh.close()
        if to_file:
            out.with_name(out.name + ".tmp").replace(out)
    click.echo(render(summary), err=fh is sys.stdout)
    return 0


COMMANDS = [audit, replay]
