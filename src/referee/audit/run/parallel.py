"""Audit in chunks on a process pool or a Dask cluster; this process reads or names the input, and writes every record.

On a local pool the workers read most files themselves: a trace v1 line file by runs of its lines, and small files
whole, several to a chunk (referee.audit.ingest.chunks); this process only names them. Any other file this process
reads, and per trace it copies out two sealed compartments and sends a chunk of them:

- the **view parts** (`view.view_parts`: task, observations, actions with a terminal answer's words
  left out, tools), which a worker freezes and hashes into the claim-blind view and gives to the
  extractor (`referee.audit.extract.worker`, inside the extractor wall);
- the **claim side**: the claim text (the report, or the terminal answer call), run_id and the
  grouping fields of `meta`. A worker unpacks it only after the whole chunk's extraction is done,
  gives the claim text to the claim reader alone, grounds the report in the view's observations
  and decides, as `Auditor.audit` does in one process (referee.audit.run.workerside).

On a Dask cluster, whose workers may be other machines, the claim side carries no claim text
(`strict_claims`): the worker gives back only the findings, and this process reads the claim,
grounds it and decides. So the claim channel never crosses the wire; the price is that this process
makes each view again (for its hash and grounding), about 45% of a serial audit's CPU.

The worker gives back each record as JSON and each sample's findings. Here, in input order, each record is
admitted (a repeated run_id, a record in the audit file that stands, a bad record: `Intake.admit`), its findings go
into the evidence cache and the record into the audit file, as it came. So this process stays the only writer of
both, records are byte for byte what a serial audit writes, and resume and `--on-error` behave as they do
serially. Findings come from a worker even when the cache holds them (the view's hash is made there); for the rules
backend that is cheaper than asking.
"""

from __future__ import annotations

import pickle
import time
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from referee.audit.ingest.chunks import (
    BATCH_BYTES,
    FileBatch,
    LineChunk,
    RawFile,
    line_chunks,
    line_file,
    whole_size,
)
from referee.audit.ingest.inputs import input_size
from referee.audit.run.answers import (
    AnswerIntake,
    ChunkUnit,
    ChunkUnits,
    FileState,
    LineState,
    check_fingerprint,
    describe_chunk,
    meta_of,
)
from referee.audit.run.budget import BudgetPool
from referee.audit.run.pipeline import Auditor, Intake, RecordLine, cannot_audit, claim_text, text_sha256
from referee.audit.run.resume import action
from referee.audit.run.workerside import (
    STRICT,
    WorkerConfig,
    audit_chunk,
    code_fingerprint,
    decide_chunk,
    set_resume,
)
from referee.audit.trace import SHAPE_ERRORS, TraceItem
from referee.audit.view.blind import ViewParts, build_view, pack_parts, view_parts
from referee.core.executors import ExecutorOptions, default_workers, make_pool, map_chunks
from referee.errors import RefereeError, TraceError, UsageError, exc_brief

__all__ = ["ParallelAudit", "code_fingerprint", "executor_for"]

# imported once by the forkserver, so each worker starts ready
WORKER_MODULES = ("referee.audit.run.workerside", "referee.audit.extract.rules", "referee.audit.claim.reader",
                  "referee.audit.ingest.readers", "referee.audit.run.warm")

Result = RecordLine | TraceError
Unit = TraceItem | RawFile  # what audit_files hands out: a record read here (not admitted yet), a file the workers read


# with `adaptive` (--workers left out), a local pool's workers start once the rest of the line file, or the rest of
# the files this process reads itself, looks to take this long (their bytes at the rate this process has got
# through the bytes before), or once this audit has run this long (reading included: many small files are read
# and parsed here, at about as much again as their audit): a small input is audited here alone, without the
# quarter second a pool costs to start and stop
START_IF_LEFT_S = 0.5
START_AFTER_S = 1.0


@dataclass
class ParallelAudit(AnswerIntake):
    """`audit_files(..., executor=ParallelAudit(options))`: traces audited in chunks on `options`' pool.

    An input of at most one chunk is audited here, without starting a local pool; with `adaptive`, neither is one
    whose work looks too small for the pool to pay (START_IF_LEFT_S). Backends that call a model (`needs_llm`)
    are not for this: they wait on the network, and threads (`--concurrency`) serve them. Every record, read here
    or by a worker, is admitted (duplicates, resume, errors, gold, notes) here at its turn in input order.
    """

    options: ExecutorOptions
    on_start: Callable[[str], None] | None = None  # told what was started, once (the CLI prints it)
    strict_claims: bool | None = None  # None: strict on Dask (other machines), not on a local pool
    chunks: int = 0          # chunks sent to workers
    in_process: int = 0      # records audited here without a worker (a small input)
    lost: int = 0            # chunks sent again because their worker was lost
    irregular: int = 0       # files read here (from a slice on, or whole) that the workers could not read as here
    not_again: int = 0       # records the workers read and did not audit: their record in the file stands
    decided: int = 0         # strict chunks whose claims were read and decided on local processes
    here: int = 0            # chunks audited in this process while the workers were starting (or not started)
    adaptive: bool = False   # a local pool starts its workers only when the work left looks worth it
    started: bool = False    # whether the pool's workers were started
    lost_deciding: int = 0   # such chunks sent again because their local process was lost
    ended: int = 0           # workers ended for a record over the record budget (its chunk sent again)
    admits = True            # audit_files hands out the records it reads unadmitted (Intake)
    # the input as `audit_files` announces it (`expect`, `reading`): what `adaptive` weighs the work left by
    _paths: list[Path] = field(default_factory=list, init=False, repr=False)
    _input_size: int | None = field(default=None, init=False, repr=False)
    _read_size: int = field(default=0, init=False, repr=False)
    _one_file: bool = field(default=False, init=False, repr=False)

    def expect(self, paths: list[Path]) -> None:
        """The input paths of the audit to come: sized (lazily) to weigh the work left when `adaptive`."""
        self._paths, self._input_size, self._read_size = paths, None, 0
        # one file named alone is read here and its traces sent in chunks: whole, its runs would all go to one worker
        self._one_file = len(paths) == 1 and Path(paths[0]).is_file()

    def reading(self, path: Path) -> None:
        """A file this process reads itself has begun (`audit_files` says so): its bytes count as work begun."""
        self._read_size += _size(path)

    def _input_bytes(self) -> int:
        if self._input_size is None:
            self._input_size = input_size(self._paths)
        return self._input_size

    @property
    def reads_lines(self) -> bool:
        """Whether the workers read files themselves (a local pool: a file holds the claim channel, which never
        goes to Dask)."""
        return self.options.kind == "local" and not self.strict_claims

    def raw_file(self, path: Path, fmt: str | None, allow_pickle: bool = False) -> RawFile | None:
        """`path` as this executor's workers read it themselves (None: this process reads it): a trace v1 line
        file of more than one chunk by its lines, a small file of a built-in format whole (several to a chunk)."""
        if not self.reads_lines:
            return None
        if line_file(path, fmt, self.options.chunk_size):
            return RawFile(Path(path), fmt)
        if not self._one_file and (size := whole_size(path, fmt)) is not None:
            return RawFile(Path(path), fmt, whole=True, allow_pickle=allow_pickle, size=size)
        return None

    def run(self, auditor: Auditor, units: Iterable[Unit], audit_one: Callable[[tuple], Any],
            intake: Intake) -> Iterator[Any]:
        """Audit `units` as `audit_files` hands them out: records read here, line files and small files the workers
        read; `audit_one` audits one admitted (trace, view) in this process (a small input), `intake` admits each
        record at its turn (and reads here a file the workers could not read as a serial audit does)."""
        size = self.options.chunk_size
        if self.strict_claims is None:
            self.strict_claims = self.options.kind == "dask"
        self._intake, self._audit_one = intake, audit_one
        units = iter(units)
        head: list[Unit] = []
        whole = 0  # bytes of the small files in the head: more than one chunk of them is work for the pool
        try:
            for unit in units:
                head.append(unit)
                whole += unit.size if isinstance(unit, RawFile) and unit.whole else 0
                if len(head) > size or _lines(unit) or whole > BATCH_BYTES:
                    break
        except RefereeError:
            # what came before a bad file with --on-error stop is written, as serially (a line file ends the head:
            # nothing is read after it here)
            yield from self._audit_here(head)
            raise
        if not head:
            return  # nothing to audit: no pool, no cluster
        if len(head) <= size and whole <= BATCH_BYTES and self.options.kind == "local" and \
                not any(_lines(u) for u in head):
            yield from self._audit_here(head, count=True)
            return
        config = _pickled(WorkerConfig(auditor.extractor, auditor.claim_reader, auditor.policy, auditor.samples,
                                       auditor.budget))
        resume = pickle.dumps((intake.done, intake.settings) if self.reads_lines else ({}, ()),
                              protocol=pickle.HIGHEST_PROTOCOL)
        set_resume(resume)  # for the chunks audited here while the workers start
        lazy = self.adaptive and self.reads_lines
        # with a record budget, a local pool's workers are watched: one past it is ended (referee.audit.run.budget)
        pool = self._pool = BudgetPool(auditor.budget, self.options.n_workers, WORKER_MODULES, set_resume, (resume,),
                                       lazy=lazy) if auditor.budget is not None and self.options.kind == "local" \
            else make_pool(self.options, WORKER_MODULES, set_resume, (resume,), lazy=lazy)
        self._fallen: set[int] = set()        # line files (by their place in the input) read here from a line on
        self._records: dict[int, int] = {}     # records of each line file the workers have read so far
        self._left: dict[tuple[str, int], int] = {}  # bytes of its file after a line chunk made before the start
        self._began = time.perf_counter()    # what START_AFTER_S is counted from
        self._line_s = 0.0                    # seconds spent auditing line chunks and small files here
        self._line_bytes = 0                  # bytes of those (the first chunk left out)
        self._whole_here = 0                  # bytes of the small files audited here
        try:
            if not lazy:
                self._start()
            window = 2 * self.options.n_workers + 1
            # while a local pool starts, its first chunks are audited here (a Dask chunk never is)
            answers = map_chunks(pool, audit_chunk, self._chunks(chain(head, units)), fixed=(config,),
                                 window=window, describe=describe_chunk,
                                 here=self._here if self.reads_lines else None)
            if self.strict_claims:
                # the claims are read and decided on this machine's own cores, not in this process alone
                deciders = make_pool(ExecutorOptions("local", self.options.local_workers), WORKER_MODULES)
                try:
                    decided = map_chunks(deciders, decide_chunk, self._to_decide(answers), fixed=(config,),
                                         window=2 * self.options.local_workers + 1, describe=describe_chunk)
                    for state, answer in decided:
                        yield from self._finish(auditor, state, answer)
                        if intake.stopped():
                            return
                finally:
                    self.lost_deciding = deciders.losses
                    deciders.close()
                return
            for state, answer in answers:
                if isinstance(state, LineState):
                    yield from self._finish_lines(auditor, state, answer)
                elif isinstance(state, FileState):
                    yield from self._finish_files(auditor, state, answer)
                else:
                    yield from self._finish(auditor, state, answer)
                if intake.stopped():
                    return
        finally:
            self.lost = pool.losses
            pool.close()
            self.ended = len(pool.watch.ended) if isinstance(pool, BudgetPool) else 0

    def _audit_here(self, units: list[Unit], count: bool = False) -> Iterator[Any]:
        """Units audited in this process, each record admitted at its turn (a line file is never among them);
        with `count`, each record or error counted in `in_process`."""
        for unit in units:
            if self._intake.stopped():
                return
            got = self._intake.rest_of(unit.path, 0, unit.fmt) if isinstance(unit, RawFile) else \
                (self._audit_one(job) for job in self._intake.jobs_of([unit]))
            for result in got:
                self.in_process += count
                yield result

    def _start(self) -> None:
        """Start the pool's workers (once), and say so."""
        if self.started:
            return
        self.started = True
        self._pool.start()
        if self.on_start:
            self.on_start(self.options.describe() + (f"; claims read and decided here, on "
                                                     f"{self.options.local_workers} processes"
                                                     if self.strict_claims else ""))

    def _here(self, config: bytes, payload: Any) -> tuple[str, Any]:
        self.here += 1
        t0 = time.perf_counter()
        try:
            return audit_chunk(config, payload)
        finally:
            if not self.started:
                self._weigh(payload, time.perf_counter() - t0)

    def _weigh(self, payload: Any, seconds: float) -> None:
        """After a chunk audited here before the workers were started: start them if the rest looks worth it."""
        elapsed = time.perf_counter() - self._began
        worth = elapsed >= START_AFTER_S
        if isinstance(payload, (LineChunk, FileBatch)):
            if isinstance(payload, LineChunk):
                left, size = self._left.pop((payload.file, payload.first_line), 0), len(payload.data)
            else:  # small files: all the input's bytes not audited here yet are left (the workers have none)
                self._whole_here += payload.size
                left, size = max(self._input_bytes() - self._whole_here - self._read_size, 0), payload.size
            if self.here > 1:  # the first chunk also pays for compiling the rules' patterns: not a rate
                self._line_s += seconds
                self._line_bytes += size
                worth = worth or left * self._line_s / max(self._line_bytes, 1) >= START_IF_LEFT_S
        elif self.here > 1 and (begun := self._read_size) > 0:
            # files read here: the input's bytes not begun yet, at the rate the begun ones took
            # (reading included; begun runs ahead of audited, so the rate is if anything too fast, and the start
            # late rather than early)
            worth = worth or (self._input_bytes() - begun) * elapsed / begun >= START_IF_LEFT_S
        if worth:
            self._start()

    def _to_decide(self, answers: Iterator[tuple[Any, Any]]) -> Iterator[tuple["ChunkUnits", Any]]:
        """Strict chunks as the extraction workers answered them, each with what deciding needs that stayed
        here: the view parts packed for the extraction, and the claim sides with their claim texts."""
        for units, answer in answers:
            if answer is None:
                yield units, None
                continue
            check_fingerprint(answer[0])
            sides = [(u.item.trace.run_id, u.item.trace.task, meta_of(u.item.trace), claim_text(u.item.trace))
                     for u in units if u.sent]
            self.decided += 1
            yield units, (units.packed, pickle.dumps((sides, answer[1]), protocol=pickle.HIGHEST_PROTOCOL))

    def _chunks(self, units: Iterator[Unit]) -> Iterator[tuple[Any, Any]]:
        """Chunks in input order: records read here (`--chunk-size` to a chunk), line chunks of a line file, and
        small files (up to `--chunk-size` files or BATCH_BYTES to a chunk)."""
        buf: list[ChunkUnit] = []
        parts: list[ViewParts] = []
        sides: list[tuple] = []
        files: list[RawFile] = []
        seq = size = 0  # size: the bytes of `files`
        try:
            for unit in units:
                if isinstance(unit, RawFile) and unit.whole:
                    if buf:
                        yield self._batch(buf, parts, sides)
                        buf, parts, sides = [], [], []
                    files.append(unit)
                    size += unit.size
                    if len(files) >= self.options.chunk_size or size >= BATCH_BYTES:
                        yield self._files(files)
                        files, size = [], 0
                    continue
                if files:
                    yield self._files(files)
                    files, size = [], 0
                if isinstance(unit, RawFile):
                    if buf:
                        yield self._batch(buf, parts, sides)
                        buf, parts, sides = [], [], []
                    seq += 1
                    yield from self._line_chunks(seq, unit.path)
                    continue
                buf.append(self._unit(unit, parts, sides))
                if len(buf) == self.options.chunk_size:
                    yield self._batch(buf, parts, sides)
                    buf, parts, sides = [], [], []
        except RefereeError:
            # the chunk made so far is audited before the error stops the audit
            if buf:
                yield self._batch(buf, parts, sides)
            if files:
                yield self._files(files)
            raise
        if buf:
            yield self._batch(buf, parts, sides)
        if files:
            yield self._files(files)

    def _line_chunks(self, seq: int, path: Path) -> Iterator[tuple[LineState, LineChunk]]:
        self._records[seq] = 0
        left = _size(path)
        for chunk in line_chunks(path, self.options.chunk_size):
            if seq in self._fallen:  # an earlier slice was irregular: this process reads the rest
                break
            self.chunks += 1
            left -= len(chunk.data)
            if not self.started:  # what the start is weighed on (`_weigh`)
                self._left[(chunk.file, chunk.first_line)] = left
            yield LineState(seq, chunk), chunk

    def _unit(self, item: TraceItem, parts: list[ViewParts], sides: list[tuple]) -> ChunkUnit:
        """A record read here, as its chunk keeps it; its view parts and claim side added to what is sent, unless
        it has none (a record that did not read) or its record in the audit file stands."""
        u = ChunkUnit(item)
        trace = item.trace
        if trace is None:
            return u  # its error is said at its turn
        prev = self._intake.done.get(trace.run_id)
        if prev is not None:  # what its admission compares with the file's record, made once, here
            try:
                u.hashes = build_view(trace).sha256, text_sha256(claim_text(trace))
            except SHAPE_ERRORS:
                pass
            if u.hashes is not None and action(prev, *u.hashes, self._intake.settings) == "skip":
                u.standing = True
                return u
        try:
            p = view_parts(trace)
            side = (trace.run_id, trace.task, meta_of(trace), STRICT if self.strict_claims else claim_text(trace))
        except SHAPE_ERRORS as exc:
            u.error = cannot_audit(trace, exc_brief(exc))
        else:
            parts.append(p)
            sides.append(side)
            u.sent = True
        return u

    def _batch(self, buf: list[ChunkUnit], parts: list[ViewParts],
               sides: list[tuple]) -> tuple["ChunkUnits", tuple[bytes, bytes] | None]:
        """A chunk as this process keeps it (its units) and as it is sent (None: nothing to send)."""
        units = ChunkUnits(buf)
        if not parts:
            return units, None
        self.chunks += 1
        units.packed = pack_parts(parts)
        return units, (units.packed, pickle.dumps(sides, protocol=pickle.HIGHEST_PROTOCOL))

    def _files(self, files: list[RawFile]) -> tuple[FileState, FileBatch]:
        """Small files as one chunk."""
        self.chunks += 1
        batch = FileBatch(tuple((str(f.path), f.fmt) for f in files), allow_pickle=any(f.allow_pickle for f in files),
                          size=sum(f.size for f in files))
        return FileState(batch), batch


def _lines(unit: Unit) -> bool:
    return isinstance(unit, RawFile) and not unit.whole


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # the reader says what is wrong with it


def _pickled(config: WorkerConfig) -> bytes:
    try:
        return pickle.dumps(config, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # a plugin holding a connection, a lock, a lambda
        raise UsageError(f"the backends or the policy cannot be sent to worker processes ({type(exc).__name__}: "
                         f"{str(exc)[:200]})", fix="run with --workers 1") from None


def executor_for(uses_llm: bool, options: ExecutorOptions, *, workers_given: bool = False,
                 say: Callable[[str], None] | None = None) -> ParallelAudit | None:
    """The executor `referee audit` uses: a ParallelAudit for backends that compute (rules, a CPU plugin)
    on more than one worker or on Dask; None (this process, or threads for a model) otherwise.

    >>> executor_for(False, ExecutorOptions("local", workers=1)) is None
    True
    >>> executor_for(False, ExecutorOptions("local", workers=4)).options.n_workers
    4
    """
    if uses_llm:
        if options.kind == "dask":
            raise UsageError("--executor dask is for backends that compute (rules, CPU plugins); a model backend "
                             "waits on the network", fix="use --concurrency for the llm backend")
        if workers_given and say:
            say("referee: note: the llm backend runs --concurrency requests on threads; --workers is not used")
        return None
    if options.kind == "local" and options.n_workers <= 1:
        return None
    if options.kind == "local" and say and options.n_workers > (cores := default_workers()):
        # more processes than cores only take turns on them, each with its own memory: slower, not faster
        say(f"referee: note: --workers {options.n_workers} on the {cores} core{'s' if cores > 1 else ''} this "
            f"process may use: the workers take turns on them; leave --workers out to use every core")
    # --workers left out: the pool is started only for work it speeds up; asked for, it is started at once
    return ParallelAudit(options, on_start=(lambda what: say(f"referee: auditing on {what}")) if say else None,
                         adaptive=options.kind == "local" and not workers_given)
