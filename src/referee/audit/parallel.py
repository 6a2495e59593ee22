"""Audit in chunks on a process pool or a Dask cluster; this process reads the input and writes every record.

Per trace, this process (the parent) copies out two sealed compartments and sends a chunk of them:

- the **view parts** (`view.view_parts`: task, observations, actions with a terminal answer's words
  left out, tools), which a worker freezes and hashes into the claim-blind view and gives to the
  extractor (`referee.audit.extract.worker`, inside the extractor wall);
- the **claim side**: the claim text (the report, or the terminal answer call), run_id and the
  grouping fields of `meta`. A worker unpacks it only after the whole chunk's extraction is done,
  gives the claim text to the claim reader alone, grounds the report in the view's observations
  and decides, as `Auditor.audit` does in one process.

On a Dask cluster, whose workers may be other machines, the claim side carries no claim text
(`strict_claims`): the worker gives back only the findings, and this process reads the claim,
grounds it and decides. So the claim channel never crosses the wire; the price is that this process
makes each view again (for its hash and grounding), about 45% of a serial audit's CPU.

The worker gives back each record as JSON and each sample's findings. Here, in input order, the
findings go into the evidence cache and the record into the audit file, as it came. So this
process stays the only writer of both, records are byte for byte what a serial audit writes, and
resume and `--on-error` behave as they do serially. Findings come from a worker even when the
cache holds them (the view's hash is made there); for the rules backend that is cheaper than asking.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import time
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from referee.audit.extract.worker import extract_views
from referee.audit.filechunks import Irregular, LineChunk, RawFile, audit_lines, line_chunks, line_file
from referee.audit.pipeline import Auditor, Intake, RecordLine, cannot_audit, claim_text
from referee.audit.records import Finding
from referee.audit.trace import SHAPE_ERRORS, Trace, TraceItem
from referee.audit.view import ViewParts, freeze_view, pack_parts, unpack_parts, view_parts
from referee.errors import RefereeError, TraceError, UsageError, exc_brief
from referee.executors import ExecutorOptions, default_workers, make_pool, map_chunks

# imported once by the forkserver, so each worker starts ready
WORKER_MODULES = ("referee.audit.parallel", "referee.audit.extract.rules", "referee.audit.claims", "referee.audit.warm")
META_KEYS = ("group", "split", "source", "advisory")  # the fields of `meta` a record keeps

Result = RecordLine | TraceError
Job = tuple  # (Trace, ClaimBlindView or None): what audit_files hands out
# per trace sent: (record JSON, view sha256, findings JSON per sample (None: not to be cached), error)
Answer = tuple


# with `adaptive` (--workers left out), a local pool's workers start once the rest of the line file, or the rest of
# the files this process reads itself, looks to take this long (their bytes at the rate this process has got
# through the bytes before), or once this audit has run this long (reading included: many small files are read
# and parsed here, at about as much again as their audit): a small input is audited here alone, without the
# quarter second a pool costs to start and stop
START_IF_LEFT_S = 0.5
START_AFTER_S = 1.0
SIZE_ENTRIES = 100_000  # files and folders looked at to size the input (more: it is big, start the workers)

STRICT = "\0referee: claim kept in the parent\0"  # a claim side's text slot when the claim may not cross


@dataclass(frozen=True)
class _Config:
    """What every worker needs, pickled once per audit: the backends, the policy, the samples per trace."""

    extractor: Any
    claim_reader: Any
    policy: Any  # LoadedPolicy
    samples: int


_CONFIGS: dict[str, Auditor] = {}  # sha256 of a pickled _Config -> its auditor, built once per worker process
_RESUME: list[tuple] = []  # this worker's copy of (Intake.done, Intake.settings), set as it starts


def _set_resume(blob: bytes) -> None:
    """A local worker's initializer: what resume compares with, so that a run whose record stands is not
    audited again."""
    _RESUME[:] = [pickle.loads(blob)]


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """SHA-256 of the auditor's own source (every module and policy file of referee.audit): a worker whose
    referee differs from this one's would write other records, so the parent refuses its answers."""
    import referee.audit as pkg

    root = Path(pkg.__file__).parent
    h = hashlib.sha256()
    for f in sorted(root.rglob("*")):
        if f.suffix in (".py", ".yaml") and "__pycache__" not in f.parts:
            h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _auditor(blob: bytes) -> Auditor:
    key = hashlib.sha256(blob).hexdigest()
    got = _CONFIGS.get(key)
    if got is None:
        c: _Config = pickle.loads(blob)
        got = _CONFIGS[key] = Auditor(c.policy, c.extractor, c.claim_reader, samples=c.samples)
    return got


def audit_chunk(config: bytes, payload: tuple[bytes, bytes] | LineChunk) -> tuple[str, Any]:
    """On a worker: the extraction of every view of the chunk first, then the claims, then each record.

    `payload` is (packed view parts, pickled claim sides), one of each per trace, in the same order.
    Gives back this worker's `code_fingerprint()` with the answers.
    """
    auditor = _auditor(config)
    if isinstance(payload, LineChunk):  # lines of a trace v1 file: read here, then audited record by record
        return code_fingerprint(), audit_lines(auditor, payload, _RESUME[0] if _RESUME else None)
    views, claim_sides = payload
    extracted = extract_views(auditor.extractor, views, auditor.samples, SHAPE_ERRORS)  # claims still packed
    out: list[Answer] = []
    for (facts, found, errors, error), (run_id, task, meta, text) in zip(extracted, pickle.loads(claim_sides)):
        if error is not None:
            out.append((None, None, [], error))
            continue
        if text == STRICT:  # the claim stays with the parent: give back the findings alone
            out.append((None, facts.sha256, [f for f, _ in found], None, [ok for _, ok in found], errors))
            continue
        try:
            findings = [{k: Finding.model_validate(v) for k, v in json.loads(f).items()} for f, _ in found]
            trace = Trace.model_construct(run_id=run_id, task=task, steps=[], meta=meta)
            claim = auditor.read_claim(text, errors)  # after the extraction's errors, as serially
            rec = auditor.finish(trace, text, claim, facts, findings, errors)
            out.append((rec.model_dump_json(), facts.sha256, [f if ok else None for f, ok in found], None))
        except SHAPE_ERRORS as exc:
            out.append((None, None, [], exc_brief(exc)))
    return code_fingerprint(), out


def decide_chunk(config: bytes, payload: tuple[bytes, bytes]) -> tuple[str, list[Answer]]:
    """On a local process: the records of a strict chunk from the findings its extraction workers gave back.

    `payload` is (packed view parts, pickled (claim sides, the extraction answers)); the claim texts never
    left this machine. Each view is made again here, for its hash (checked against the one the findings
    were made from) and for grounding.
    """
    from referee.audit.facts import ViewFacts

    auditor = _auditor(config)
    packed, rest = payload
    sides, extracted = pickle.loads(rest)
    out: list[Answer] = []
    for parts, (run_id, task, meta, text), got in zip(unpack_parts(packed), sides, extracted):
        _, sha, found, error, *more = got
        if error is not None:
            out.append((None, None, [], error))
            continue
        ok, errors = more
        try:
            facts = ViewFacts.of(freeze_view(parts))
            if facts.sha256 != sha:
                raise ValueError(f"the findings were made from another view ({sha[:12]}, here {facts.sha256[:12]})")
            findings = [{k: Finding.model_validate(v) for k, v in json.loads(f).items()} for f in found]
            trace = Trace.model_construct(run_id=run_id, task=task, steps=[], meta=meta)
            claim = auditor.read_claim(text, errors)
            rec = auditor.finish(trace, text, claim, facts, findings, errors)
            out.append((rec.model_dump_json(), sha, [f if k else None for f, k in zip(found, ok)], None))
        except SHAPE_ERRORS as exc:
            out.append((None, None, [], exc_brief(exc)))
    return code_fingerprint(), out


def _meta(trace: Trace) -> dict:
    return {k: v for k, v in (trace.meta or {}).items() if k in META_KEYS}


class _Units(list):
    """The units of one chunk, as this process keeps them, and the view parts packed for it (what deciding a
    strict chunk on a local process needs again)."""

    packed: bytes | None = None


@dataclass
class _Unit:
    """One trace of a chunk, as the parent keeps it: its run_id, or the error that stopped it here."""

    trace: Trace
    error: TraceError | None = None


@dataclass
class ParallelAudit:
    """`audit_files(..., executor=ParallelAudit(options))`: traces audited in chunks on `options`' pool.

    An input of at most one chunk is audited here, without starting a local pool; with `adaptive`, neither is one
    whose work looks too small for the pool to pay (START_IF_LEFT_S). Backends that call a model (`needs_llm`)
    are not for this: they wait on the network, and threads (`--concurrency`) serve them.
    """

    options: ExecutorOptions
    on_start: Callable[[str], None] | None = None  # told what was started, once (the CLI prints it)
    strict_claims: bool | None = None  # None: strict on Dask (other machines), not on a local pool
    chunks: int = 0          # chunks sent to workers
    in_process: int = 0      # traces audited here without a worker (a small input)
    lost: int = 0            # chunks sent again because their worker was lost
    irregular: int = 0       # line files read here from a slice on that was not one JSON object per line
    not_again: int = 0       # records the workers read and did not audit: their record in the file stands
    decided: int = 0         # strict chunks whose claims were read and decided on local processes
    here: int = 0            # chunks audited in this process while the workers were starting (or not started)
    adaptive: bool = False   # a local pool starts its workers only when the work left looks worth it
    started: bool = False    # whether the pool's workers were started
    lost_deciding: int = 0   # such chunks sent again because their local process was lost
    # the input as `audit_files` announces it (`expect`, `reading`): what `adaptive` weighs the work left by
    _paths: list[Path] = field(default_factory=list, init=False, repr=False)
    _input_size: int | None = field(default=None, init=False, repr=False)
    _read_size: int = field(default=0, init=False, repr=False)

    def expect(self, paths: list[Path]) -> None:
        """The input paths of the audit to come: sized (lazily) to weigh the work left when `adaptive`."""
        self._paths, self._input_size, self._read_size = paths, None, 0

    def reading(self, path: Path) -> None:
        """A file this process reads itself has begun (`audit_files` says so): its bytes count as work begun."""
        self._read_size += _size(path)

    def _input_bytes(self) -> int:
        if self._input_size is None:
            self._input_size = input_size(self._paths)
        return self._input_size

    @property
    def reads_lines(self) -> bool:
        """Whether the workers read trace v1 line files themselves (a local pool: the lines hold the claim
        channel, which never goes to Dask)."""
        return self.options.kind == "local" and not self.strict_claims

    def reads_file(self, path: Path, fmt: str | None) -> bool:
        """Whether this executor's workers read `path` themselves: a trace v1 line file of more than one chunk
        (a smaller one is read and audited in this process, without a pool)."""
        return self.reads_lines and line_file(path, fmt, self.options.chunk_size)

    def run(self, auditor: Auditor, jobs: Iterable[Job | RawFile], audit_one: Callable[[Job], Any],
            intake: Intake | None = None) -> Iterator[Any]:
        """Audit `jobs` (trace, its view when the resume already made it), and the line files among them, as
        `audit_files` hands them out; `audit_one` audits one job in this process (a small input), `intake`
        decides on each record a worker read (and reads a file whose lines are irregular here)."""
        size = self.options.chunk_size
        if self.strict_claims is None:
            self.strict_claims = self.options.kind == "dask"
        jobs = iter(jobs)
        head: list[Job | RawFile] = []
        try:
            for job in jobs:
                head.append(job)
                if len(head) > size or isinstance(job, RawFile):
                    break
        except RefereeError:
            for t in head:  # what came before a bad record with --on-error stop is written, as serially
                if not isinstance(t, RawFile):  # (a line file ends the head: nothing is read after it here)
                    yield audit_one(t)
            raise
        if not head:
            return  # nothing to audit: no pool, no cluster
        if len(head) <= size and self.options.kind == "local" and not any(isinstance(j, RawFile) for j in head):
            self.in_process += len(head)
            for t in head:
                if not isinstance(t, RawFile):
                    yield audit_one(t)
            return
        config = _pickled(_Config(auditor.extractor, auditor.claim_reader, auditor.policy, auditor.samples))
        resume = pickle.dumps((intake.done, intake.settings) if intake is not None and self.reads_lines else ({}, ()),
                              protocol=pickle.HIGHEST_PROTOCOL)
        _set_resume(resume)  # for the chunks audited here while the workers start
        lazy = self.adaptive and self.reads_lines
        pool = self._pool = make_pool(self.options, WORKER_MODULES, _set_resume, (resume,), lazy=lazy)
        self._fallen: set[int] = set()        # line files (by their place in the input) read here from a line on
        self._records: dict[int, int] = {}     # records of each line file the workers have read so far
        self._left: dict[tuple[str, int], int] = {}  # bytes of its file after a line chunk made before the start
        self._began = time.perf_counter()    # what START_AFTER_S is counted from
        self._line_s = 0.0                    # seconds spent auditing line chunks here
        self._line_bytes = 0                  # bytes of the line chunks audited here
        try:
            if not lazy:
                self._start()
            window = 2 * self.options.n_workers + 1
            # while a local pool starts, its first chunks are audited here (a Dask chunk never is)
            answers = map_chunks(pool, audit_chunk, self._chunks(chain(head, jobs)), fixed=(config,),
                                 window=window, describe=_describe,
                                 here=self._here if self.reads_lines else None)
            if self.strict_claims:
                # the claims are read and decided on this machine's own cores, not in this process alone
                deciders = make_pool(ExecutorOptions("local", self.options.local_workers), WORKER_MODULES)
                try:
                    decided = map_chunks(deciders, decide_chunk, self._to_decide(answers), fixed=(config,),
                                         window=2 * self.options.local_workers + 1, describe=_describe)
                    for state, answer in decided:
                        yield from self._finish(auditor, state, answer)
                finally:
                    self.lost_deciding = deciders.losses
                    deciders.close()
                return
            for state, answer in answers:
                if isinstance(state, _Lines):
                    yield from self._finish_lines(auditor, state, answer, intake)
                    if intake is not None and intake.stopped():
                        return
                else:
                    yield from self._finish(auditor, state, answer)
        finally:
            self.lost = pool.losses
            pool.close()

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
        if isinstance(payload, LineChunk):
            left = self._left.pop((payload.file, payload.first_line), 0)
            if self.here > 1:  # the first chunk also pays for compiling the rules' patterns: not a rate
                self._line_s += seconds
                self._line_bytes += len(payload.data)
                worth = worth or left * self._line_s / max(self._line_bytes, 1) >= START_IF_LEFT_S
        elif self.here > 1 and (begun := self._read_size) > 0:
            # files read here: the input's bytes not begun yet, at the rate the begun ones took (reading included;
            # begun runs ahead of audited, so the rate is if anything too fast, and the start late rather than early)
            worth = worth or (self._input_bytes() - begun) * elapsed / begun >= START_IF_LEFT_S
        if worth:
            self._start()

    def _to_decide(self, answers: Iterator[tuple[Any, Any]]) -> Iterator[tuple["_Units", Any]]:
        """Strict chunks as the extraction workers answered them, each with what deciding needs that stayed
        here: the view parts packed for the extraction, and the claim sides with their claim texts."""
        for units, answer in answers:
            if answer is None:
                yield units, None
                continue
            self._check(answer[0])
            sides = [(u.trace.run_id, u.trace.task, _meta(u.trace), claim_text(u.trace)) for u in units
                     if u.error is None]
            self.decided += 1
            yield units, (units.packed, pickle.dumps((sides, answer[1]), protocol=pickle.HIGHEST_PROTOCOL))

    def _chunks(self, jobs: Iterator[Job | RawFile]) -> Iterator[tuple[Any, Any]]:
        buf: list[_Unit] = []
        parts: list[ViewParts] = []
        sides: list[tuple] = []
        seq = 0
        try:
            for job in jobs:
                if isinstance(job, RawFile):
                    if buf:
                        yield self._batch(buf, parts, sides)
                        buf, parts, sides = [], [], []
                    seq += 1
                    self._records[seq] = 0
                    left = _size(job.path)
                    for chunk in line_chunks(job.path, self.options.chunk_size):
                        if seq in self._fallen:  # an earlier slice was irregular: this process reads the rest
                            break
                        self.chunks += 1
                        left -= len(chunk.data)
                        if not self.started:  # what the start is weighed on (`_weigh`)
                            self._left[(chunk.file, chunk.first_line)] = left
                        yield _Lines(seq, chunk), chunk
                    continue
                trace, _view = job  # a view the resume made is made again on the worker, from its parts
                u = _Unit(trace)
                try:
                    p = view_parts(trace)
                    side = (trace.run_id, trace.task, _meta(trace), STRICT if self.strict_claims else claim_text(trace))
                except SHAPE_ERRORS as exc:
                    u.error = cannot_audit(trace, exc_brief(exc))
                else:
                    parts.append(p)
                    sides.append(side)
                buf.append(u)
                if len(buf) == self.options.chunk_size:
                    yield self._batch(buf, parts, sides)
                    buf, parts, sides = [], [], []
        except RefereeError:
            if buf:  # the chunk made so far is audited before the error stops the audit
                yield self._batch(buf, parts, sides)
            raise
        if buf:
            yield self._batch(buf, parts, sides)

    def _batch(self, buf: list[_Unit], parts: list[ViewParts],
               sides: list[tuple]) -> tuple["_Units", tuple[bytes, bytes] | None]:
        """A chunk as this process keeps it (its units) and as it is sent (None: nothing to send)."""
        units = _Units(buf)
        if not parts:
            return units, None
        self.chunks += 1
        units.packed = pack_parts(parts)
        return units, (units.packed, pickle.dumps(sides, protocol=pickle.HIGHEST_PROTOCOL))

    def _finish(self, auditor: Auditor, units: list[_Unit],
                answer: tuple[str, list[Answer]] | None) -> Iterator[Result]:
        if answer is not None:
            self._check(answer[0])
        results = iter(answer[1] if answer is not None else ())
        for u in units:
            if u.error is not None:
                yield u.error
                continue
            line, sha, found, error = next(results)
            if error is not None or line is None:
                yield cannot_audit(u.trace, error or "no answer from the worker")
                continue
            _store(auditor, sha, found)
            yield RecordLine(u.trace.run_id, line)


    def _finish_lines(self, auditor: Auditor, state: "_Lines", answer: tuple[str, Any] | None,
                      intake: Intake | None) -> Iterator[Result]:
        """The records a worker read from a line chunk, each admitted here in order as a serial audit would."""
        assert intake is not None and answer is not None  # line files come only with an intake
        self._check(answer[0])
        got = answer[1]
        if state.seq in self._fallen:
            return  # this file is read here from an earlier, irregular slice on
        if isinstance(got, Irregular):
            self._fallen.add(state.seq)
            self.irregular += 1
            yield from intake.rest_of(Path(got.file), self._records[state.seq])
            return
        self._records[state.seq] += len(got)
        for line, run_id, error, gold, scores, ignored, group, view_sha, claim_sha, answer_ in got:
            item = TraceItem(file=state.chunk.file, line=line, run_id=run_id, error=error, gold=gold, scores=scores,
                             ignored=ignored, group=group)
            what = intake.admit(item, _hashes(view_sha, claim_sha))
            self.not_again += what == "skip" and answer_ is None and error is None
            if what == "stop":
                return
            if what == "skip":
                continue
            if answer_ is None:  # the worker found the record standing; resume disagrees only if the file changed
                raise RefereeError(f"run_id {run_id}: a worker skipped a run this audit must audit again",
                                   fix="report this; run with --workers 1 meanwhile")
            if isinstance(answer_, str):
                yield cannot_audit(str(run_id), answer_)
                continue
            line_json, found = answer_
            _store(auditor, str(view_sha), found)
            yield RecordLine(str(run_id), line_json)

    def _check(self, fingerprint: str) -> None:
        if fingerprint != code_fingerprint():
            raise RefereeError(f"a worker runs other referee code than this process (auditor source sha256 "
                               f"{fingerprint[:12]} there, {code_fingerprint()[:12]} here): its records would "
                               "differ", fix="install the same referee on the workers as here")


def input_size(paths: list[Path], entries: int = SIZE_ENTRIES) -> int:
    """The bytes of the regular files under `paths` (links not followed), looking at no more than `entries`
    files and folders: past that, a size as big as any input.

    >>> import tempfile; d = Path(tempfile.mkdtemp()); _ = (d / "a").write_bytes(b"12345")
    >>> input_size([d]), input_size([d / "a", d / "missing"]), input_size([d], entries=1) > 1 << 40
    (5, 5, True)
    """
    total, seen, big = 0, 0, 1 << 50
    stack = [str(p) for p in reversed(paths)]
    while stack:
        top = stack.pop()
        seen += 1
        if seen > entries:
            return big
        try:
            if not (os.path.isdir(top) and not os.path.islink(top)):
                total += os.stat(top).st_size
                continue
            with os.scandir(top) as it:
                for e in it:  # counted entry by entry: one folder of a million files is looked at no further
                    seen += 1
                    if seen > entries:
                        return big
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
                    elif e.is_file(follow_symlinks=False):
                        total += e.stat(follow_symlinks=False).st_size
        except OSError:
            continue  # the reader says what is wrong with it
    return total


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # the reader says what is wrong with it


def _store(auditor: Auditor, view_sha: str, found: list[str | None]) -> None:
    """A worker's findings, as a serial audit would have stored and counted them: a sample the cache already
    holds is a cache hit (no backend call, nothing written: the record is the same either way); any other is
    a backend call, stored when it was answered (a failed call is asked again by a resume)."""
    x, cache = auditor.extractor, auditor.cache
    for i, blob in enumerate(found):
        if cache is not None and cache.has_evidence(x.name, x.model, x.prompt_version, view_sha, i):
            continue
        auditor.backend_calls += 1
        if cache is not None and blob is not None:
            cache.put_evidence_json(x.name, x.model, x.prompt_version, view_sha, i, blob)


def _hashes(view_sha: str | None, claim_sha: str | None) -> Callable[[], tuple[str, str] | None]:
    """A record's hashes as `Intake.admit` asks for them (None: the worker could not make its view)."""
    return lambda: None if view_sha is None or claim_sha is None else (view_sha, claim_sha)


@dataclass(frozen=True)
class _Lines:
    """A line chunk as the parent keeps it: which line file (its place among the inputs) and the chunk."""

    seq: int
    chunk: LineChunk


def _describe(units: Any) -> str:
    if isinstance(units, _Lines):
        return f"{units.chunk.file} from line {units.chunk.first_line}"
    ids = [u.trace.run_id for u in units]
    return f"the chunk of run_ids {ids[0]} .. {ids[-1]}" if ids else "an empty chunk"


def _pickled(config: _Config) -> bytes:
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
