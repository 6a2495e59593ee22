"""`referee audit` and `referee replay`: thin click commands over referee.audit (heavy imports inside)."""

from __future__ import annotations

import json
import math
import os
import sys
from contextlib import nullcontext
from pathlib import Path

import click

from referee.core.safetext import visible
from referee.core.timeouts import MAX_RETRIES, check_seconds
from referee.errors import UsageError


def _progress(enabled: bool):
    if not (enabled and sys.stderr.isatty()):  # rich costs a tenth of a second to import: only for a terminal
        return _NoProgress()
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), console=console, transient=True,
                    disable=not (enabled and console.is_terminal))


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


def _make_backends(backend: str, claims: str, base_url, model, concurrency, timeout, max_retries, tools=None,
                   **llm_options):
    """Both backends through their registries (referee.audit.run.backends); the LLM client is made only when
    a chosen backend declares `needs_llm`. `llm_options`: the other LLMConfig fields the command line sets."""
    from referee.audit.run.backends import make_backends

    def llm_client():
        from referee.core.llm import LLMClient, LLMConfig

        return LLMClient(LLMConfig.from_env(base_url, model, concurrency=concurrency, timeout_s=timeout,
                                            max_retries=max_retries, **llm_options))

    return make_backends(backend, claims, llm_client=llm_client, tools=tools)


def _warn(text) -> None:
    """One warning line on stderr: what a trace holds (a run_id, a file name) can never start a line of its own."""
    click.echo(f"referee: warning: {visible(text, keep_newlines=False)}", err=True)


LIVE_WARNINGS = 20  # warnings of one kind printed as they come; the rest are counted, and kept for --summary-json


class _Warnings:
    """An audit's warnings on stderr as they come, at most LIVE_WARNINGS of each kind: 50,000 duplicate run_ids
    print 20 lines and a count, not 50,000 lines. What is not printed is kept, for --summary-json."""

    def __init__(self, limit: int = LIVE_WARNINGS) -> None:
        self.limit = limit
        self.seen: dict[str, int] = {}
        self.held: list[str] = []
        self.kept: set[str] = set()

    def __call__(self, kind: str, text: str, keep: bool = True) -> None:
        """Print `text`, or, past the limit of its kind, keep it (`keep=False`: the summary lists that kind)."""
        n = self.seen[kind] = self.seen.get(kind, 0) + 1
        if n <= self.limit:
            _warn(text)
            return
        if n == self.limit + 1:
            _warn(f"more warnings of this kind ({kind}) follow: not printed; the last lines count them")
        if keep:
            self.kept.add(kind)
            self.held.append(str(text))

    def close(self, summary_json: Path | None, stopped: bool = False) -> None:
        """The count of what was not printed, and where to read it (nowhere when the audit stopped early)."""
        if self.held:
            kinds = ", ".join(f"{n - self.limit} {k}" for k, n in self.seen.items() if k in self.kept)
            where = "" if stopped else f": listed in {summary_json} (warnings_not_printed)" if summary_json else \
                ": --summary-json FILE lists them"
            click.echo(f"referee: note: {len(self.held)} warnings were not printed ({kinds}){where}", err=True)


def _temperature(ctx, param, value):
    """--temperature: a number, or `none` to send none (models that accept only their default)."""
    if value is None:
        return 0.0
    if str(value).lower() == "none":
        return None
    try:
        t = float(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is neither a number nor 'none'") from None
    if not math.isfinite(t) or t < 0:
        raise click.BadParameter(f"{value!r}: a temperature is a number of 0 or more (or 'none')")
    return t


def _seconds(ctx, param, value):
    """A time limit, held to what a plan's timeouts are held to (more than 0 seconds, at most a day)."""
    if value is not None:
        try:
            check_seconds(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None
    return value


@click.command("audit")
@click.argument("traces", nargs=-1, required=True)
@click.option("--format", "fmt", default=None,
              help="A reader from `referee readers`, e.g. openai-chat, anthropic-messages, inspect-ai "
                   "(default: sniffed per file and per run folder). In a walked "
                   "folder it reads every file and leaves out run folders of another format.")
@click.option("--include", "include", multiple=True, metavar="GLOB",
              help="In walked folders, audit only the files and run folders whose path or name matches (repeatable).")
@click.option("--allow-pickle", is_flag=True,
              help="Read pickled logs (BrowserGym step_*.pkl.gz) with referee's restricted unpickler: loading a "
                   "pickle can run code, so this is off by default.")
@click.option("--session-runs", "session_runs", type=click.Choice(["per-prompt", "whole"]), default="per-prompt",
              show_default=True, help="A coding agent's session of many prompts (Claude Code, Codex CLI, Gemini CLI, "
                                      "...): one run per user prompt (<session>#<n>), or the whole session as one run.")
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
@click.option("--on-error", type=click.Choice(["skip", "stop"]), default="skip", show_default=True,
              help="A bad trace record: skip it (listed at the end) or stop at it. By default bad records are "
                   "skipped but the exit code is 1; --on-error skip given explicitly accepts them (exit 0).")
@click.option("--base-url", default=None, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
@click.option("--model", default=None, help="model name for the llm backend")
@click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True,
              help="traces in flight (llm backend)")
@click.option("--workers", type=int, default=None,
              help="processes for backends that compute (rules): default every core, started only for work "
                   "that pays for them; N starts N at once; 1 audits in this process")
@click.option("--executor", "executor_kind", type=click.Choice(["local", "dask"]), default="local", show_default=True,
              help="where chunks of traces are audited: a local process pool, or Dask (docs/scale.md)")
@click.option("--scheduler", default=None, metavar="tcp://HOST:PORT",
              help="with --executor dask: a running Dask scheduler (default: a LocalCluster of --workers)")
@click.option("--chunk-size", type=int, default=50, show_default=True, help="traces per chunk sent to a worker")
@click.option("--record-cpu-s", type=click.FloatRange(min=0.1), default=10.0, show_default=True,
              help="CPU seconds one record's audit may take (rules and other computing backends); past it the record "
                   "is review, and a worker running it is ended (docs/scale.md)")
@click.option("--record-wall-s", type=click.FloatRange(min=0.1), default=30.0, show_default=True,
              help="wall seconds one record's audit may take")
@click.option("--record-memory-mib", type=click.IntRange(min=16), default=512, show_default=True,
              help="MiB a process may grow by while it audits one record")
@click.option("--timeout", type=float, default=60.0, show_default=True, callback=_seconds,
              help="seconds per model request, from connect to the last byte of the answer")
@click.option("--connect-timeout", type=float, default=10.0, show_default=True, callback=_seconds,
              help="llm backend: seconds to open a connection (a server that is down fails fast)")
@click.option("--max-tokens", type=click.IntRange(min=1), default=None,
              help="llm backend: a limit on each answer's tokens (sent as max_tokens, or max_completion_tokens to "
                   "models that refuse max_tokens)")
@click.option("--temperature", default="0", callback=_temperature, show_default=True,
              help="llm backend: sampling temperature, or 'none' to send none")
@click.option("--api-key-env", default=None, metavar="VAR",
              help="llm backend: the environment variable that holds the API key (default OPENAI_API_KEY)")
@click.option("--max-retries", type=click.IntRange(min=0), default=MAX_RETRIES, show_default=True,
              help="llm backend: retries of one model call (429, 5xx, timeouts) before it counts as failed.")
@click.option("--gold-out", type=click.Path(path_type=Path), default=None, help="write gold labels found in the traces")
@click.option("--gold-scorer", default=None, metavar="NAME",
              help="take gold from this scorer of an Inspect AI log (C/I, 1/0, a number; NAME/KEY for one value "
                   "of several); name one that checks the state, not the answer")
@click.option("--gold-threshold", type=float, default=1.0, show_default=True,
              help="a --gold-scorer value at least this is completed")
@click.option("--summary-json", type=click.Path(path_type=Path), default=None, help="also write the summary as JSON")
@click.option("--summary-md", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="also write a Markdown summary for a CI job page (dispositions, each flag and review with its "
                   "reason); it is also appended to the file $GITHUB_STEP_SUMMARY names when that is set")
@click.option("--junit", "junit", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="also write JUnit XML, one testcase per run: flag = failure, review = skipped with the reason")
@click.option("--reaudit-changed", is_flag=True,
              help="audit again the runs whose record in --out was made with another backend, model, prompt, "
                   "samples, claim reader, policy or view version (default: stop and say so)")
@click.option("--progress/--no-progress", default=True, help="Show a progress bar on a terminal.")
@click.option("--show", "show", default="flag", show_default=True,
              help="Which runs to list after the summary: flag, review, pass (comma-separated), all, or none. "
                   "Given explicitly, every such run is listed (default: the first 20 flags).")
@click.option("--allow-unsigned", is_flag=True,
              help="Read referee run directories without a seal this machine can check, marked unverified.")
def audit(traces, fmt, include, allow_pickle, backend, claims, tools, policy, runs, out, cache, on_error, base_url,
          model, concurrency, workers, executor_kind, scheduler, chunk_size, timeout, connect_timeout, max_tokens,
          temperature, api_key_env, max_retries, gold_out, gold_scorer, gold_threshold, summary_json,
          reaudit_changed, progress, show, allow_unsigned, session_runs, record_cpu_s, record_wall_s,
          record_memory_mib, summary_md=None, junit=None):
    """Audit finished agent runs: claim from the report alone, evidence from the trace alone, policy decides.

    TRACES are trace files, run folders (a referee run directory: only its SKIPPED steps, as advisory
    records, after its seal is checked and it is graded again; a BrowserGym/AgentLab experiment folder;
    an OpenHands session), folders walked for them, or quoted globs. `referee readers` lists the formats.
    """
    import time

    from referee.audit.ingest.readers.referee_run import allowing_unsigned

    # run directories are read inside this command only: the setting ends with it
    click.get_current_context().with_resource(allowing_unsigned(allow_unsigned))

    from referee.audit.ingest.inputs import InputItem, InputOptions, expand_args, own_outputs, pickle_only_folders, walk

    traces = expand_args(traces)
    cache = cache or out.with_name(out.name + ".cache.sqlite")
    outputs = own_outputs(traces, out=out, cache=cache, gold_out=gold_out, summary_json=summary_json)
    refused = [] if allow_pickle else pickle_only_folders(traces, fmt)
    if refused:
        raise UsageError(f"{refused[0]}: a BrowserGym experiment whose steps are only in pickles (step_*.pkl.gz), "
                         "and loading a pickle can run code" + (f" ({len(refused)} such folders)" if len(refused) > 1
                                                               else ""),
                         fix="pass --allow-pickle to read them with referee's restricted unpickler (data classes "
                             "only), or export a JSON tape (tape.json)")
    left_out: list[str] = []
    earlier: list[str] = []  # an earlier audit's own files met by the walk (another --out): left out, and said so
    unnamed: list[str] = []  # files a walk left out by their names that look like an agent's log: said so
    inputs = InputOptions(include=tuple(include), allow_pickle=allow_pickle, session_runs=session_runs,
                          on_left_out=lambda path, kind: left_out.append(f"{path} ({kind})"), outputs=outputs,
                          on_own_output=lambda path, what: earlier.append(f"{path} ({what})"),
                          on_skipped=lambda path, what: unnamed.append(f"{path} ({what})"))
    probe = InputOptions(include=tuple(include), outputs=outputs)  # says nothing: the audit's own walk will
    if include and not any(isinstance(item, InputItem) for item in walk(traces, fmt, probe)):
        raise UsageError(f"--include {' '.join(include)} matches no file or run folder in "
                         f"{', '.join(map(str, traces))}",
                         fix="check the pattern: it is matched against the path below the walked folder or the name")

    from referee.core.executors import check_options

    ex_options = check_options(executor_kind, workers, scheduler, chunk_size)
    from referee.audit.decide.policyfile import load_policy
    from referee.audit.present.summary import render, summarize
    from referee.audit.run.auditfile import iter_records
    from referee.audit.run.cache import EvidenceCache
    from referee.audit.run.pipeline import Auditor, audit_files
    from referee.audit.trace import GoldScorer

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
    backends = _make_backends(backend, claims, base_url, model, concurrency, timeout, max_retries, tools,
                              connect_timeout_s=connect_timeout, max_tokens=max_tokens, temperature=temperature,
                              api_key_env=api_key_env)
    n_runs = runs or backends.default_runs
    from referee.audit.run.parallel import executor_for

    executor = executor_for(backends.client is not None, ex_options, workers_given=workers is not None,
                            say=lambda m: click.echo(m, err=True))
    cache_db = EvidenceCache(cache)
    from referee.audit.run.budget import RecordBudget

    # a backend that waits on a model runs on threads: the record budget holds for those that compute
    budget = None if backends.client is not None else RecordBudget(record_cpu_s, record_wall_s, record_memory_mib)
    auditor = Auditor(lp, backends.extractor, backends.claim_reader, samples=n_runs, cache=cache_db, budget=budget)
    gold: dict[str, bool] = {}
    gold_rows: list[dict] = []

    def on_gold(item):
        gold[item.run_id] = item.gold.completed
        group = (item.trace.meta or {}).get("group") if item.trace else item.group
        gold_rows.append({"run_id": item.run_id, "completed": item.gold.completed,
                          "group": str(group) if group not in (None, "") else None,
                          "task": item.trace.task if item.trace else item.task})

    warn = _Warnings()

    repeats: dict[tuple[str | None, str], list[str]] = {}  # (file, message) -> the places it came again

    def on_err(err):
        # one message per file is said once: 2,000 lines of another tool's log refused alike are one line and a count
        if (key := (err.file, err.message)) in repeats:
            repeats[key].append(err.place or "?")
            return
        repeats[key] = []
        # already skipping: the hint to pass --on-error skip would be noise here
        where = ":".join(x for x in (err.file, err.place) if x)
        warn("skipped records", f"skipped record: {where + ': ' if where else ''}{err.message}", keep=False)

    def on_ignored(file, fields):
        warn("ignored fields",
             f"{file}: ignored fields trace v1 does not define: {', '.join(fields)} (they are not evidence)")

    t0 = time.perf_counter()
    with _progress(progress) as bar:
        task = bar.add_task("auditing", total=None, rate="")

        def on_record(rec):
            dt = time.perf_counter() - t0
            bar.update(task, advance=1, rate=f"{bar.tasks[0].completed / dt:.1f} rec/s" if dt > 0 else "")

        try:
            stats = audit_files(traces, auditor, out, fmt=fmt, on_error=on_error,
                                concurrency=concurrency if backends.client is not None else 1,
                                on_record=on_record, on_error_cb=on_err, on_gold=on_gold,
                                on_duplicate=lambda e: warn("duplicate run_ids", e), on_ignored=on_ignored,
                                on_note=lambda n: warn("notes", n), inputs=inputs, reaudit_changed=reaudit_changed,
                                gold_scorer=GoldScorer(gold_scorer, gold_threshold) if gold_scorer else None,
                                executor=executor)
        except BaseException:
            warn.close(None, stopped=True)
            raise
        finally:
            cache_db.close()
            backends.close()
    elapsed = time.perf_counter() - t0
    warn.close(summary_json)
    for (file, message), again in repeats.items():
        if again:
            _warn(f"{file}: \"{message[:80]}{'...' if len(message) > 80 else ''}\" came for {len(again)} more "
                  "record(s) of this file: not printed again")
    if earlier:
        click.echo(f"referee: note: left out {len(earlier)} file(s) referee wrote, not traces: {_first(earlier)}",
                   err=True)
    if unnamed:
        click.echo(f"referee: note: the walk left out {len(unnamed)} file(s) whose names say no trace but which look "
                   f"like an agent's log: {_first(unnamed)}; give them by name, or pass --include GLOB", err=True)
    if left_out:
        click.echo(f"referee: note: --format {fmt} left out {len(left_out)} run folder(s) of another format: "
                   f"{_first(left_out)}", err=True)
    if stats.scorers:
        click.echo(f"referee: note: the runs carry scores ({', '.join(sorted(stats.scorers))}); to use one as gold, "
                   "pass --gold-scorer NAME (one that checks the state the run left, not the agent's answer)",
                   err=True)
    if gold_out:  # JSONL, or CSV for a .csv name, as `referee eval gold -o` writes them
        from referee.evaluation.gold import GoldLabel, write_gold  # only then: an audit imports no evaluation

        write_gold(gold_out, [GoldLabel(**r) for r in gold_rows])
        if not gold_rows:  # an empty gold file must not pass for labels
            click.echo(f"referee: note: --gold-out {gold_out}: no gold found beside these runs, the file holds no "
                       "label (gold is read from a record's gold, a tau-bench reward, a SWE-bench report.json beside "
                       "trajs/ or in logs/<instance>/, or an Inspect AI scorer named by --gold-scorer)", err=True)
    listed: list = []  # the records --show asks for, kept from the one pass the summary makes
    looked_at: list = []  # flags and reviews, for --summary-md and $GITHUB_STEP_SUMMARY
    cases: list = []  # every run, small, for --junit
    page = summary_md is not None or bool(os.environ.get("GITHUB_STEP_SUMMARY"))

    def records():
        from referee.audit.present.ci import case_of

        # the newest record of each run_id; a damaged line the resume warned of (and left) is passed over here too
        for _, rec in iter_records(out, skip_damaged=True):
            if rec.disposition in shown:
                listed.append(rec)
            if page and rec.disposition != "pass" and len(looked_at) < 1000:
                looked_at.append(rec)
            if junit is not None:
                cases.append(case_of(rec))
            yield rec

    summary = summarize(records(), gold or None)
    summary.duplicates = stats.duplicates
    summary.stale, summary.retried, summary.reaudited = stats.stale, stats.retried, stats.reaudited
    click.echo(render(summary))
    _list_runs(out, listed, shown, None if show_all else 20, summary.as_dict()["dispositions"]["review"])
    _ci_outputs(summary, looked_at, cases, out, summary_json, summary_md, junit)
    rate = stats.written / elapsed if elapsed > 0 else 0.0
    click.echo(f"wrote {stats.written} records to {out} ({rate:.1f} rec/s); {stats.skipped_done} already there; "
               f"{stats.stale} stale; {len(stats.errors)} bad records skipped; {stats.duplicates} duplicate run_ids; "
               f"{auditor.backend_calls} backend calls")
    # skipping was asked for: each fix's "or pass --on-error skip" is noise, in the listing and the summary alike
    errors = [e.replace(" or pass --on-error skip", "") for e in stats.errors] if skip_explicit else stats.errors
    if summary_json:
        from referee.core.fsutil import atomic_write_json

        atomic_write_json(summary_json, {**summary.as_dict(), "written": stats.written, "elapsed_s": elapsed,
                                         "backend_calls": auditor.backend_calls, "errors": errors,
                                         "warnings_not_printed": [visible(w, keep_newlines=False)
                                                                  for w in warn.held]})
    if stats.errors:
        click.echo(f"skipped {len(stats.errors)} bad record(s):", err=True)
        lines = _grouped(errors, repeats)
        for e in lines[:20]:
            click.echo(f"  {visible(e, keep_newlines=False)}", err=True)
        if len(lines) > 20:
            click.echo(f"  ... and {len(lines) - 20} more" + (f" (all in {summary_json})" if summary_json
                                                               else " (--summary-json FILE lists all)"),
                       err=True)
        # bad input is not a success unless the user said skipping is fine
        if not skip_explicit:
            click.echo("referee: exit 1 because records were skipped; pass --on-error skip to accept that", err=True)
            return 1
    return 0


def _ci_outputs(summary, looked_at: list, cases: list, out: Path, summary_json: Path | None,
                summary_md: Path | None, junit: Path | None) -> None:
    """--junit, --summary-md and $GITHUB_STEP_SUMMARY (referee/audit/present/ci.py); one that cannot be written is a
    warning: the audit file stands."""
    from referee.audit.present.ci import audit_markdown, write_audit_junit
    from referee.report.markdown import emit_summary

    try:
        if junit is not None:
            write_audit_junit(cases, junit)
        emit_summary(lambda base: audit_markdown(summary, looked_at, out, base, summary_json), summary_md)
    except OSError as exc:
        _warn(f"{exc.filename or ''}: not written: {exc.strerror or exc}")


def _grouped(errors: list[str], repeats: dict[tuple[str | None, str], list[str]]) -> list[str]:
    """The bad records to list: a message that came again in one file is listed once, with how many times and where.

    >>> _grouped(["f:1: not JSON; fix it", "f:2: not JSON; fix it", "g:1: other"], {("f", "not JSON"): ["2"]})
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
        first = e[len(key[0]) + 1:].split(":", 1)[0]
        shown = [first, *again[:9]]
        out.append(f"{e} ({len(again) + 1} records of {key[0]} alike: lines {', '.join(shown)}"
                   f"{' ...' if len(again) > 9 else ''})")
    return out


def _first(items: list[str], n: int = 5) -> str:
    """The first `n` items, comma-separated, and `...` when there are more.

    >>> _first(["a", "b", "c"], 2)
    'a, b ...'
    """
    return ", ".join(items[:n]) + (" ..." if len(items) > n else "")


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


def _list_runs(out: Path, records: list, shown: set[str], limit: int | None, n_review: int) -> None:
    """The runs to look at, one line each, and how many went to review when those are not listed."""
    from referee.audit.present.show import flag_lines

    lines = list(flag_lines(records, shown, limit))
    if lines:
        click.echo(f"runs to look at ({', '.join(sorted(shown))}; `referee show {out} RUN_ID` for one in full):")
        for line in lines:
            click.echo("  " + line)
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
    from referee.audit.present.show import find_record, find_view, render_record

    rec = find_record(audit_file, run_id)
    if rec is None:
        raise UsageError(f"no record for run_id '{run_id}'", file=str(audit_file),
                         fix="use a run_id the audit printed (or `referee audit ... --show all`)")
    view = find_view(traces, run_id, fmt) if traces is not None else None
    if traces is not None and view is None:
        _warn(f"run_id '{run_id}' is not in {traces}; showing the record alone")
    click.echo(render_record(rec, view))
    return 0


def _preview_run_dirs(paths) -> bool:
    """Say, per run directory given, what is graded and what will be audited; False when nothing will be."""
    from referee.audit.ingest.readers import is_trajectory_file
    from referee.audit.ingest.readers.referee_run import describe_run_dir, is_run_dir
    from referee.audit.run.pipeline import run_dirs_under
    from referee.errors import RefereeError

    anything = False
    for p in paths:
        dirs = list(run_dirs_under(p)) if Path(p).is_dir() else []
        if not is_run_dir(p) and Path(p).is_dir() and any(
                (c.is_file() and (c.suffix in (".json", ".jsonl", ".eval") or is_trajectory_file(c)))
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
            anything = anything or bool(info.skipped) or info.refused  # a refused run: the reader says why
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
