"""The llm client and the llm backends against a real OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import time

import pytest

from referee.audit.claim.reader import LLMClaimReader
from referee.audit.decide.policyfile import load_policy
from referee.audit.extract.llm import LLMExtractor
from referee.audit.run.cache import EvidenceCache
from referee.audit.run.pipeline import Auditor
from referee.audit.trace import Trace
from referee.core.llm import LLMClient, LLMConfig, parse_json_loose
from tests.support.llm_stub import Hang, LLMStub, Raw, Status

GOOD = {f: {"value": "yes", "support": [0]} for f in
        ("action", "target_id", "transition", "committed", "final_supports_goal")}
TRACE = Trace.model_validate({"run_id": "r1", "task": "Delete note N42", "steps": [
    {"action": {"name": "delete_note", "args": {"id": "N42"}}, "observation": {"text": "deleted"},
     "narration": "SECRET-NARRATION"}], "report": "SECRET-REPORT: Done, N42 was deleted."})


def client_for(stub: LLMStub, **kw) -> LLMClient:
    cfg = dict(base_url=stub.url, model="stub-model", backoff_s=0.01, max_backoff_s=0.05, timeout_s=2.0)
    cfg.update(kw)
    return LLMClient(LLMConfig(**cfg))


def auditor(client: LLMClient, runs: int = 1, cache=None) -> Auditor:
    return Auditor(load_policy("causal"), LLMExtractor(client), LLMClaimReader(client), samples=runs, cache=cache)


def route(extract_answer, claim_answer='{"label": "success", "cue": "was deleted"}'):
    """A handler that answers claim-reader requests and extractor requests differently."""
    def handler(body):
        system = body["messages"][0]["content"]
        return claim_answer if system.startswith("You read ONE message") else extract_answer
    return handler


def test_well_formed_answers_and_isolation_on_the_wire(llm_stub):
    llm_stub.handler = route(GOOD)
    with client_for(llm_stub) as c:
        rec = auditor(c, runs=3).audit(TRACE)
    assert rec.claim.label == "success" and rec.claim.backend == "llm"
    assert rec.run_states == ["completed"] * 3 and rec.disposition == "pass"
    assert rec.backend.name == "llm" and rec.backend.model == "stub-model" and rec.backend.runs == 3
    assert llm_stub.calls == 4  # one claim reading + three extraction runs
    # the report reaches the claim reader only; narration reaches nobody
    for body in llm_stub.requests:
        text = json.dumps(body["messages"])
        assert "SECRET-NARRATION" not in text
        if not body["messages"][0]["content"].startswith("You read ONE message"):
            assert "SECRET-REPORT" not in text
        assert body["response_format"]["type"] == "json_schema"


def test_malformed_json_is_unknown_not_a_crash(llm_stub):
    llm_stub.handler = route("sure! here you go: {action: yes", claim_answer="I cannot say {")
    with client_for(llm_stub) as c:
        rec = auditor(c).audit(TRACE)
    assert rec.claim.label == "unclear"
    assert all(fe.value == "unknown" for fe in rec.evidence[0].values())
    assert rec.trace_state == "unknown" and rec.disposition == "review"


def test_fenced_json_and_bad_citations(llm_stub):
    bad = dict(GOOD, target_id={"value": "yes", "support": [99]}, committed="yes")
    llm_stub.handler = route("```json\n" + json.dumps(bad) + "\n```")
    with client_for(llm_stub) as c:
        rec = auditor(c).audit(TRACE)
    ev = rec.evidence[0]
    assert ev["action"].value == "yes"
    assert ev["target_id"].value == "unknown" and "invalid citation" in ev["target_id"].note
    assert ev["committed"].value == "unknown"


def test_429_then_success(llm_stub):
    llm_stub.push(Status(429, retry_after=0), Status(503))
    llm_stub.handler = route(GOOD)
    with client_for(llm_stub) as c:
        rec = auditor(c).audit(TRACE)
    assert rec.disposition == "pass"
    assert llm_stub.calls == 4  # 2 failures retried + claim + extraction


def test_timeouts_end_in_a_verdict(llm_stub):
    llm_stub.handler = lambda body: Hang(1.0)
    with client_for(llm_stub, timeout_s=0.2, max_retries=1) as c:
        t0 = time.perf_counter()
        rec = auditor(c).audit(TRACE)
        took = time.perf_counter() - t0
    assert rec.claim.label == "unclear" and rec.disposition == "review"
    assert all(fe.value == "unknown" and "timeout" in fe.note for fe in rec.evidence[0].values())
    assert took < 5


def test_permanent_errors_and_broken_envelopes(llm_stub):
    llm_stub.push(Status(401), Raw(b"not json"), Raw(b'{"choices": []}'))
    with client_for(llm_stub) as c:
        r1 = c.chat([{"role": "user", "content": "x"}], json_schema={"type": "object"})
        r2 = c.chat([{"role": "user", "content": "x"}], json_schema={"type": "object"})
        r3 = c.chat([{"role": "user", "content": "x"}], json_schema={"type": "object"})
    assert r1.attempts == 1 and "401" in r1.error     # not retried
    assert r2.data is None and r2.error and r3.error


def test_server_that_rejects_json_schema_gets_asked_again_without_it(llm_stub):
    llm_stub.push(Status(400, body='{"error": "response_format not supported"}'), {"label": "success"})
    with client_for(llm_stub) as c:
        r = c.chat([{"role": "user", "content": "x"}], json_schema={"type": "object"})
    assert r.data == {"label": "success"}
    assert "response_format" in llm_stub.requests[0] and "response_format" not in llm_stub.requests[1]


def test_connection_refused_is_a_result_not_an_exception():
    c = LLMClient(LLMConfig(base_url="http://127.0.0.1:9/v1", model="m", max_retries=1, backoff_s=0.01,
                            timeout_s=0.5))
    r = c.chat([{"role": "user", "content": "x"}])
    assert not r.ok and r.attempts == 2 and "transport" in r.error


def test_cache_means_no_second_call(llm_stub, tmp_path):
    llm_stub.handler = route(GOOD)
    cache = EvidenceCache(tmp_path / "c.sqlite")
    with client_for(llm_stub) as c:
        a = auditor(c, runs=2, cache=cache)
        first = a.audit(TRACE)
        calls = llm_stub.calls
        second = a.audit(TRACE.model_copy(update={"run_id": "r2"}))
    assert calls == 3 and llm_stub.calls == 3 and a.backend_calls == 3
    assert first.evidence == second.evidence


def test_concurrency_overlaps_calls():
    with LLMStub(default={"ok": 1}, latency_s=0.2) as stub:
        with client_for(stub, concurrency=8) as c:
            t0 = time.perf_counter()
            results = list(c.map(lambda i: c.chat([{"role": "user", "content": str(i)}], json_schema={}), range(16)))
            took = time.perf_counter() - t0
    assert len(results) == 16 and all(r.data == {"ok": 1} for r in results)
    # counted at the server, so a loaded machine cannot make it flaky: calls really overlapped
    assert 4 <= stub.max_in_flight <= 8, stub.max_in_flight
    assert took < 16 * 0.2  # and it beat serial (3.2 s) even so


@pytest.mark.parametrize("text,want", [
    ('{"a": 1}', {"a": 1}), ("```json\n{\"a\": 2}\n```", {"a": 2}), ("prose {\"a\": 3} more", {"a": 3}),
    ("[1, 2]", None), ("{broken", None), ("", None), (None, None), ("x {bad} then {\"a\": 4}", {"a": 4}),
])
def test_loose_parser(text, want):
    assert parse_json_loose(text) == want
