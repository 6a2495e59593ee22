"""Files the workers read and audit themselves: trace v1 JSONL cut into runs of whole lines, and small files whole.

With a local pool, the parent of `referee audit --workers N` would otherwise parse and validate
every trace before a worker sees it, and on many cores that is what limits the audit. For a file
of trace v1 records one per line (`.jsonl`, `.ndjson`), the parent only cuts the file at line
ends (`line_chunks`, bytes, no parse) and each worker reads its lines with the same reader a serial
audit uses (`read_lines`), audits them and gives back, per record, what the parent needs to decide
as a serial audit does: the record's place, run_id, gold, scores, ignored fields and notes, the view
and claim hashes (for resume), and the record made. Small files of any built-in format (one-run files,
trajectories) go several to a chunk by name alone (`FileBatch`): each worker reads each whole, with
`read_traces` as a serial audit does, and answers the same per record.

A slice of a file reads as the whole file does only where every line holds one JSON object. A
slice that is anything else (a record over several lines, a broken line, an array) is not read
there: the parent reads the file from its start, as a serial audit does, and audits the rest of it
in its own process (`Irregular`); so too a whole file whose reading raised. Dask never gets lines or
files: they hold the claim channel.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from referee.audit.extract.worker import extract_sample
from referee.audit.ingest.readers.referee_v1 import referee_items
from referee.audit.records import findings_json
from referee.audit.run.resume import Done, action
from referee.audit.trace import SHAPE_ERRORS, TraceItem
from referee.core.fsutil import open_regular
from referee.core.jsonio.undecodable import counting
from referee.core.jsonio.values import iter_json_slice
from referee.errors import TraceError, exc_brief

LINE_SUFFIXES = (".jsonl", ".ndjson")


# a file of at most this many bytes may be read whole by a worker (a bigger one is read here, and its traces sent
# in chunks); files go to one chunk until it holds --chunk-size of them or this many bytes
WHOLE_MOST = BATCH_BYTES = 2 << 20
# the formats a worker may read a whole file in: the built-in ones (a reader registered in this process alone is
# not known to workers started by the forkserver); None: sniffed, as a serial audit sniffs it
WHOLE_FORMATS = frozenset({None, "referee", "openai-chat", "anthropic-messages", "tau-bench", "mini-swe-agent",
                           "inspect-ai", "openhands"})


@dataclass(frozen=True)
class RawFile:
    """In the stream of work `audit_files` hands an executor: a file the workers read themselves, by lines (a
    trace v1 line file) or `whole` (a small file, read with `read_traces` in `fmt`)."""

    path: Path
    fmt: str | None = None
    whole: bool = False
    allow_pickle: bool = False
    size: int = 0  # of a file read whole: what the chunks are cut by


@dataclass(frozen=True)
class FileBatch:
    """Small files a worker reads whole and audits, in order: each file's name as the reader gives it, and its
    format (None: sniffed)."""

    files: tuple[tuple[str, str | None], ...]
    allow_pickle: bool = False
    size: int = 0  # their bytes


@dataclass(frozen=True)
class LineChunk:
    """Whole lines of a file, as bytes: the file's name as the reader gives it, the first line's number,
    whether it starts the file (a byte order mark is dropped there only), and the index of its first record
    among the file's (what the parent skips to when it reads the file itself)."""

    file: str
    first_line: int
    data: bytes
    at_start: bool


@dataclass(frozen=True)
class Irregular:
    """A worker's answer for lines that are not one JSON object each: the parent reads them itself."""

    file: str
    first_line: int


def line_file(path: Path, fmt: str | None, more_than: int = 0) -> bool:
    """Whether the workers may read `path` by lines: a file named `.jsonl` / `.ndjson` read as trace v1
    (`--format referee`, or sniffed so) of more than `more_than` lines (a smaller one is read here).

    >>> import tempfile; p = Path(tempfile.mkdtemp()) / "t.jsonl"
    >>> _ = p.write_text('{"run_id": "a", "task": "t", "steps": []}\\n' * 3)
    >>> line_file(p, None), line_file(p, "openai-chat"), line_file(p.with_suffix(".json"), None), line_file(p, None, 3)
    (True, False, False, False)
    """
    path = Path(path)
    if not path.name.endswith(LINE_SUFFIXES) or fmt not in (None, "referee") or not path.is_file():
        return False
    if more_than > 0:
        try:
            with open_regular(path, error=TraceError) as fh:
                if sum(1 for _ in zip(range(more_than + 1), fh)) <= more_than:
                    return False
        except (OSError, TraceError):
            return False  # the reader says what is wrong with it, as it always has
    if fmt == "referee":
        return True
    from referee.audit.ingest.readers import sniff_format

    return sniff_format(path) == "referee"


def whole_size(path: Path, fmt: str | None, most: int | None = None) -> int | None:
    """The size of `path` when the workers may read it whole (None: they may not): a regular file of at most `most`
    bytes (WHOLE_MOST), in a built-in format or one to be sniffed.

    >>> import tempfile; p = Path(tempfile.mkdtemp()) / "t.json"
    >>> _ = p.write_text('{"run_id": "a", "task": "t", "steps": []}')
    >>> whole_size(p, None), whole_size(p, "my-plugin"), whole_size(p.parent, None), whole_size(p, None, most=10)
    (41, None, None, None)
    """
    if fmt not in WHOLE_FORMATS:
        return None
    most = WHOLE_MOST if most is None else most
    try:
        st = os.stat(path)
    except OSError:
        return None  # the reader says what is wrong with it, as it always has
    return st.st_size if stat.S_ISREG(st.st_mode) and st.st_size <= most else None


def line_chunks(path: Path, lines: int) -> Iterator[LineChunk]:
    """The file as runs of `lines` whole lines (the last may be shorter, or lack its newline); bytes only."""
    # a trace's line is tens of kilobytes: with the default 8 KiB buffer each readline refills it several
    # times, and reading the lines took 3 to 4 times as long (0.11-0.15 s against 0.03 s for 78 MB)
    with open_regular(path, error=TraceError, buffering=1 << 20) as fh:
        first, at_start = 1, True
        while True:
            got = [ln for ln in (fh.readline() for _ in range(lines)) if ln]
            if not got:
                return
            yield LineChunk(str(path), first, b"".join(got), at_start)
            first += sum(1 for ln in got if ln.endswith(b"\n"))
            at_start = False


_JSON_SPACE = b" \t\r\n"


def read_lines(chunk: LineChunk) -> list[TraceItem] | None:
    """The TraceItems of a chunk's lines, as the serial reader gives them; None when its lines are not
    one JSON object each (then only a read from the file's start gives what a serial audit reads).

    >>> c = LineChunk("t.jsonl", 3, b'{"run_id": "a", "task": "t", "steps": []}\\n\\n{"run_id": 7}\\n', False)
    >>> [(i.line, i.run_id, i.error is not None) for i in read_lines(c)]
    [(3, 'a', False), (5, 7, True)]
    >>> read_lines(LineChunk("t.jsonl", 1, b'{"run_id":\\n "a"}\\n', True)) is None
    True
    >>> read_lines(LineChunk("t.jsonl", 1, b'{"run_id": "caf\\xe9", "task": "t", "steps": []}\\n', True)) is None
    True
    """
    with counting() as bad:
        values = list(iter_json_slice(chunk.data, first_line=chunk.first_line, at_start=chunk.at_start))
    if bad.n:  # read from the file's start, so that the audit says the file is not UTF-8
        return None
    starts = [chunk.first_line + i for i, ln in enumerate(chunk.data.split(b"\n")) if ln.strip(_JSON_SPACE)]
    if [v.line for v in values] != starts or any(v.error or not isinstance(v.value, dict) for v in values):
        return None
    return list(referee_items(values, chunk.file))


# what a worker gives back per record: (file, line, run_id, error, gold, scores, ignored, meta.group and task when
# there is gold, notes, view sha, claim sha, answer);
# answer: (record JSON, [findings JSON or None per sample]), a could-not-audit message (str), or None: the
# record in the audit file stands
Got = tuple
Resume = tuple  # (the audit file's records by run_id: Done, this audit's settings), or None


def audit_lines(auditor: Any, chunk: LineChunk, resume: Resume | None = None) -> list[Got] | Irregular:
    """On a worker: read a chunk's records and audit each (`audit_items`); Irregular when its lines are not one
    JSON object each."""
    items = read_lines(chunk)
    if items is None:
        return Irregular(chunk.file, chunk.first_line)
    return audit_items(auditor, items, resume)


def audit_batch(auditor: Any, batch: FileBatch, resume: Resume | None = None) -> list[list[Got] | Irregular]:
    """On a worker: read each file of the batch whole, as a serial audit does, and audit its records
    (`audit_items`). A file whose reading raised is Irregular: the parent reads it itself, where the same error
    comes at the same place."""
    from referee.audit.ingest.readers import read_traces

    out: list[list[Got] | Irregular] = []
    for file, fmt in batch.files:
        try:
            items = list(read_traces(Path(file), fmt, allow_pickle=batch.allow_pickle))
        except Exception:
            out.append(Irregular(file, 1))
            continue
        if any(it.trace is not None and it.trace.run_id != it.run_id for it in items):
            out.append(Irregular(file, 1))  # the parent tells runs apart by the trace's run_id, which stays here
            continue
        out.append(audit_items(auditor, items, resume))
    return out


def audit_items(auditor: Any, items: list[TraceItem], resume: Resume | None = None) -> list[Got]:
    """On a worker: audit each record read, as `Auditor.audit` does, keeping each sample's findings as the
    evidence cache stores them (the parent is its only writer). A run whose record in the audit file stands
    (`resume`: the file's records and this audit's settings; `resume.action` says "skip") is not audited: its
    answer is None."""
    from referee.audit.run.budget import budgeted, over_budget_record
    from referee.audit.run.pipeline import claim_text, text_sha256
    from referee.audit.view.blind import build_view
    from referee.audit.view.facts import ViewFacts

    done: Mapping[str, Done]
    done, settings = resume or ({}, ())
    out: list[Got] = []

    def audited(it: TraceItem, head: tuple) -> Got:
        trace = it.trace
        assert trace is not None
        try:
            view = build_view(trace)
            text = claim_text(trace)
            claim_sha = text_sha256(text)
            prev = done.get(trace.run_id)
            if prev is not None and action(prev, view.sha256, claim_sha, settings) == "skip":
                return head + (view.sha256, claim_sha, None)  # the record stands: resume skips it
            errors: list[str] = []
            claim = auditor.read_claim(text, errors)  # the claim before the evidence, as Auditor.audit reads them
            samples = [extract_sample(auditor.extractor, view, i, errors) for i in range(auditor.samples)]
            rec = auditor.finish(trace, text, claim, ViewFacts.of(view), [f for f, _ in samples], errors)
            answer: Any = (rec.model_dump_json(), [findings_json(f) if ok else None for f, ok in samples])
            return head + (view.sha256, claim_sha, answer)
        except SHAPE_ERRORS as exc:
            return head + (None, None, exc_brief(exc))

    def over(it: TraceItem, head: tuple, limit: str) -> Got:
        """Its `review` record: its audit went over the record budget (referee.audit.run.budget)."""
        trace = it.trace
        assert trace is not None
        try:
            view_sha, claim_sha = build_view(trace).sha256, text_sha256(claim_text(trace))
        except SHAPE_ERRORS as exc:
            return head + (None, None, exc_brief(exc))
        rec = over_budget_record(auditor, auditor.budget, limit, run_id=trace.run_id, task=trace.task,
                                 meta=trace.meta, view_sha256=view_sha, claim_sha256=claim_sha)
        return head + (view_sha, claim_sha, (rec.model_dump_json(), []))

    for it in items:
        gold_of = it.trace is not None and (it.gold or it.scores)
        group = (it.trace.meta or {}).get("group") if gold_of else None  # type: ignore[union-attr]
        task = it.trace.task if gold_of else None  # type: ignore[union-attr]
        head = (it.file, it.line, it.run_id, it.error, it.gold, it.scores, it.ignored, group, task, it.notes)
        if it.trace is None:
            out.append(head + (None, None, None))
            continue
        out.append(budgeted(auditor.budget, lambda: audited(it, head),
                            lambda limit: over(it, head, limit)))
    return out
