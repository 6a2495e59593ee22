"""Stream a set of trace files (or run directories) into audit.jsonl: resume, duplicates, bad records, in order.

Only what an empty input needs is imported with this module (the lock, the audit file, resume): the readers, the
view and the auditor's stages load with the first record read, so `referee audit` on an empty file loads none.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Protocol

from referee.audit.ingest.inputs import InputItem, InputOptions, iter_inputs, walk
from referee.audit.run.auditfile import cut_partial_line
from referee.audit.run.options import AuditEvents, NoEvents
from referee.audit.run.resume import Done, Settings, action, changed_error, scan
from referee.core.concurrency import ordered_map
from referee.core.lockfile import exclusive
from referee.errors import OwnOutputError, RefereeError, TraceError, exc_brief

if TYPE_CHECKING:
    from referee.audit.records import AuditRecord
    from referee.audit.run.pipeline import Auditor
    from referee.audit.trace import GoldScorer, Trace, TraceItem
    from referee.audit.view.blind import ClaimBlindView

_FLAG = {"cpu": "cpu-s", "wall": "wall-s", "memory": "memory-mib"}
BLANK_BYTES = 4096  # a file this small holding only white space is no input: nothing to read, no reader to load


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
    from referee.audit.ingest.readers.referee_run import is_run_dir

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

    >>> from referee.audit.trace import TraceItem
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

    >>> from referee.audit.trace import TraceItem
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


def is_blank(path: Path) -> bool:
    """Whether `path` is a small regular file holding nothing but white space (`echo > t.jsonl` makes one).

    >>> import tempfile; p = Path(tempfile.mkdtemp()) / "t.jsonl"; _ = p.write_text("\\n"); is_blank(p)
    True
    """
    try:
        st = os.stat(path)
        if not (0 <= st.st_size <= BLANK_BYTES) or not os.path.isfile(path):
            return False
        with open(path, "rb") as fh:
            return not fh.read(BLANK_BYTES + 1).strip()
    except OSError:
        return False  # the reader says what is wrong with it


def audit_files(paths: Iterable[Path], auditor: Auditor | Callable[[], Auditor], out: Path, *, fmt: str | None = None,
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

    `auditor` may be a function that makes one: it is called when the first record is to be audited (or
    compared with the audit file, or an executor starts), so an input with nothing in it builds no backend.
    """
    out = Path(out)
    with exclusive(out, by="referee audit", fix="wait for it to finish, or give another --out"):
        return _audit_locked(paths, auditor, out, fmt=fmt, on_error=on_error, concurrency=concurrency,
                             events=events if events is not None else NoEvents(), inputs=inputs,
                             gold_scorer=gold_scorer, reaudit_changed=reaudit_changed, executor=executor)


def _audit_locked(paths: Iterable[Path], auditor: Auditor | Callable[[], Auditor], out: Path, *, fmt: str | None,
                  on_error: str,
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
    made: list[Any] = []  # the auditor, once made; then its settings

    def the_auditor() -> Auditor:
        if not made:
            made.append(auditor() if callable(auditor) else auditor)
        return made[0]

    def settings() -> Settings:
        if len(made) < 2:
            made.append(the_auditor().settings())
        return made[1]

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
        what = action(prev, got[0], got[1], settings())
        if what == "skip":
            stats.skipped_done += 1
            if prev.over is not None:  # said each time: a resume never leaves it in silence
                events.note(f"{out}: line {prev.line}: run_id {rid}: its audit went over the record budget "
                        f"({prev.over[0]}) and its review record stands; raise --record-{_FLAG[prev.over[0]]} to "
                        "audit it again")
            return "skip"
        if what == "changed":
            if not reaudit_changed:
                stop.append(changed_error(out, rid, prev, settings()))
                return "stop"
            stats.reaudited += 1
        elif what == "stale":
            stats.stale += 1
        else:
            stats.retried += 1
        return "audit"

    def jobs_of(items: Iterable[TraceItem]) -> Iterator[tuple[Trace, ClaimBlindView | None]]:
        """The traces to audit among `items` read here, each with its view when resume made it."""
        from referee.audit.run.pipeline import claim_text, text_sha256
        from referee.audit.trace import SHAPE_ERRORS
        from referee.audit.view.blind import build_view

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
            if not isinstance(inp, InputItem):  # a folder that could not be walked
                admit(inp, lambda: None)
            elif executor is None and inp.fmt is None and is_blank(inp.path):
                # nothing in it: no reader to load (a reader finds no record in it either); with workers, a file
                # they read is not opened here too
                continue
            elif executor is not None and session_runs == "per-prompt" and \
                    (raw := executor.raw_file(inp.path, inp.fmt, allow)) is not None:
                yield raw  # a file the executor's workers read themselves
            else:
                from referee.audit.ingest.readers import read_traces

                if executor is not None:
                    executor.reading(inp.path)  # read here: what the executor counts as work begun
                items = read_traces(inp.path, inp.fmt, allow_pickle=allow, session_runs=session_runs)
                yield from (items if later else jobs_of(items))

    def rest_of(path: Path, skip_records: int, fmt: str | None = "referee") -> Iterator[AuditRecord | TraceError]:
        """A file read here from its start, as a serial audit reads it, past its first `skip_records` records;
        each record admitted and audited here."""
        from referee.audit.ingest.readers import read_traces

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
            from referee.audit.run.budget import budgeted
            from referee.audit.run.pipeline import over_budget_of
            from referee.audit.trace import SHAPE_ERRORS

            trace, view = job
            auditor = the_auditor()
            try:
                return budgeted(auditor.budget, lambda: auditor.audit(trace, view),
                                lambda limit: over_budget_of(auditor, trace, limit))
            except SHAPE_ERRORS as exc:
                # one trace the auditor cannot take (nesting too deep, a shape no reader caught) is one
                # skipped record, not the end of the audit
                return cannot_audit(trace, exc_brief(exc))

        results = (ordered_map(audit_one, work(), concurrency, name="referee-audit") if executor is None
                   else executor.run(the_auditor(), work(), audit_one,
                                     Intake(admit=admit, rest_of=rest_of, stopped=lambda: bool(stop),
                                            done=done, settings=settings(), jobs_of=jobs_of)))
        for got in results:
            if isinstance(got, TraceError):
                skip(got)
            else:
                write(got)
    if stop:
        raise stop[0]
    return stats
