"""`referee eval`: score audit records against gold labels: baselines, policies, judges, splits, the intervention."""

from __future__ import annotations

from pathlib import Path

import click

from referee.core.timeouts import MAX_RETRIES
from referee.errors import UsageError

DEFAULT_CMD = "report"


class DefaultGroup(click.Group):
    """A group that runs `report` when the first argument is not a subcommand (`referee eval AUDIT --gold G`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = [DEFAULT_CMD, *args]
        return super().parse_args(ctx, args)


@click.group("eval", cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
def eval_group() -> None:
    """Measure the auditor: `referee eval AUDIT.jsonl --gold LABELS` (or a subcommand below)."""


def _bootstrap_options(f):
    f = click.option("--level", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
                     help="Confidence level of the intervals.")(f)
    f = click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")(f)
    f = click.option("--resamples", type=click.IntRange(0, 1_000_000), default=1000, show_default=True,
                     help="Bootstrap resamples (0: no intervals).")(f)
    return f


def _llm_options(f):
    f = click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help="Where judge answers are cached (default: beside the output, .referee-cache/).")(f)
    f = click.option("--concurrency", type=click.IntRange(1, 256), default=8, show_default=True,
                     help="Judge calls in flight at once.")(f)
    f = click.option("--max-retries", type=click.IntRange(min=0), default=MAX_RETRIES, show_default=True,
                     help="Retries of one judge call (429, 5xx, timeouts) before it counts as failed.")(f)
    f = click.option("--k", "k", type=int, default=None, help="Votes needed for a majority (default: n // 2 + 1).")(f)
    f = click.option("--votes", type=click.IntRange(1, 50), default=5, show_default=True,
                     help="Judge runs per record.")(f)
    f = click.option("--base-url", default=None, help="OpenAI-compatible /v1 URL (or OPENAI_BASE_URL).")(f)
    f = click.option("--model", default=None, help="Judge model name.")(f)
    f = click.option("--format", "fmt", default=None, help="Trace format (referee, tau-bench, openai-chat, ...).")(f)
    return f


def _output_options(f):
    f = click.option("-o", "--output", "--out", "output", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="Write the report to this file instead of stdout.")(f)
    f = click.option("--markdown", "as_markdown", is_flag=True, help="Print Markdown tables.")(f)
    f = click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")(f)
    return f


def _spec(resamples: int, seed: int, level: float):
    from referee.evaluation.bootstrap import BootstrapSpec

    return BootstrapSpec(resamples=resamples, seed=seed, level=level) if resamples else None


def _prediction_files(predictions) -> list[Path]:
    """The files of `--predictions NAME=FILE` (a malformed one is left to run_eval to name)."""
    return [Path(file) for name, sep, file in (p.partition("=") for p in predictions) if sep and file]


def _emit(text: str | None, output: Path | None) -> None:
    if text is None:
        return
    if output is not None:
        from referee.core.fsutil import atomic_write_text

        atomic_write_text(output, text if text.endswith("\n") else text + "\n")
        click.echo(f"wrote {output}", err=True)
    else:
        click.echo(text)


def _client(model, base_url, concurrency):
    from referee.core.llm import LLMClient, LLMConfig

    return LLMClient(LLMConfig.from_env(base_url, model, concurrency=concurrency))


@eval_group.command(DEFAULT_CMD)
@click.argument("audit", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--gold", "gold_path", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Gold labels (CSV or JSONL: run_id, completed, optional claim, group, split).")
@click.option("--policy", "policies", multiple=True,
              help="Replay the records under this policy (name or YAML file); repeatable. "
                   "Default: every shipped policy.")
@click.option("--no-policies", is_flag=True, help="Do not replay any policy.")
@click.option("--baseline", "baseline_names", multiple=True,
              help="Baselines to include (default: trust-claim, flag-all, claim-gate-only).")
@click.option("--judge", "judges", multiple=True, type=click.Choice(["claim-aware", "prompt-blind"]),
              help="LLM judge baselines on the same records (need --traces and a model).")
@click.option("--traces", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="The traces the audit was made from (for the judges).")
@click.option("--predictions", multiple=True, metavar="NAME=FILE",
              help="Another method's dispositions (JSONL/CSV of run_id, disposition); repeatable.")
@click.option("--by", default="task_class,group,split", show_default=True,
              help="Breakdown axes (comma-separated; empty for none).")
@click.option("--no-logo", is_flag=True, help="Skip leave-one-group-out.")
@click.option("--breakdown-for", "breakdown_for", multiple=True,
              help="Methods whose breakdown tables are printed (default: the auditor). JSON has all.")
@click.option("--max-rows", type=click.IntRange(0), default=20, show_default=True,
              help="Most slices per breakdown table in rich/Markdown output (0: all); JSON has every slice.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the load vs silent-pass plot here (.png, .pdf or .svg; default: AUDIT stem + .tradeoff.png).")
@click.option("--no-plot", is_flag=True, help="Do not draw the trade-off plot.")
@click.option("--records-out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write every scored record with each method's disposition (JSONL).")
@click.option("--claim-channel", type=click.Choice(["reader", "gold"]), default="reader", show_default=True,
              help="gold: every method reads the gold claim where gold has one (a claim-reader diagnostic).")
@click.option("--strict", is_flag=True, help="Fail when audit records and gold labels do not match one to one.")
@_bootstrap_options
@_llm_options
@_output_options
def report_cmd(audit, gold_path, policies, no_policies, baseline_names, judges, traces, predictions, by, no_logo,
               breakdown_for, max_rows, plot_path, no_plot, records_out, claim_channel, strict, resamples, seed,
               level, fmt, model, base_url, votes, k, concurrency, max_retries, cache_dir, as_json, as_markdown,
               output) -> None:
    """Score every method and policy on AUDIT.jsonl against gold labels, with bootstrap intervals."""
    from referee.audit.ingest.inputs import own_outputs
    from referee.evaluation.bootstrap import BootstrapSpec
    from referee.evaluation.run import EvalOptions, run_eval

    if as_json and as_markdown:
        raise UsageError("--json and --markdown are exclusive", fix="pick one")
    axes = tuple(a.strip() for a in by.split(",") if a.strip())
    for a in axes:
        if a not in ("task_class", "group", "split"):
            raise UsageError(f"unknown breakdown axis '{a}'", fix="use task_class, group, split")
    if not no_plot:
        explicit = plot_path is not None
        plot_path = plot_path or audit.with_name(audit.stem + ".tradeoff.png")
    # before anything is written: an output that is an input (or another output) would be written over
    own_outputs([audit, gold_path, *([traces] if traces else []), *_prediction_files(predictions),
                 *map(Path, policies)], output=output, records_out=records_out,
                plot=None if no_plot else plot_path)
    opts = EvalOptions(
        audit=audit, gold=gold_path, policies=tuple(policies), no_policies=no_policies,
        baselines=tuple(baseline_names) or None, judges=tuple(judges), traces=traces, trace_format=fmt,
        predictions=tuple(predictions), axes=axes, logo=not no_logo,
        breakdown_for=tuple(breakdown_for) or None, records_out=records_out, strict=strict,
        claim_channel=claim_channel,
        spec=BootstrapSpec(resamples=max(resamples, 1), seed=seed, level=level), intervals=resamples > 0,
        model=model, base_url=base_url, votes=votes, k=k, concurrency=concurrency, max_retries=max_retries,
        cache_dir=cache_dir)
    rep, tables_for = run_eval(opts)
    from referee.evaluation import render

    if not no_plot:
        try:
            from referee.evaluation.plot import plot_tradeoff

            plot_tradeoff(rep, plot_path)
            click.echo(f"wrote trade-off plot {plot_path}", err=True)
            from referee.evaluation.plot import plot_risk_curves, risk_plot_path

            if plot_risk_curves(rep, risk_plot_path(plot_path)):
                click.echo(f"wrote risk curves {risk_plot_path(plot_path)}", err=True)
        except Exception as exc:  # matplotlib missing: only an error when the plot was asked for by path
            from referee.errors import MissingExtraError

            if explicit or not isinstance(exc, MissingExtraError):
                raise
            click.echo(f"referee: no plot: {exc}", err=True)
    if as_json:
        _emit(render.render(rep, "json"), output)
    elif as_markdown:
        _emit(render.render(rep, "markdown", breakdown_for=tables_for, max_rows=max_rows), output)
    elif output is not None:
        _emit(render.render(rep, "markdown", breakdown_for=tables_for, max_rows=max_rows), output)
    else:
        render.render(rep, "rich", breakdown_for=tables_for, max_rows=max_rows)


@eval_group.command("intervention")
@click.argument("traces", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--gold", "gold_path", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Gold labels (CSV or JSONL: run_id, completed, optional claim).")
@click.option("--audit", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Audit records whose shared claim reading is used where gold has no claim.")
@_bootstrap_options
@_llm_options
@_output_options
def intervention_cmd(traces, gold_path, audit, resamples, seed, level, fmt, model, base_url, votes, k, concurrency,
                     max_retries, cache_dir, as_json, as_markdown, output) -> None:
    """Run one trace judge with and without the report on the same records: recall shift, flips, sign test."""
    from referee.audit.ingest.inputs import own_outputs
    from referee.evaluation.run import run_intervention_cmd

    own_outputs([traces, gold_path, *([audit] if audit else [])], output=output)

    rep = run_intervention_cmd(traces=traces, gold=gold_path, audit=audit, fmt=fmt, model=model, base_url=base_url,
                               votes=votes, k=k, concurrency=concurrency, max_retries=max_retries,
                               cache_dir=cache_dir,
                               spec=_spec(resamples, seed, level))
    if as_json:
        _emit(rep.model_dump_json(indent=2), output)
        return
    from referee.evaluation.intervention import intervention_lines
    from referee.evaluation.render import detection_table, gating_table, print_rich, to_markdown

    tables = [detection_table(None, rep.gated, "Claim-gated detection view"),
              gating_table(None, rep.gated, "Claim-gated gating view")]
    if as_markdown or output is not None:
        _emit(to_markdown(tables, intervention_lines(rep)), output)
    else:
        print_rich(tables, intervention_lines(rep))


@eval_group.command("split")
@click.argument("split_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--by-task", is_flag=True, help="Also fail when one task appears in two splits.")
@click.option("--audit", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Audit records to read task texts from when the split file has no task column.")
@click.option("--json", "as_json", is_flag=True, help="Print the check as JSON.")
def split_cmd(split_file, by_task, audit, as_json) -> int:
    """Check a split file: counts per split and group; no run_id (or, with --by-task, no task) in two splits."""
    import json as _json

    from referee.evaluation.splits import check_splits, split_lines, tasks_from_audit

    tasks = tasks_from_audit(audit) if (by_task and audit) else None
    rep = check_splits(split_file, by_task=by_task, tasks=tasks)
    if as_json:
        click.echo(_json.dumps(rep.to_dict(), indent=2))
    else:
        for line in split_lines(rep):
            click.echo(line)
    if not rep.ok:
        click.get_current_context().exit(1)
    return 0


@eval_group.command("gold")
@click.argument("traces", nargs=-1, required=True)
@click.option("--format", "fmt", default=None, help="Trace format (a reader that knows gold, e.g. tau-bench).")
@click.option("-o", "--output", "--out", "output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Gold file to write (.jsonl or .csv).")
@click.option("--gold-scorer", default=None, metavar="NAME",
              help="Inspect AI logs: the scorer whose value is gold (one that checks the state, not the answer).")
@click.option("--gold-threshold", type=float, default=1.0, show_default=True,
              help="A --gold-scorer value at least this is completed.")
@click.option("--on-error", type=click.Choice(["stop", "skip"]), default="stop", show_default=True,
              help="A record that cannot be read: stop there (nothing written), or skip it and say so.")
def gold_cmd(traces, fmt, output, gold_scorer, gold_threshold, on_error) -> None:
    """Write the gold labels a trace reader finds beside the traces (tau-bench `reward`, an Inspect AI scorer).

    TRACES are what `referee audit` takes: trace files, run folders, folders walked for them, quoted globs.
    """
    from referee.audit.ingest.inputs import expand_args, own_outputs
    from referee.cli.audit_console import warn as _warn
    from referee.evaluation.gold import gold_from_traces, write_gold

    paths = expand_args(traces)
    outputs = own_outputs(paths, output=output)  # refused before anything is read: -o is one of TRACES
    bad: list[str] = []

    def on_bad(err: Exception) -> None:
        # skipping was asked for: the fix's "or pass --on-error skip" is noise here (as in the audit's listing)
        bad.append(str(err).replace(" or pass --on-error skip", ""))
        _warn(f"skipped record: {bad[-1]}")

    labels, without = gold_from_traces(paths, fmt, gold_scorer, gold_threshold,
                                       on_bad=on_bad if on_error == "skip" else None,
                                       on_note=_warn, outputs=outputs)
    n = write_gold(output, labels)
    click.echo(f"wrote {n} gold labels to {output}" + (f"; {without} run(s) carry no gold" if without else "")
               + (f"; {len(bad)} bad record(s) skipped" if bad else ""), err=True)


COMMANDS = [eval_group]
