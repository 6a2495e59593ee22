"""The parent's side of a ParallelAudit's answers: each record a worker made, admitted here at its turn.

A chunk is kept here as it was sent (`ChunkUnits` of `ChunkUnit`, a `LineState` or a `FileState`); when its answer
comes, `AnswerIntake` admits each record in input order (a repeated run_id, a record that stands, a bad record:
`Intake.admit`), stores its findings in the evidence cache as a serial audit would, and gives back its line to
write, as it came from the worker (referee.audit.run.parallel).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from referee.audit.ingest.chunks import FileBatch, Irregular, LineChunk
from referee.audit.run.pipeline import Auditor, Intake, RecordLine, cannot_audit
from referee.audit.run.workerside import Answer, code_fingerprint
from referee.audit.trace import Trace, TraceItem
from referee.errors import RefereeError, TraceError

META_KEYS = ("group", "split", "source", "advisory")  # the fields of `meta` a record keeps

Result = RecordLine | TraceError


def meta_of(trace: Trace) -> dict:
    """The fields of a trace's `meta` its record keeps."""
    return {k: v for k, v in (trace.meta or {}).items() if k in META_KEYS}


class ChunkUnits(list):
    """The units of one chunk, as this process keeps them, and the view parts packed for it (what deciding a
    strict chunk on a local process needs again)."""

    packed: bytes | None = None


@dataclass
class ChunkUnit:
    """One record read here, as a chunk keeps it until its turn to be admitted: the error that stopped it here,
    whether it was sent, and its view and claim hashes when the resume needs them (its run_id is in the file)."""

    item: TraceItem
    error: TraceError | None = None
    sent: bool = False
    hashes: tuple[str, str] | None = None
    standing: bool = False  # its record in the audit file stands: not sent (admitting it says so again)


@dataclass(frozen=True)
class LineState:
    """A line chunk as the parent keeps it: which line file (its place among the inputs) and the chunk."""

    seq: int
    chunk: LineChunk


@dataclass(frozen=True)
class FileState:
    """Small files sent whole, as the parent keeps them: the batch (names and formats, in input order)."""

    batch: FileBatch


class AnswerIntake:
    """What `ParallelAudit` does with its workers' answers (it sets `_intake`, `_audit_one` and the counters)."""

    _intake: Intake
    _audit_one: Callable[[tuple], Any]
    _fallen: set[int]  # line files (by their place in the input) read here from an irregular slice on
    _records: dict[int, int]  # records of each line file the workers have read so far
    irregular: int
    not_again: int

    def _finish(self, auditor: Auditor, units: list[ChunkUnit],
                answer: tuple[str, list[Answer]] | None) -> Iterator[Result]:
        """The records read here of one chunk, each admitted at its turn, and what the workers made of them."""
        if answer is not None:
            check_fingerprint(answer[0])
        results = iter(answer[1] if answer is not None else ())
        for u in units:
            got = next(results, None) if u.sent else None
            what = self._intake.admit(u.item, hashes_of(*(u.hashes or (None, None))))
            if what == "stop":
                return
            if what == "skip":
                continue
            trace = u.item.trace
            assert trace is not None  # a record that did not read is skipped (its error said) by admit
            if u.error is not None:
                yield u.error
                continue
            if not u.sent:  # standing when read, admitted now: the file's record cannot have changed; audit it here
                yield self._audit_one((trace, None))
                continue
            line, sha, found, error = got if got is not None else (None, None, [], None)
            if error is not None or line is None:
                yield cannot_audit(trace, error or "no answer from the worker")
                continue
            store_findings(auditor, sha, found)
            yield RecordLine(trace.run_id, line)

    def _finish_lines(self, auditor: Auditor, state: LineState, answer: tuple[str, Any] | None) -> Iterator[Result]:
        """The records a worker read from a line chunk, each admitted here in order as a serial audit would."""
        assert answer is not None
        check_fingerprint(answer[0])
        got = answer[1]
        if state.seq in self._fallen:
            return  # this file is read here from an earlier, irregular slice on
        if isinstance(got, Irregular):
            self._fallen.add(state.seq)
            self.irregular += 1
            yield from self._intake.rest_of(Path(got.file), self._records[state.seq], "referee")
            return
        self._records[state.seq] += len(got)
        yield from self._admitted(auditor, got)

    def _finish_files(self, auditor: Auditor, state: FileState, answer: tuple[str, Any] | None) -> Iterator[Result]:
        """The records a worker read from small files, file by file in input order, each admitted here."""
        assert answer is not None
        check_fingerprint(answer[0])
        for (file, fmt), got in zip(state.batch.files, answer[1]):
            if self._intake.stopped():
                return
            if isinstance(got, Irregular):  # its reading raised there: here it raises (or reads) as serially
                self.irregular += 1
                yield from self._intake.rest_of(Path(file), 0, fmt)
            else:
                yield from self._admitted(auditor, got)

    def _admitted(self, auditor: Auditor, got: list[tuple]) -> Iterator[Result]:
        """The records a worker read, each admitted here in order: its record written, its error said, or
        nothing (a repeated run_id, a record that stands)."""
        for file, line, run_id, error, gold, scores, ignored, group, task, notes, view_sha, claim_sha, answer_ in got:
            item = TraceItem(file=file, line=line, run_id=run_id, error=error, gold=gold, scores=scores,
                             ignored=ignored, group=group, task=task, notes=notes)
            what = self._intake.admit(item, hashes_of(view_sha, claim_sha))
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
            store_findings(auditor, str(view_sha), found)
            yield RecordLine(str(run_id), line_json)


def check_fingerprint(fingerprint: str) -> None:
    """Refuse a worker's answer made by other referee code than this process runs."""
    if fingerprint != code_fingerprint():
        raise RefereeError(f"a worker runs other referee code than this process (auditor source sha256 "
                           f"{fingerprint[:12]} there, {code_fingerprint()[:12]} here): its records would "
                           "differ", fix="install the same referee on the workers as here")


def store_findings(auditor: Auditor, view_sha: str, found: list[str | None]) -> None:
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


def hashes_of(view_sha: str | None, claim_sha: str | None) -> Callable[[], tuple[str, str] | None]:
    """A record's hashes as `Intake.admit` asks for them (None: the worker could not make its view)."""
    return lambda: None if view_sha is None or claim_sha is None else (view_sha, claim_sha)


def describe_chunk(units: Any) -> str:
    """A chunk in a few words, for an error that names it."""
    if isinstance(units, LineState):
        return f"{units.chunk.file} from line {units.chunk.first_line}"
    if isinstance(units, FileState):
        names = units.batch.files
        return names[0][0] + (f" and {len(names) - 1} more files" if len(names) > 1 else "")
    ids = [u.item.run_id for u in units]
    return f"the chunk of run_ids {ids[0]} .. {ids[-1]}" if ids else "an empty chunk"
