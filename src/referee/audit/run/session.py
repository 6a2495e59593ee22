"""The library's one call for an audit: paths in, audit.jsonl out, what `referee audit` does without printing.

`audit_runs` checks the inputs and outputs, builds the backends, the executor, the record budget and the
auditor from an `AuditOptions`, streams every run into the audit file (`audit_files`), writes `gold_out`, and
gives back an `AuditResult`. What happens on the way goes to an `AuditEvents` sink (referee.audit.run.options);
the CLI's sink prints it. Heavy modules are imported here, inside the call, so that building options is cheap.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from referee.audit.run.options import AuditEvents, AuditOptions, AuditResult, NoEvents
from referee.errors import UsageError

if TYPE_CHECKING:
    from referee.audit.run.backends import Backends
    from referee.audit.run.parallel import ParallelAudit
    from referee.audit.run.pipeline import Auditor
    from referee.audit.trace import TraceItem

__all__ = ["audit_runs"]


def audit_runs(paths: Iterable[str | Path], out: str | Path, options: AuditOptions | None = None,
               events: AuditEvents | None = None) -> AuditResult:
    """Audit the runs in `paths` (trace files, run folders, folders walked for them, quoted globs) into `out`.

    Resumable as `referee audit` is: a run whose record in `out` stands is not audited again. A bad record is
    skipped and listed in `result.stats.errors` (or raised, with `on_error="stop"`); a user's mistake raises a
    `referee.errors.RefereeError` with one line that says what to do.

    >>> import json, tempfile; d = Path(tempfile.mkdtemp())
    >>> _ = (d / "t.jsonl").write_text(json.dumps({"trace_version": 1, "run_id": "r1", "task": "Delete note N42",
    ...     "steps": [], "report": "Done, N42 was deleted."}) + "\\n")
    >>> result = audit_runs([d / "t.jsonl"], d / "audit.jsonl", AuditOptions(workers=1))
    >>> result.stats.written, result.summarize().as_dict()["dispositions"]["review"]  # no actions: for a person
    (1, 1)
    """
    options = options or AuditOptions()
    events = events if events is not None else NoEvents()
    if not options.allow_unsigned:
        return _audit(paths, Path(out), options, events)
    from referee.audit.ingest.readers.referee_run import allowing_unsigned

    with allowing_unsigned(True):  # run directories are read so inside this call only
        return _audit(paths, Path(out), options, events)


def _audit(paths: Iterable[str | Path], out: Path, o: AuditOptions, events: AuditEvents) -> AuditResult:
    from referee.audit.ingest.inputs import InputItem, InputOptions, expand_args, own_outputs, pickle_only_folders, walk
    from referee.core.executors import check_options

    traces = expand_args(paths)
    cache = o.cache or out.with_name(out.name + ".cache.sqlite")
    outputs = own_outputs(traces, out=out, cache=cache, gold_out=o.gold_out, **dict(o.other_outputs))
    refused = [] if o.allow_pickle else pickle_only_folders(traces, o.format)
    if refused:
        raise UsageError(f"{refused[0]}: a BrowserGym experiment whose steps are only in pickles (step_*.pkl.gz), "
                         "and loading a pickle can run code" + (f" ({len(refused)} such folders)" if len(refused) > 1
                                                               else ""),
                         fix="pass --allow-pickle to read them with referee's restricted unpickler (data classes "
                             "only), or export a JSON tape (tape.json)")
    result = AuditResult(out)
    inputs = InputOptions(include=o.include, allow_pickle=o.allow_pickle, session_runs=o.session_runs,
                          on_left_out=lambda path, kind: result.left_out.append(f"{path} ({kind})"), outputs=outputs,
                          on_own_output=lambda path, what: result.earlier_outputs.append(f"{path} ({what})"),
                          on_skipped=lambda path, what: result.unnamed.append(f"{path} ({what})"))
    probe = InputOptions(include=o.include, outputs=outputs)  # says nothing: the audit's own walk will
    if o.include and not any(isinstance(item, InputItem) for item in walk(traces, o.format, probe)):
        raise UsageError(f"--include {' '.join(o.include)} matches no file or run folder in "
                         f"{', '.join(map(str, traces))}",
                         fix="check the pattern: it is matched against the path below the walked folder or the name")
    ex_options = check_options(o.executor, o.workers, o.scheduler, o.chunk_size)
    if o.samples is not None and o.samples < 1:
        raise UsageError("--samples must be at least 1")
    if not _preview_run_dirs(traces, events):
        return result  # nothing to audit: no SKIPPED step in the run directories given
    from referee.audit.run.cache import EvidenceCache
    from referee.audit.run.stream import audit_files, is_blank

    # an input with nothing in it (`echo > t.jsonl`) needs no backend, reader or worker: none is made, and a
    # shipped policy (valid by the tests) is not built either; a user's policy file is checked in any case
    blank = o.format is None and all(is_blank(p) for p in traces)
    lp = None if blank and _shipped(o.policy) else _load_policy(o.policy)
    backends = None if blank else _make_backends(o)
    try:
        executor = None if backends is None else _executor(o, backends, ex_options, events)
        cache_db = EvidenceCache(cache)
    except BaseException:
        if backends is not None:
            backends.close()
        raise
    built: dict[str, Any] = {} if backends is None else {"backends": backends}

    def auditor() -> Auditor:
        """The auditor, made on first need (for a blank input: never)."""
        if "auditor" not in built:
            b = built.setdefault("backends", backends or _make_backends(o))
            built["auditor"] = _auditor(o, lp or _load_policy(o.policy), b, cache_db)
        return built["auditor"]

    t0 = time.perf_counter()
    try:
        result.stats = audit_files(traces, auditor() if backends is not None else auditor, out, fmt=o.format,
                                   on_error=o.on_error,
                                   concurrency=o.llm.concurrency if backends and backends.client is not None else 1,
                                   events=_Gold(events, result), inputs=inputs, reaudit_changed=o.reaudit_changed,
                                   gold_scorer=_gold_scorer(o), executor=executor)
    finally:
        cache_db.close()
        if "backends" in built:
            built["backends"].close()
    result.elapsed_s = time.perf_counter() - t0
    result.backend_calls = built["auditor"].backend_calls if "auditor" in built else 0
    if o.gold_out:  # JSONL, or CSV for a .csv name, as `referee eval gold -o` writes them
        from referee.evaluation.gold import GoldLabel, write_gold  # only then: an audit imports no evaluation

        write_gold(o.gold_out, [GoldLabel(**r) for r in result.gold_rows])
    return result


def _load_policy(policy: str) -> Any:
    from referee.audit.decide.policyfile import load_policy

    return load_policy(policy)


def _shipped(policy: str) -> bool:
    """Whether `policy` names one of the policies shipped with referee (its file is not read here)."""
    from referee.audit.decide import SHIPPED

    return policy in SHIPPED


def _auditor(o: AuditOptions, lp: Any, backends: Backends, cache: Any) -> Auditor:
    """The auditor of these options: the policy, the backends, the samples, the cache, the record budget."""
    from referee.audit.run.budget import RecordBudget
    from referee.audit.run.pipeline import Auditor

    # a backend that waits on a model runs on threads: the record budget holds for those that compute
    budget = None if backends.client is not None else RecordBudget(o.record_cpu_s, o.record_wall_s,
                                                                    o.record_memory_mib)
    return Auditor(lp, backends.extractor, backends.claim_reader, samples=o.samples or backends.default_runs,
                   cache=cache, budget=budget)


def _gold_scorer(o: AuditOptions) -> Any:
    if not o.gold_scorer:
        return None
    from referee.audit.trace import GoldScorer

    return GoldScorer(o.gold_scorer, o.gold_threshold)


class _Gold:
    """The caller's events, with each gold label also kept in the result (for `gold_out` and the summary)."""

    def __init__(self, events: AuditEvents, result: AuditResult) -> None:
        self._events, self._result = events, result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._events, name)

    def gold(self, item: TraceItem) -> None:
        assert item.gold is not None
        self._result.gold[str(item.run_id)] = item.gold.completed
        group = (item.trace.meta or {}).get("group") if item.trace else item.group
        self._result.gold_rows.append({"run_id": item.run_id, "completed": item.gold.completed,
                                       "group": str(group) if group not in (None, "") else None,
                                       "task": item.trace.task if item.trace else item.task})
        self._events.gold(item)


def _make_backends(o: AuditOptions) -> Backends:
    """Both backends through their registries (referee.audit.run.backends); the LLM client is made only when a
    chosen backend declares `needs_llm`."""
    from referee.audit.run.backends import make_backends

    def llm_client() -> Any:
        from referee.core.llm import LLMClient, LLMConfig

        m = o.llm
        return LLMClient(LLMConfig.from_env(m.base_url, m.model, concurrency=m.concurrency, timeout_s=m.timeout_s,
                                            max_retries=m.max_retries, connect_timeout_s=m.connect_timeout_s,
                                            max_tokens=m.max_tokens, temperature=m.temperature,
                                            api_key_env=m.api_key_env))

    return make_backends(o.backend, o.claims, llm_client=llm_client, tools=o.tools)


def _executor(o: AuditOptions, backends: Backends, ex_options: Any, events: AuditEvents) -> ParallelAudit | None:
    """The executor for these backends: None (this process, or threads for a model) or a ParallelAudit."""
    from referee.audit.run.parallel import executor_for

    return executor_for(backends.client is not None, ex_options, workers_given=o.workers is not None,
                        say=events.status)


def _preview_run_dirs(paths: list[Path], events: AuditEvents) -> bool:
    """Say, per run directory given, what is graded and what will be audited; False when nothing will be."""
    if not any(Path(p).is_dir() for p in paths):
        return True  # files only: no run directory among them (and no reader to load to say so)
    from referee.audit.ingest.readers import is_trajectory_file
    from referee.audit.ingest.readers.referee_run import describe_run_dir, is_run_dir
    from referee.audit.run.stream import run_dirs_under
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
            events.preview(info.line())
            anything = anything or bool(info.skipped) or info.refused  # a refused run: the reader says why
    return anything
