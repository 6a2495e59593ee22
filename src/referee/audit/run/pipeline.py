"""Audit one trace into an AuditRecord, and stream a set of trace files (or run directories) into audit.jsonl."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Protocol

from referee.audit.claim.grounding import ground_in
from referee.audit.decide.decision import decide
from referee.audit.decide.policyfile import LoadedPolicy
from referee.audit.extract import validate_citations
from referee.audit.extract.worker import extract_sample
from referee.audit.ingest.inputs import InputOptions, iter_inputs, walk
from referee.audit.ingest.readers import read_traces
from referee.audit.ingest.readers.referee_run import is_run_dir
from referee.audit.records import AuditRecord, BackendRef, ClaimReading, PolicyRef, TokenUsage
from referee.audit.run.auditfile import cut_partial_line, iter_records  # noqa: F401 (re-export)
from referee.audit.run.budget import budgeted, over_budget_record
from referee.audit.run.cache import EvidenceCache
from referee.audit.run.options import AuditEvents, NoEvents
from referee.audit.run.resume import Done, Settings, action, budget_setting, changed_error, scan, settings_of
from referee.audit.trace import SHAPE_ERRORS, GoldScorer, Trace, TraceItem
from referee.audit.view.blind import VIEW_VERSION, ClaimBlindView, build_view
from referee.audit.view.facts import ViewFacts
from referee.audit.view.terminal import is_terminal, split_call
from referee.core.concurrency import ordered_map, single_flight
from referee.core.llm import usage_meter
from referee.core.lockfile import exclusive
from referee.errors import BackendError, OwnOutputError, RefereeError, TraceError, exc_brief, plugin_failure


@dataclass
class Auditor:
    """Everything needed to audit one trace: policy, extractor, claim reader, runs, cache (optional)."""

    policy: LoadedPolicy
    extractor: Any
    claim_reader: Any
    samples: int = 1  # extraction samples per trace, voted on (on disk: backend.runs)
    cache: EvidenceCache | None = None
    backend_calls: int = 0  # extractor + claim-reader calls actually made (cache misses)
    budget: Any = None  # RecordBudget: what one record may take (referee.audit.run.budget); None: unbounded

    def _claim(self, report: str | None, errors: list[str]) -> ClaimReading:
        r = self.claim_reader
        if r.name == "rules" or self.cache is None:  # rules are cheaper than a cache lookup
            if r.name != "rules":
                self.backend_calls += 1
            return self._read(report, errors)
        key = text_sha256(report)
        # threads reading one report (--concurrency) ask the model once: the others wait and find its answer
        with single_flight(("claim", id(self.cache), r.name, r.model, r.prompt_version, key)):
            got = self.cache.get_claim(r.name, r.model, r.prompt_version, key)
            if got is not None:
                return ClaimReading.model_validate(got)
            self.backend_calls += 1
            failed = len(errors)
            reading = self._read(report, errors)
            if len(errors) == failed:  # only an answer goes in the cache: a failure is asked again next time
                self.cache.put_claim(r.name, r.model, r.prompt_version, key, reading.model_dump())
            return reading

    def _read(self, report: str | None, errors: list[str]) -> ClaimReading:
        try:
            return self.claim_reader.read(report)
        except BackendError as exc:
            errors.append(f"claim reader: {exc.message}"[:300])
            return ClaimReading(label="unclear", votes=["unclear"], backend=self.claim_reader.name,
                                cue=exc.message[:200])
        except Exception as exc:
            if (failed := plugin_failure(self.claim_reader, "claim reader", exc)) is None:
                raise
            raise failed from exc

    def _evidence(self, view, sample: int, errors: list[str]) -> dict:
        x = self.extractor
        if self.cache is None:
            self.backend_calls += 1
            return extract_sample(x, view, sample, errors)[0]
        with single_flight(("evidence", id(self.cache), x.name, x.model, x.prompt_version, view.sha256, sample)):
            got = self.cache.get_evidence(x.name, x.model, x.prompt_version, view.sha256, sample)
            if got is not None:
                return got
            self.backend_calls += 1
            fields, answered = extract_sample(x, view, sample, errors)
            if answered:  # nothing cached otherwise: a resume asks again
                self.cache.put_evidence(x.name, x.model, x.prompt_version, view.sha256, sample, fields)
            return fields

    def settings(self) -> Settings:
        """What this auditor's records say they were made with (what a resume compares, audit/resume.py)."""
        x, r, p, b = self.extractor, self.claim_reader, self.policy, self.budget
        return settings_of({"backend": {"name": x.name, "model": x.model, "prompt_version": x.prompt_version,
                                        "runs": self.samples},
                            "policy": {"name": p.policy.name, "sha256": p.sha256},
                            "claim_reader": {"name": r.name, "model": r.model, "prompt_version": r.prompt_version},
                            "view_version": VIEW_VERSION}) + ((budget_setting(b.cpu_s, b.wall_s, b.memory_mib),) if b
                                                              else ())

    def audit(self, trace: Trace, view: ClaimBlindView | None = None) -> AuditRecord:
        """Audit one trace: the report goes to the claim reader only, the view to the extractor only.

        `view` is `build_view(trace)` when the caller has made it already.

        >>> from referee.audit.decide.policyfile import load_policy
        >>> from referee.audit.claim.reader import RulesClaimReader
        >>> from referee.audit.extract.rules import RulesExtractor
        >>> a = Auditor(load_policy("causal"), RulesExtractor(), RulesClaimReader())
        >>> t = Trace(run_id="r", task="Delete note N42", steps=[], report="Done, N42 was deleted.")
        >>> a.audit(t).disposition
        'flag'
        """
        errors: list[str] = []
        with usage_meter() as used:  # the model calls of this trace, in this thread
            view = view or build_view(trace)
            text = claim_text(trace)
            claim = self.read_claim(text, errors)
            found = [self._evidence(view, i, errors) for i in range(self.samples)]
        rec = self.finish(trace, text, claim, ViewFacts.of(view), found, errors)
        if used.calls:
            rec.usage = TokenUsage(calls=used.calls, prompt_tokens=used.prompt_tokens,
                                   completion_tokens=used.completion_tokens)
        return rec

    def read_claim(self, text: str | None, errors: list[str]) -> ClaimReading:
        """What the claim reader makes of a claim text (`claim_text(trace)`), through the cache; a call that
        got no answer is added to `errors`."""
        return self._claim(text, errors)

    def finish(self, trace: Trace, text: str | None, claim: ClaimReading, facts: ViewFacts, found: list[dict],
               errors: list[str]) -> AuditRecord:
        """The rest of `audit` once the findings of every sample are in (from the extractor, the cache or a
        worker): citations checked, the report grounded, the decision, the record."""
        policy = self.policy.policy
        evidence = [validate_citations(f, facts.n_steps, set(facts.observed)) for f in found]
        grounding = ground_in(claim, facts.haystack, trace.task)
        d = decide(trace.task, claim.label, evidence, grounding, policy)
        x, r = self.extractor, self.claim_reader
        meta = trace.meta or {}
        return AuditRecord(
            record_version=6 if grounding.derived else 4,  # 6: a derived atom (records.py)
            run_id=trace.run_id, task=trace.task, task_class=d.task_class, claim=claim,  # type: ignore[arg-type]
            evidence=evidence, run_states=list(d.run_states), trace_state=d.trace_state,  # type: ignore[arg-type]
            disposition=d.disposition,  # type: ignore[arg-type]
            policy=PolicyRef(name=policy.name, sha256=self.policy.sha256),
            backend=BackendRef(name=x.name, model=x.model, prompt_version=x.prompt_version, runs=self.samples),
            view_sha256=facts.sha256, grounding=grounding,
            group=_s(meta.get("group")), split=_s(meta.get("split")), source=_s(meta.get("source")),
            advisory=meta.get("advisory") is True, errors=errors,
            claim_reader=BackendRef(name=r.name, model=r.model, prompt_version=r.prompt_version),
            view_version=VIEW_VERSION, claim_sha256=text_sha256(text))


_FLAG = {"cpu": "cpu-s", "wall": "wall-s", "memory": "memory-mib"}


def over_budget_of(auditor: Auditor, trace: Trace, limit: str) -> AuditRecord:
    """The `review` record of a trace whose audit went over `limit` of `auditor.budget` (its hashes made again)."""
    return over_budget_record(auditor, auditor.budget, limit, run_id=trace.run_id, task=trace.task, meta=trace.meta,
                              view_sha256=build_view(trace).sha256, claim_sha256=text_sha256(claim_text(trace)))


def text_sha256(text: str | None) -> str:
    """SHA-256 of a claim text (None hashes as the empty text): the claim cache key and the record's claim_sha256.

    >>> text_sha256(None) == text_sha256("")
    True
    """
    return hashlib.sha256((text or "").encode("utf-8")).hexdigest()


def claim_text(trace: Trace) -> str | None:
    """What the claim reader reads: the report, or, when there is none, the agent's terminal answer
    call when that is its last action (`send_msg_to_user(...)`, `answer(...)`, `report_infeasible(...)`).

    >>> claim_text(Trace(run_id="r", task="t", steps=[{"action": {"name": "answer", "args": {"text": "42"}}}]))
    'answer("42")'
    """
    if trace.report is not None and trace.report.strip():
        return trace.report
    last = next((s.action for s in reversed(trace.steps) if s.action is not None), None)
    if last is None:
        return trace.report
    name, args = split_call(last.name, dict(last.args))
    if not is_terminal(name, args):
        return trace.report
    if isinstance(args, dict):
        args = list(args.values())
    return f"{name}({json.dumps(args, ensure_ascii=False, default=str)[1:-1]})"


def audit_trace(trace: Trace, policy: str | LoadedPolicy = "causal") -> AuditRecord:
    """Audit one trace offline with the rules extractor and claim reader (the library's one-call entry).

    >>> t = Trace(run_id="r", task="Delete note N42", steps=[{"action": {"name": "delete_note", "args":
    ...     {"id": "N42"}}, "observation": {"text": "deleted"}}], report="Done, N42 was deleted.")
    >>> audit_trace(t).disposition
    'pass'
    """
    from referee.audit.claim.reader import RulesClaimReader
    from referee.audit.decide.policyfile import load_policy
    from referee.audit.extract.rules import RulesExtractor

    lp = load_policy(policy) if isinstance(policy, str) else policy
    return Auditor(lp, RulesExtractor(), RulesClaimReader()).audit(trace)


def _s(v: Any) -> str | None:
    return None if v in (None, "") else str(v)


# -- streaming over files, with resume ------------------------------------------------------------

@dataclass(frozen=True)
class RecordLine:
    """An audit record a worker already serialised: written as it is (no second serialisation here)."""

    run_id: str
    json: str


@dataclass(frozen=True)
class Intake:
    """What an executor that admits the records itself (`admits`: those its workers read, and those this process
    read, each at its turn in input order) needs of `audit_files`, to decide on each as a serial audit would."""

    admit: Callable[[TraceItem, Callable[[], tuple[str, str] | None]], str]  # "audit" | "skip" | "stop"
    # a file read here from its start as a serial audit reads it, past its first N records: a line file (format
    # "referee") or a small file (its format; None: sniffed)
    rest_of: Callable[[Path, int, str | None], Iterator[Any]]
    stopped: Callable[[], bool]  # a record made with other settings was found: write nothing more
    # records read here admitted now, the traces to audit among them, each with its view when resume made it
    jobs_of: Callable[[Iterable[TraceItem]], Iterator[tuple[Trace, ClaimBlindView | None]]]
    # what resume compares with (the audit file's records, this audit's settings): a worker that reads a run
    # whose record stands (`resume.action` says "skip") need not audit it; `admit` still decides
    done: dict[str, Done] = field(default_factory=dict)
    settings: Settings = ()


class Executor(Protocol):
    """Where `audit_files` has traces audited other than one at a time here (`ParallelAudit`, in
    referee.audit.run.parallel): it hears of the input, names the files its own workers read, and gives back
    what `audit_one` would have, in input order."""

    admits: bool  # True: the records read here are handed out unadmitted, and admitted at their turn (`Intake`)

    def expect(self, paths: list[Path]) -> None: ...

    def reading(self, path: Path) -> None: ...

    def raw_file(self, path: Path, fmt: str | None, allow_pickle: bool = False) -> Any: ...

    def run(self, auditor: Auditor, units: Iterable[Any], audit_one: Callable[[tuple], Any],
            intake: Intake) -> Iterator[Any]: ...


@dataclass
class AuditStats:
    written: int = 0
    skipped_done: int = 0  # runs whose record in the file stands (same settings, same content, all answered)
    duplicates: int = 0  # records whose run_id came earlier in the same input: warned about, audited once
    stale: int = 0       # runs whose trace changed since their record (view or claim text): audited again
    retried: int = 0     # runs whose record had failed backend calls: audited again
    reaudited: int = 0   # runs whose record was made with other settings, audited again (--reaudit-changed)
    errors: list[str] = field(default_factory=list)
    scorers: set[str] = field(default_factory=set)  # scores the runs carry when none is named gold (a hint)


def run_dirs_under(path: Path, depth: int = 2) -> Iterator[Path]:
    """Run directories at `path` or up to `depth` folders below it (runs/<plan>/<timestamp>), sorted."""
    path = Path(path)
    if is_run_dir(path):
        yield path
    elif depth > 0 and path.is_dir():
        for child in sorted(c for c in path.iterdir() if c.is_dir() and not c.is_symlink()):
            yield from run_dirs_under(child, depth - 1)


def iter_items(paths: Iterable[Path], fmt: str | None, inputs: InputOptions | None = None) -> Iterator[TraceItem]:
    """TraceItems of trace files, run folders, and folders walked for them (referee.audit.ingest.inputs).

    SWE-bench reports (`*.report.json`) are not traces and are skipped.
    """
    return iter_inputs(paths, fmt, inputs)


def skip_keeping_notes(items: Iterator[TraceItem], n: int) -> Iterator[TraceItem]:
    """`items` past the first `n`, the notes of those `n` (said of the file, which no worker says) carried by
    the first item kept.

    >>> it = [TraceItem("f", 1, "a", notes=("f: not UTF-8",)), TraceItem("f", 2, "b")]
    >>> [(i.run_id, i.notes) for i in skip_keeping_notes(iter(it), 1)]
    [('b', ('f: not UTF-8',))]
    """
    notes: tuple[str, ...] = ()
    for i, item in enumerate(items):
        if i < n:
            notes += item.notes
            continue
        if notes:
            item, notes = replace(item, notes=(*notes, *item.notes)), ()
        yield item


def cannot_audit(trace: Trace | str, why: str) -> TraceError:
    """The skipped-record error for a trace (or run_id) the auditor could not take (`why`: the exception, in a
    few words)."""
    run_id = trace if isinstance(trace, str) else trace.run_id
    return TraceError(f"run_id {run_id}: could not be audited: {why}",
                      fix="fix the record, or report it if it looks valid")


def duplicate_error(item: TraceItem, first: str, first_file: str | None = None) -> TraceError:
    """The warning for a run_id seen before in the same input (file, line and run_id, and where it came first).
    A run_id first seen in another file says what to do with files that reuse ids (one per model, say).

    >>> print(duplicate_error(TraceItem(file="t.jsonl", line=7, run_id="a"), "t.jsonl:2", "t.jsonl"))
    t.jsonl:7: run_id a: duplicate run_id (first at t.jsonl:2): audited once, ...; give every run its own run_id
    >>> print(duplicate_error(TraceItem(file="b.json", line=3, run_id="a"), "a.json:3", "a.json"))
    b.json:3: run_id a: ...; these files reuse run_ids (one per model or per rerun?): audit each into its own --out
    """
    fix = "give every run its own run_id"
    if first_file is not None and first_file != item.file:
        fix = "these files reuse run_ids (one per model or per rerun?): audit each into its own --out"
    return TraceError(f"run_id {item.run_id}: duplicate run_id (first at {first}): audited once, this record is "
                      f"not audited", file=item.file, place=str(item.line) if item.line is not None else None,
                      fix=fix)


def audit_files(paths: Iterable[Path], auditor: Auditor, out: Path, *, fmt: str | None = None,
                on_error: str = "skip", concurrency: int = 1, events: AuditEvents | None = None,
                inputs: InputOptions | None = None, gold_scorer: GoldScorer | None = None,
                reaudit_changed: bool = False, executor: Executor | None = None) -> AuditStats:
    """Audit every trace in `paths`, appending one record per run to `out`; runs whose record stands are skipped.

    Only one process writes `out` at a time (a lock on `out.lock`; a second gets BusyError at once).
    Resume is keyed by content (audit/resume.py): a run already in `out` is audited again when its
    trace changed since (`stats.stale`) or a backend call of its record failed (`stats.retried`); the
    new record is appended and supersedes the old one for every reader. A record made with other
    settings (backend, model, prompt, samples, claim reader, policy, view version) stops the audit with
    ResumeError, after what is in flight is written, unless `reaudit_changed` (`stats.reaudited`).

    `gold_scorer` takes gold from a score the runs carry (an Inspect AI scorer); a run whose scores lack it
    raises GoldError naming the scorers there. Gold only reaches `events.gold`, never the audit.

    A run_id that comes twice in the input is audited once (the first); each repeat is counted in
    `stats.duplicates` and reported through `events.duplicate`, never dropped silently. What a reader found
    beside a run and could not use (a gold report that does not read) goes to `events.note`; `events`
    (referee.audit.run.options.AuditEvents) hears of each record written, each bad record skipped, gold.

    Records are written in input order even when `concurrency` > 1 (a bounded window of traces is in
    flight), so an interrupted audit leaves a clean prefix and resumes where it stopped. With
    `executor` (referee.audit.run.parallel.ParallelAudit) traces are audited in chunks on other processes
    or a Dask cluster; this process still writes every record, in the same order, under the same lock
    and resume rules, and `events.written` gets each as the `RecordLine` written.
    """
    out = Path(out)
    with exclusive(out, by="referee audit", fix="wait for it to finish, or give another --out"):
        return _audit_locked(paths, auditor, out, fmt=fmt, on_error=on_error, concurrency=concurrency,
                             events=events if events is not None else NoEvents(), inputs=inputs,
                             gold_scorer=gold_scorer, reaudit_changed=reaudit_changed, executor=executor)


def _audit_locked(paths: Iterable[Path], auditor: Auditor, out: Path, *, fmt: str | None, on_error: str,
                  concurrency: int, events: AuditEvents, inputs: InputOptions | None, gold_scorer: GoldScorer | None,
                  reaudit_changed: bool, executor: Executor | None) -> AuditStats:
    cut_partial_line(out)  # under the lock: a half line can only be a dead writer's
    paths = list(paths)
    if executor is not None:
        executor.expect(paths)  # what the executor weighs the work left by (ParallelAudit.adaptive)
    damaged: list[int] = []
    done = scan(out, damaged)
    if damaged:
        events.note(f"{out}: line{'s' if len(damaged) > 1 else ''} {', '.join(map(str, damaged[:10]))}"
                f"{' ...' if len(damaged) > 10 else ''}: no audit record (damaged?); left as it is, and the run it "
                "held is audited again")
    settings = auditor.settings()
    allow = inputs.allow_pickle if inputs is not None else False  # pickled logs load (browsergym), when asked
    # sessions kept whole are read here: the workers read files with the default (a run per prompt)
    session_runs = inputs.session_runs if inputs is not None else "per-prompt"
    seen: dict[str, tuple[str, str]] = {}  # run_id -> (where it first came in this input, its file)
    ignored_seen: set[tuple[str, str]] = set()  # (file, field): each unknown field is reported once per file
    stats = AuditStats()
    stop: list[RefereeError] = []  # a record made with other settings: raised once what is in flight is written
    named = {os.path.realpath(p) for p in paths}  # inputs given by name: one of referee's outputs there is an error
    said_own: set[str] = set()

    def skip(err: TraceError) -> None:
        """A record that cannot be read or audited: stop, or count it and say so."""
        if on_error == "stop":
            raise err
        stats.errors.append(str(err))
        events.skipped(err)

    def admit(item: TraceItem, hashes: Callable[[], tuple[str, str] | None]) -> str:
        """What becomes of one record read: "audit" (audit it, or write the record a worker made of it),
        "skip" (an error reported, a repeated run_id, a record in `out` that stands) or "stop" (a record
        in `out` made with other settings). `hashes()` gives its view and claim hashes (None: no view)."""
        if isinstance(item.error, OwnOutputError) and os.path.realpath(item.file) not in named:
            # an earlier audit's summary a walk met (a worker read it): left out and said, as the walk does
            if inputs is not None and inputs.on_own_output is not None and item.file not in said_own:
                said_own.add(item.file)
                inputs.on_own_output(Path(item.file), item.error.what)
            return "skip"
        if item.error is not None:
            skip(item.error)
            return "skip"
        if gold_scorer is not None:
            item = gold_scorer.pick(item)
        elif item.scores:
            stats.scorers.update(item.scores)
        if item.ignored:
            new = tuple(f for f in item.ignored if (item.file, f) not in ignored_seen)
            ignored_seen.update((item.file, f) for f in new)
            if new:
                events.ignored_fields(item.file, new)
        rid = item.trace.run_id if item.trace is not None else str(item.run_id)
        if rid in seen:
            stats.duplicates += 1
            events.duplicate(duplicate_error(item, *seen[rid]))
            return "skip"
        seen[rid] = (item.file if item.line is None else f"{item.file}:{item.line}", item.file)
        if item.gold is not None:  # the run audited (or standing) is the first: so is its label
            events.gold(item)
        for note in item.notes:
            events.note(note)
        prev = done.get(rid)
        if prev is None:
            return "audit"
        got = hashes()
        if got is None:
            return "audit"  # a view that cannot be made: the audit says why, as one skipped record
        what = action(prev, got[0], got[1], settings)
        if what == "skip":
            stats.skipped_done += 1
            if prev.over is not None:  # said each time: a resume never leaves it in silence
                events.note(f"{out}: line {prev.line}: run_id {rid}: its audit went over the record budget "
                        f"({prev.over[0]}) and its review record stands; raise --record-{_FLAG[prev.over[0]]} to "
                        "audit it again")
            return "skip"
        if what == "changed":
            if not reaudit_changed:
                stop.append(changed_error(out, rid, prev, settings))
                return "stop"
            stats.reaudited += 1
        elif what == "stale":
            stats.stale += 1
        else:
            stats.retried += 1
        return "audit"

    def jobs_of(items: Iterable[TraceItem]) -> Iterator[tuple[Trace, ClaimBlindView | None]]:
        """The traces to audit among `items` read here, each with its view when resume made it."""
        for item in items:
            view: list[ClaimBlindView] = []

            def hashes() -> tuple[str, str] | None:
                try:
                    view.append(build_view(item.trace))  # type: ignore[arg-type]
                except SHAPE_ERRORS:
                    return None
                return view[0].sha256, text_sha256(claim_text(item.trace))  # type: ignore[arg-type]

            what = admit(item, hashes)
            if what == "stop":
                return
            if what == "audit":
                yield item.trace, (view[0] if view else None)  # type: ignore[misc]

    def work() -> Iterator[Any]:
        """What to audit, in input order: jobs read here, and files the executor's workers read. An executor
        that `admits` gets the records read here as they were read, and admits each at its turn (`Intake`):
        admitted here as they are read, a record of a later file would come before those of an earlier file
        the workers still read (the first of two runs with one run_id is the one audited)."""
        later = executor is not None and executor.admits
        for inp in walk(paths, fmt, inputs):
            if stop:
                return
            if isinstance(inp, TraceItem):  # a folder that could not be walked
                admit(inp, lambda: None)
            elif executor is not None and session_runs == "per-prompt" and \
                    (raw := executor.raw_file(inp.path, inp.fmt, allow)) is not None:
                yield raw  # a file the executor's workers read themselves
            else:
                if executor is not None:
                    executor.reading(inp.path)  # read here: what the executor counts as work begun
                items = read_traces(inp.path, inp.fmt, allow_pickle=allow, session_runs=session_runs)
                yield from (items if later else jobs_of(items))

    def rest_of(path: Path, skip_records: int, fmt: str | None = "referee") -> Iterator[AuditRecord | TraceError]:
        """A file read here from its start, as a serial audit reads it, past its first `skip_records` records;
        each record admitted and audited here."""
        for job in jobs_of(skip_keeping_notes(read_traces(path, fmt, allow_pickle=allow, session_runs=session_runs),
                                              skip_records)):
            yield audit_one(job)

    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "a", encoding="utf-8") as fh:
        def write(rec: AuditRecord | RecordLine) -> None:
            fh.write((rec.json if isinstance(rec, RecordLine) else rec.model_dump_json()) + "\n")
            fh.flush()  # each record is on disk before the next one starts: resume needs no more
            stats.written += 1
            events.written(rec)

        def audit_one(job: tuple[Trace, ClaimBlindView | None]) -> AuditRecord | TraceError:
            trace, view = job
            try:
                return budgeted(auditor.budget, lambda: auditor.audit(trace, view),
                                lambda limit: over_budget_of(auditor, trace, limit))
            except SHAPE_ERRORS as exc:
                # one trace the auditor cannot take (nesting too deep, a shape no reader caught) is one
                # skipped record, not the end of the audit
                return cannot_audit(trace, exc_brief(exc))

        results = (ordered_map(audit_one, work(), concurrency, name="referee-audit") if executor is None
                   else executor.run(auditor, work(), audit_one,
                                     Intake(admit=admit, rest_of=rest_of, stopped=lambda: bool(stop),
                                            done=done, settings=settings, jobs_of=jobs_of)))
        for got in results:
            if isinstance(got, TraceError):
                skip(got)
            else:
                write(got)
    if stop:
        raise stop[0]
    return stats
