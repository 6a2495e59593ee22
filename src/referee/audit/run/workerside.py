"""What a worker process does with a chunk: audit traces (their view parts and claim sides), line chunks or whole
files; or, on this machine, decide a strict chunk whose findings a Dask worker made (referee.audit.run.parallel sends
them)."""

from __future__ import annotations

import hashlib
import json
import pickle
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from referee.audit.extract.worker import extract_views
from referee.audit.ingest.chunks import FileBatch, LineChunk, audit_batch, audit_lines
from referee.audit.records import Finding
from referee.audit.run.budget import budgeted, over_budget_record
from referee.audit.run.pipeline import Auditor, text_sha256
from referee.audit.trace import SHAPE_ERRORS, Trace
from referee.audit.view.blind import freeze_view, unpack_parts
from referee.errors import exc_brief

# per trace sent: (record JSON, view sha256, findings JSON per sample (None: not to be cached), error)
Answer = tuple

STRICT = "\0referee: claim kept in the parent\0"  # a claim side's text slot when the claim may not cross


@dataclass(frozen=True)
class WorkerConfig:
    """What every worker needs, pickled once per audit: the backends, the policy, the samples per trace."""

    extractor: Any
    claim_reader: Any
    policy: Any  # LoadedPolicy
    samples: int
    budget: Any = None  # RecordBudget (referee.audit.run.budget), or None


_CONFIGS: dict[str, Auditor] = {}  # sha256 of a pickled WorkerConfig -> its auditor, built once per worker process
_RESUME: list[tuple] = []  # this worker's copy of (Intake.done, Intake.settings), set as it starts


def set_resume(blob: bytes) -> None:
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
        c: WorkerConfig = pickle.loads(blob)
        got = _CONFIGS[key] = Auditor(c.policy, c.extractor, c.claim_reader, samples=c.samples, budget=c.budget)
    return got


def audit_chunk(config: bytes, payload: tuple[bytes, bytes] | LineChunk | FileBatch) -> tuple[str, Any]:
    """On a worker: the extraction of every view of the chunk first, then the claims, then each record.

    `payload` is (packed view parts, pickled claim sides), one of each per trace, in the same order; or lines
    of a trace v1 file, or small files, which the worker reads itself (referee.audit.ingest.chunks). Gives back
    this worker's `code_fingerprint()` with the answers.
    """
    auditor = _auditor(config)
    if isinstance(payload, LineChunk):  # lines of a trace v1 file: read here, then audited record by record
        return code_fingerprint(), audit_lines(auditor, payload, _RESUME[0] if _RESUME else None)
    if isinstance(payload, FileBatch):  # small files: each read here whole, then audited record by record
        return code_fingerprint(), audit_batch(auditor, payload, _RESUME[0] if _RESUME else None)
    views, claim_sides = payload
    sides = pickle.loads(claim_sides)
    budget: Any = auditor.budget if sides and sides[0][3] != STRICT else None  # a strict chunk is on Dask: not held
    over: dict[int, str] = {}  # records (by their place in the chunk) whose extraction went over the budget

    def went_over(n: int, limit: str) -> bool:
        over[n] = limit
        return False

    def guard(n: int, work: Any) -> bool:
        return budgeted(budget, work, lambda limit: went_over(n, limit), record=n)

    extracted = extract_views(auditor.extractor, views, auditor.samples, SHAPE_ERRORS,  # claims still packed
                              guard if budget is not None else None)
    out: list[Answer] = []
    for n, ((facts, found, errors, error), (run_id, task, meta, text)) in enumerate(zip(extracted, sides)):
        if error is not None:
            out.append((None, None, [], error))
            continue
        assert facts is not None  # an extraction without an error made its view
        if text == STRICT:  # the claim stays with the parent: give back the findings alone
            assert found is not None  # a strict chunk is on Dask, where no budget holds: it always has findings
            out.append((None, facts.sha256, [f for f, _ in found], None, [ok for _, ok in found], errors))
            continue

        def overrun(limit: str) -> Answer:
            rec = over_budget_record(auditor, budget, limit, run_id=run_id, task=task,
                                     meta=meta, view_sha256=facts.sha256, claim_sha256=text_sha256(text))
            return rec.model_dump_json(), facts.sha256, [], None

        if found is None:
            out.append(overrun(over[n]))
            continue
        samples: list[tuple[str, bool]] = found  # named again: a nested function sees it narrowed

        def decided() -> Answer:
            try:
                findings = [{k: Finding.model_validate(v) for k, v in json.loads(f).items()}
                            for f, _ in samples]
                trace = Trace.model_construct(run_id=run_id, task=task, steps=[], meta=meta)
                claim = auditor.read_claim(text, errors)  # after the extraction's errors, as serially
                rec = auditor.finish(trace, text, claim, facts, findings, errors)
                return rec.model_dump_json(), facts.sha256, [f if ok else None for f, ok in samples], None
            except SHAPE_ERRORS as exc:
                return None, None, [], exc_brief(exc)

        out.append(budgeted(budget, decided, overrun, record=n))
    return code_fingerprint(), out


def decide_chunk(config: bytes, payload: tuple[bytes, bytes]) -> tuple[str, list[Answer]]:
    """On a local process: the records of a strict chunk from the findings its extraction workers gave back.

    `payload` is (packed view parts, pickled (claim sides, the extraction answers)); the claim texts never
    left this machine. Each view is made again here, for its hash (checked against the one the findings
    were made from) and for grounding.
    """
    from referee.audit.view.facts import ViewFacts

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
