"""The flags of `referee audit`, and the AuditOptions they make (referee.audit.run.options).

The flags are a list applied as one decorator (`audit_flags`), so the command itself stays a few lines; every
flag but the printing ones (--show, --progress, --summary-*, --junit) becomes one AuditOptions field.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

import click

from referee.audit.run.options import AuditOptions, LLMOptions
from referee.core.timeouts import MAX_RETRIES, check_seconds


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


FLAGS: list[Callable[[Any], Any]] = [
    click.argument("traces", nargs=-1, required=True),
    click.option("--format", "fmt", default=None,
                 help="A reader from `referee readers`, e.g. openai-chat, anthropic-messages, inspect-ai "
                      "(default: sniffed per file and per run folder). In a walked "
                      "folder it reads every file and leaves out run folders of another format."),
    click.option("--include", "include", multiple=True, metavar="GLOB",
                 help="In walked folders, audit only the files and run folders whose path or name matches "
                      "(repeatable)."),
    click.option("--allow-pickle", is_flag=True,
                 help="Read pickled logs (BrowserGym step_*.pkl.gz) with referee's restricted unpickler: loading a "
                      "pickle can run code, so this is off by default."),
    click.option("--session-runs", "session_runs", type=click.Choice(["per-prompt", "whole"]), default="per-prompt",
                 show_default=True, help="A coding agent's session of many prompts (Claude Code, Codex CLI, Gemini "
                                         "CLI, ...): one run per user prompt (<session>#<n>), or the whole session as "
                                         "one run."),
    click.option("--backend", default="rules", show_default=True,
                 help="evidence extractor: rules | llm | rules+llm (a model where rules leave unknowns) | a plugin"),
    click.option("--claims", default="rules", show_default=True, help="claim reader: rules | llm | a plugin"),
    click.option("--tools", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
                 help="a tool map (tools.yaml): your tools' names or patterns -> read/create/edit/delete/send, "
                      "target argument, failure marker (docs/auditor.md)"),
    click.option("--policy", default="causal", show_default=True,
                 help="causal | final-state | low-load | unanimous | strict | PATH"),
    click.option("--samples", "--runs", "runs", type=int, default=None,
                 help="extraction samples per trace, voted on (default 1 for rules, 5 for llm; --runs is the old "
                      "name)"),
    click.option("--out", type=click.Path(path_type=Path), required=True,
                 help="audit.jsonl to append to (resumable; one writer at a time)"),
    click.option("--cache", type=click.Path(path_type=Path), default=None,
                 help="SQLite evidence cache (default OUT.cache.sqlite)"),
    click.option("--on-error", type=click.Choice(["skip", "stop"]), default="skip", show_default=True,
                 help="A bad trace record: skip it (listed at the end) or stop at it. By default bad records are "
                      "skipped but the exit code is 1; --on-error skip given explicitly accepts them (exit 0)."),
    click.option("--base-url", default=None, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1"),
    click.option("--model", default=None, help="model name for the llm backend"),
    click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True,
                 help="traces in flight (llm backend)"),
    click.option("--workers", type=int, default=None,
                 help="processes for backends that compute (rules): default every core, started only for work "
                      "that pays for them; N starts N at once; 1 audits in this process"),
    click.option("--executor", "executor_kind", type=click.Choice(["local", "dask"]), default="local",
                 show_default=True,
                 help="where chunks of traces are audited: a local process pool, or Dask (docs/scale.md)"),
    click.option("--scheduler", default=None, metavar="tcp://HOST:PORT",
                 help="with --executor dask: a running Dask scheduler (default: a LocalCluster of --workers)"),
    click.option("--chunk-size", type=int, default=50, show_default=True, help="traces per chunk sent to a worker"),
    click.option("--record-cpu-s", type=click.FloatRange(min=0.1), default=10.0, show_default=True,
                 help="CPU seconds one record's audit may take (rules and other computing backends); past it the "
                      "record is review, and a worker running it is ended (docs/scale.md)"),
    click.option("--record-wall-s", type=click.FloatRange(min=0.1), default=30.0, show_default=True,
                 help="wall seconds one record's audit may take"),
    click.option("--record-memory-mib", type=click.IntRange(min=16), default=512, show_default=True,
                 help="MiB a process may grow by while it audits one record"),
    click.option("--timeout", type=float, default=60.0, show_default=True, callback=_seconds,
                 help="seconds per model request, from connect to the last byte of the answer"),
    click.option("--connect-timeout", type=float, default=10.0, show_default=True, callback=_seconds,
                 help="llm backend: seconds to open a connection (a server that is down fails fast)"),
    click.option("--max-tokens", type=click.IntRange(min=1), default=None,
                 help="llm backend: a limit on each answer's tokens (sent as max_tokens, or max_completion_tokens to "
                      "models that refuse max_tokens)"),
    click.option("--temperature", default="0", callback=_temperature, show_default=True,
                 help="llm backend: sampling temperature, or 'none' to send none"),
    click.option("--api-key-env", default=None, metavar="VAR",
                 help="llm backend: the environment variable that holds the API key (default OPENAI_API_KEY)"),
    click.option("--max-retries", type=click.IntRange(min=0), default=MAX_RETRIES, show_default=True,
                 help="llm backend: retries of one model call (429, 5xx, timeouts) before it counts as failed."),
    click.option("--gold-out", type=click.Path(path_type=Path), default=None,
                 help="write gold labels found in the traces"),
    click.option("--gold-scorer", default=None, metavar="NAME",
                 help="take gold from this scorer of an Inspect AI log (C/I, 1/0, a number; NAME/KEY for one value "
                      "of several); name one that checks the state, not the answer"),
    click.option("--gold-threshold", type=float, default=1.0, show_default=True,
                 help="a --gold-scorer value at least this is completed"),
    click.option("--summary-json", type=click.Path(path_type=Path), default=None,
                 help="also write the summary as JSON"),
    click.option("--summary-md", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
                 help="also write a Markdown summary for a CI job page (dispositions, each flag and review with its "
                      "reason); it is also appended to the file $GITHUB_STEP_SUMMARY names when that is set"),
    click.option("--junit", "junit", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
                 help="also write JUnit XML, one testcase per run: flag = failure, review = skipped with the reason"),
    click.option("--reaudit-changed", is_flag=True,
                 help="audit again the runs whose record in --out was made with another backend, model, prompt, "
                      "samples, claim reader, policy or view version (default: stop and say so)"),
    click.option("--progress/--no-progress", default=True, help="Show a progress bar on a terminal."),
    click.option("--show", "show", default="flag", show_default=True,
                 help="Which runs to list after the summary: flag, review, pass (comma-separated), all, or none. "
                      "Given explicitly, every such run is listed (default: the first 20 flags)."),
    click.option("--allow-unsigned", is_flag=True,
                 help="Read referee run directories without a seal this machine can check, marked unverified."),
]


def audit_flags(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Apply every flag of FLAGS to `fn`, in the order listed (the order `--help` shows)."""
    for flag in reversed(FLAGS):
        fn = flag(fn)
    return fn


def options_from(flags: dict[str, Any], **other_outputs: Path | None) -> AuditOptions:
    """The AuditOptions of the command line's flags (click's parameter names); `other_outputs`: the files the
    command writes beside the audit (--summary-json ...), checked never to be an input.

    >>> options_from({"fmt": "openai-chat", "runs": 5, "executor_kind": "local", "timeout": 30.0}).samples
    5
    """
    llm = {"base_url": "base_url", "model": "model", "concurrency": "concurrency", "timeout_s": "timeout",
           "connect_timeout_s": "connect_timeout", "max_tokens": "max_tokens", "temperature": "temperature",
           "api_key_env": "api_key_env", "max_retries": "max_retries"}
    renamed = {"format": "fmt", "samples": "runs", "executor": "executor_kind"}
    fields = {name: flags[flag] for name, flag in renamed.items() if flag in flags}
    plain = set(AuditOptions.__dataclass_fields__) - set(renamed) - {"llm", "other_outputs"}
    fields.update({name: flags[name] for name in plain if name in flags})
    if "include" in fields:
        fields["include"] = tuple(fields["include"])
    return AuditOptions(**fields, llm=LLMOptions(**{k: flags[v] for k, v in llm.items() if v in flags}),
                        other_outputs=tuple((k, p) for k, p in other_outputs.items() if p is not None))
