"""Audit one trace into an AuditRecord, and stream a set of trace files (or run directories) into audit.jsonl."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from referee.audit.auditfile import cut_partial_line, done_run_ids, iter_records  # noqa: F401 (re-export)
from referee.audit.cache import EvidenceCache
from referee.concurrency import ordered_map
from referee.audit.decide import decide
from referee.audit.extract import validate_citations
from referee.audit.terminal import is_terminal, split_call
from referee.audit.grounding import ground
from referee.audit.inputs import InputOptions, iter_inputs
from referee.audit.policyfile import LoadedPolicy
from referee.audit.readers.referee_run import is_run_dir
from referee.audit.records import AuditRecord, BackendRef, ClaimReading, PolicyRef
from referee.audit.trace import SHAPE_ERRORS, GoldScorer, Trace, TraceItem
from referee.audit.view import build_view
from referee.errors import TraceError


@dataclass
class Auditor:
    """Everything needed to audit one trace: policy, extractor, claim reader, runs, cache (optional)."""

    policy: LoadedPolicy
    extractor: Any
    claim_reader: Any
    samples: int = 1  # extraction samples per trace, voted on (on disk: backend.runs)
    cache: EvidenceCache | None = None
    backend_calls: int = 0  # extractor + claim-reader calls actually made (cache misses)

    def _claim(self, report: str | None) -> ClaimReading:
        r = self.claim_reader
        if r.name == "rules" or self.cache is None:  # rules are cheaper than a cache lookup
            if r.name != "rules":
                self.backend_calls += 1
            return r.read(report)
        key = hashlib.sha256((report or "").encode("utf-8")).hexdigest()
        got = self.cache.get_claim(r.name, r.model, r.prompt_version, key)
        if got is not None:
            return ClaimReading.model_validate(got)
        self.backend_calls += 1
        reading = r.read(report)
        self.cache.put_claim(r.name, r.model, r.prompt_version, key, reading.model_dump())
        return reading

    def _evidence(self, view, sample: int) -> dict:
        x = self.extractor
        if self.cache is not None:
            got = self.cache.get_evidence(x.name, x.model, x.prompt_version, view.sha256, sample)
            if got is not None:
                return got
        self.backend_calls += 1
        fields = x.extract(view, sample)
        if self.cache is not None:
            self.cache.put_evidence(x.name, x.model, x.prompt_version, view.sha256, sample, fields)
        return fields

    def audit(self, trace: Trace) -> AuditRecord:
        """Audit one trace: the report goes to the claim reader only, the view to the extractor only.

        >>> from referee.audit.policyfile import load_policy
        >>> from referee.audit.claims import RulesClaimReader
        >>> from referee.audit.extract.rules import RulesExtractor
        >>> a = Auditor(load_policy("causal"), RulesExtractor(), RulesClaimReader())
        >>> t = Trace(run_id="r", task="Delete note N42", steps=[], report="Done, N42 was deleted.")
        >>> a.audit(t).disposition
        'flag'
        """
        policy = self.policy.policy
        view = build_view(trace)
        claim = self._claim(claim_text(trace))
        observed = {s.index for s in view.steps if s.observation is not None}
        evidence = [validate_citations(self._evidence(view, i), len(view.steps), observed) for i in range(self.samples)]
        grounding = ground(claim, view)
        d = decide(trace.task, claim.label, evidence, grounding, policy)
        x = self.extractor
        meta = trace.meta or {}
        return AuditRecord(
            run_id=trace.run_id, task=trace.task, task_class=d.task_class, claim=claim,  # type: ignore[arg-type]
            evidence=evidence, run_states=list(d.run_states), trace_state=d.trace_state,  # type: ignore[arg-type]
            disposition=d.disposition,  # type: ignore[arg-type]
            policy=PolicyRef(name=policy.name, sha256=self.policy.sha256),
            backend=BackendRef(name=x.name, model=x.model, prompt_version=x.prompt_version, runs=self.samples),
            view_sha256=view.sha256, grounding=grounding,
            group=_s(meta.get("group")), split=_s(meta.get("split")), source=_s(meta.get("source")),
            advisory=meta.get("advisory") is True)


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
    from referee.audit.claims import RulesClaimReader
    from referee.audit.extract.rules import RulesExtractor
    from referee.audit.policyfile import load_policy

    lp = load_policy(policy) if isinstance(policy, str) else policy
    return Auditor(lp, RulesExtractor(), RulesClaimReader()).audit(trace)


def _s(v: Any) -> str | None:
    return None if v in (None, "") else str(v)


# -- streaming over files, with resume ------------------------------------------------------------

@dataclass
class AuditStats:
    written: int = 0
    skipped_done: int = 0
    duplicates: int = 0  # records whose run_id came earlier in the same input: warned about, audited once
    errors: list[str] = field(default_factory=list)
    scorers: set[str] = field(default_factory=set)  # scores the runs carry when none is named gold (a hint)


def run_dirs_under(path: Path, depth: int = 2) -> Iterator[Path]:
    """Run directories at `path` or up to `depth` folders below it (runs/<plan>/<timestamp>), sorted."""
    path = Path(path)
    if is_run_dir(path):
        yield path
    elif depth > 0 and path.is_dir():
        for child in sorted(c for c in path.iterdir() if c.is_dir()):
            yield from run_dirs_under(child, depth - 1)


def iter_items(paths: Iterable[Path], fmt: str | None, inputs: InputOptions | None = None) -> Iterator[TraceItem]:
    """TraceItems of trace files, run folders, and folders walked for them (referee.audit.inputs).

    SWE-bench reports (`*.report.json`) are not traces and are skipped.
    """
    return iter_inputs(paths, fmt, inputs)


def duplicate_error(item: TraceItem, first: str) -> TraceError:
    """The warning for a run_id seen before in the same input (file, line and run_id, and where it came first).

    >>> print(duplicate_error(TraceItem(file="t.jsonl", line=7, run_id="a"), "t.jsonl:2"))
    t.jsonl:7: run_id a: duplicate run_id (first at t.jsonl:2): audited once, ...; give every run its own run_id
    """
    return TraceError(f"run_id {item.run_id}: duplicate run_id (first at {first}): audited once, this record is "
                      f"not audited", file=item.file, place=str(item.line) if item.line is not None else None,
                      fix="give every run its own run_id")


def audit_files(paths: Iterable[Path], auditor: Auditor, out: Path, *, fmt: str | None = None,
                on_error: str = "skip", concurrency: int = 1, on_record: Callable[[AuditRecord], None] | None = None,
                on_error_cb: Callable[[TraceError], None] | None = None,
                on_gold: Callable[[TraceItem], None] | None = None,
                on_duplicate: Callable[[TraceError], None] | None = None,
                on_ignored: Callable[[str, tuple[str, ...]], None] | None = None,
                inputs: InputOptions | None = None,
                gold_scorer: GoldScorer | None = None) -> AuditStats:
    """Audit every trace in `paths`, appending one record per run to `out`; runs already there are skipped.

    `gold_scorer` takes gold from a score the runs carry (an Inspect AI scorer); a run whose scores lack it
    raises GoldError naming the scorers there. Gold only reaches `on_gold`, never the audit.

    A run_id that comes twice in the input is audited once (the first); each repeat is counted in
    `stats.duplicates` and reported through `on_duplicate`, never dropped silently.

    Records are written in input order even when `concurrency` > 1 (a bounded window of traces is in
    flight), so an interrupted audit leaves a clean prefix and resumes where it stopped.
    """
    out = Path(out)
    cut_partial_line(out)
    done = done_run_ids(out)
    seen: dict[str, str] = {}  # run_id -> where it first came in this input
    ignored_seen: set[tuple[str, str]] = set()  # (file, field): each unknown field is reported once per file
    stats = AuditStats()

    def skip(err: TraceError) -> None:
        """A record that cannot be read or audited: stop, or count it and say so."""
        if on_error == "stop":
            raise err
        stats.errors.append(str(err))
        if on_error_cb:
            on_error_cb(err)

    def todo() -> Iterator[Trace]:
        for item in iter_items(paths, fmt, inputs):
            if item.error is not None:
                skip(item.error)
                continue
            if gold_scorer is not None:
                item = gold_scorer.pick(item)
            elif item.scores:
                stats.scorers.update(item.scores)
            if on_gold and item.gold is not None:
                on_gold(item)
            if item.ignored and on_ignored:
                new = tuple(f for f in item.ignored if (item.file, f) not in ignored_seen)
                ignored_seen.update((item.file, f) for f in new)
                if new:
                    on_ignored(item.file, new)
            assert item.trace is not None
            rid = item.trace.run_id
            if rid in seen:
                stats.duplicates += 1
                if on_duplicate:
                    on_duplicate(duplicate_error(item, seen[rid]))
                continue
            seen[rid] = item.file if item.line is None else f"{item.file}:{item.line}"
            if rid in done:
                stats.skipped_done += 1
                continue
            yield item.trace

    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "a", encoding="utf-8") as fh:
        def write(rec: AuditRecord) -> None:
            fh.write(rec.model_dump_json() + "\n")
            fh.flush()  # each record is on disk before the next one starts: resume needs no more
            stats.written += 1
            if on_record:
                on_record(rec)

        def audit_one(trace: Trace) -> AuditRecord | TraceError:
            try:
                return auditor.audit(trace)
            except SHAPE_ERRORS as exc:
                # one trace the auditor cannot take (nesting too deep, a shape no reader caught) is one
                # skipped record, not the end of the audit
                return TraceError(f"run_id {trace.run_id}: could not be audited: {type(exc).__name__}: "
                                  f"{str(exc)[:200]}", fix="fix the record, or report it if it looks valid")

        for got in ordered_map(audit_one, todo(), concurrency, name="referee-audit"):
            if isinstance(got, TraceError):
                skip(got)
            else:
                write(got)
    return stats
