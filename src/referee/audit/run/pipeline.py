"""Audit one trace into an AuditRecord (`Auditor`), and the names of streaming files into audit.jsonl (stream.py).

`audit_files` and what goes with it live in referee.audit.run.stream, which imports none of this module's stages
until a record is read; they are named here too, where the library has always found them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from referee.audit.claim.grounding import ground_in
from referee.audit.decide.decision import decide
from referee.audit.decide.policyfile import LoadedPolicy
from referee.audit.decide.risk import features_of, hedges_in, risk_of
from referee.audit.decide.riskfile import load_risk
from referee.audit.extract import validate_citations
from referee.audit.extract.worker import extract_sample
from referee.audit.records import AuditRecord, BackendRef, ClaimReading, PolicyRef, TokenUsage
from referee.audit.run.auditfile import cut_partial_line, iter_records  # noqa: F401 (re-export)
from referee.audit.run.budget import over_budget_record
from referee.audit.run.cache import EvidenceCache
from referee.audit.run.resume import Settings, budget_setting, settings_of
from referee.audit.run.stream import (  # noqa: F401 (re-export: where the library has always found them)
    AuditStats,
    Executor,
    Intake,
    RecordLine,
    audit_files,
    cannot_audit,
    duplicate_error,
    iter_items,
    run_dirs_under,
    skip_keeping_notes,
)
from referee.audit.trace import Trace
from referee.audit.view.blind import VIEW_VERSION, ClaimBlindView, build_view
from referee.audit.view.facts import ViewFacts
from referee.audit.view.terminal import is_terminal, split_call
from referee.core.concurrency import single_flight
from referee.core.llm import usage_meter
from referee.errors import BackendError, plugin_failure


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
        >>> a.audit(t).disposition  # a success claim over no actions at all: absence alone never flags
        'review'
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
        hedges = hedges_in(text)
        risk = risk_of(features_of(claim, evidence, d.trace_state, grounding, facts.signals, hedges), load_risk(),
                       hedges)
        x, r = self.extractor, self.claim_reader
        meta = trace.meta or {}
        return AuditRecord(
            run_id=trace.run_id, task=trace.task, task_class=d.task_class, claim=claim,  # type: ignore[arg-type]
            evidence=evidence, run_states=list(d.run_states), trace_state=d.trace_state,  # type: ignore[arg-type]
            disposition=d.disposition,  # type: ignore[arg-type]
            policy=PolicyRef(name=policy.name, sha256=self.policy.sha256),
            backend=BackendRef(name=x.name, model=x.model, prompt_version=x.prompt_version, runs=self.samples),
            view_sha256=facts.sha256, grounding=grounding,
            group=_s(meta.get("group")), split=_s(meta.get("split")), source=_s(meta.get("source")),
            advisory=meta.get("advisory") is True, errors=errors,
            claim_reader=BackendRef(name=r.name, model=r.model, prompt_version=r.prompt_version),
            view_version=VIEW_VERSION, claim_sha256=text_sha256(text), signals=facts.signals, risk=risk)


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
