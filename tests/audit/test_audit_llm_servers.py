"""The llm backend against what real servers do: models that refuse max_tokens or any temperature, Retry-After in
both forms and in milliseconds, a server that never accepts the connection, token usage per record and in total."""

from __future__ import annotations

import json
import socket
import time
from email.utils import formatdate

from referee.cli.main import main
from referee.core.llm import LLMClient, LLMConfig, usage_meter
from tests.support.llm_stub import LLMStub, Status, stub_usage

GOOD = {f: {"value": "yes", "support": [0]} for f in ("action", "target_id", "transition", "committed",
                                                      "final_supports_goal")}
REFUSES_MAX_TOKENS = json.dumps({"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with "
                                                      "this model. Use 'max_completion_tokens' instead.",
                                           "type": "invalid_request_error", "param": "max_tokens"}})


def test_a_model_that_refuses_max_tokens_gets_max_completion_tokens_and_the_client_remembers():
    def handler(body):
        return Status(400, REFUSES_MAX_TOKENS) if "max_tokens" in body else {"ok": 1}

    with LLMStub(handler=handler) as stub:
        with LLMClient(LLMConfig(base_url=stub.url, model="m", max_tokens=64, max_retries=0)) as c:
            first = c.chat([{"role": "user", "content": "a"}], json_schema={})
            second = c.chat([{"role": "user", "content": "b"}], json_schema={})
    assert first.data == {"ok": 1} and second.data == {"ok": 1}
    assert [("max_tokens" in r, r.get("max_completion_tokens")) for r in stub.requests] == [
        (True, None), (False, 64), (False, 64)]  # one refusal, then the right name from the start


def test_an_explicit_token_param_is_sent_as_given():
    with LLMStub(default={"ok": 1}) as stub:
        with LLMClient(LLMConfig(base_url=stub.url, model="m", max_tokens=9,
                                 token_param="max_completion_tokens")) as c:
            assert c.chat([{"role": "user", "content": "a"}]).ok
    assert stub.requests[0]["max_completion_tokens"] == 9 and "max_tokens" not in stub.requests[0]


def test_temperature_none_is_never_sent_and_a_number_is():
    with LLMStub(default={"ok": 1}) as stub:
        with LLMClient(LLMConfig(base_url=stub.url, model="m", temperature=None)) as c:
            c.chat([{"role": "user", "content": "a"}], temperature=0.0)  # a backend's own ask is overruled
        with LLMClient(LLMConfig(base_url=stub.url, model="m", temperature=0.7)) as c:
            c.chat([{"role": "user", "content": "a"}])
    assert "temperature" not in stub.requests[0] and stub.requests[1]["temperature"] == 0.7


def _waits(answers, **cfg) -> list[float]:
    waits: list[float] = []
    with LLMStub(answers=answers, default={"ok": 1}) as stub:
        c = LLMClient(LLMConfig(base_url=stub.url, model="m", backoff_s=0.01, max_backoff_s=30, **cfg),
                      sleep=waits.append)
        with c:
            assert c.chat([{"role": "user", "content": "a"}]).ok
    return waits


def test_retry_after_ms_and_retry_after_as_seconds_and_as_an_http_date():
    assert _waits([Status(429, headers=(("retry-after-ms", "1250"),))]) == [1.25]
    assert _waits([Status(503, retry_after=2)]) == [2.0]
    date = formatdate(time.time() + 4, usegmt=True)  # whole seconds: 3 to 4 seconds from now
    [w] = _waits([Status(429, headers=(("Retry-After", date),))])
    assert 2.5 <= w <= 4.5, w


def test_the_connect_timeout_is_its_own(tmp_path):
    # a listening socket that never accepts, its backlog already full: the next connect is never answered
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(0)
    port = srv.getsockname()[1]
    fillers = []
    try:
        for _ in range(4):
            f = socket.socket()
            f.setblocking(False)
            f.connect_ex(("127.0.0.1", port))
            fillers.append(f)
        time.sleep(0.2)
        c = LLMClient(LLMConfig(base_url=f"http://127.0.0.1:{port}/v1", model="m", timeout_s=30,
                                connect_timeout_s=0.5, max_retries=0))
        t0 = time.perf_counter()
        r = c.chat([{"role": "user", "content": "a"}])
        took = time.perf_counter() - t0
        c.close()
    finally:
        for f in fillers:
            f.close()
        srv.close()
    assert not r.ok and "timeout" in r.error and took < 10, (r.error, took)


def test_usage_is_counted_per_scope_and_per_thread():
    with LLMStub(default={"ok": 1}) as stub:
        with LLMClient(LLMConfig(base_url=stub.url, model="m")) as c:
            with usage_meter() as outer:
                c.chat([{"role": "user", "content": "x" * 40}])
                with usage_meter() as inner:
                    c.chat([{"role": "user", "content": "y" * 80}])
    assert (inner.calls, inner.prompt_tokens) == (1, 20)
    assert (outer.calls, outer.prompt_tokens, outer.completion_tokens) == (2, 30, 2 * stub_usage({}, '{"ok": 1}')[1])


def test_audit_records_token_usage_per_record_and_sums_it(tmp_path, capsys, monkeypatch):
    traces = tmp_path / "t.jsonl"
    with open(traces, "w") as fh:
        for i in range(3):
            fh.write(json.dumps({"run_id": f"r{i}", "task": f"Delete note N{i}", "steps": [
                {"action": {"name": "delete_note", "args": {"id": f"N{i}"}}, "observation": {"text": "ok"}}],
                "report": f"Done, N{i} deleted."}) + "\n")
    monkeypatch.setenv("MY_KEY", "sk-test-123")
    out = tmp_path / "a.jsonl"
    with LLMStub(default=GOOD) as stub:
        rc = main(["audit", str(traces), "--out", str(out), "--backend", "llm", "--base-url", stub.url,
                   "--model", "stub", "--samples", "2", "--max-tokens", "128", "--temperature", "none",
                   "--api-key-env", "MY_KEY", "--no-progress"])
        requests, auth = list(stub.requests), list(stub.auth)
    assert rc == 0
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    answer = json.dumps(GOOD)
    want = [stub_usage(r, answer) for r in requests]
    assert [r["usage"]["calls"] for r in recs] == [2, 2, 2]
    assert sum(r["usage"]["prompt_tokens"] for r in recs) == sum(p for p, _ in want)
    assert sum(r["usage"]["completion_tokens"] for r in recs) == sum(c for _, c in want)
    assert all(r["max_tokens"] == 128 and "temperature" not in r for r in requests)
    assert set(auth) == {"Bearer sk-test-123"}
    total = sum(p + c for p, c in want)
    assert f"model calls: 6; tokens: prompt {sum(p for p, _ in want)}" in capsys.readouterr().out
    assert total > 0


def test_an_api_key_env_that_is_not_set_is_a_usage_error(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("NOT_SET_KEY", raising=False)
    traces = tmp_path / "t.jsonl"
    traces.write_text(json.dumps({"run_id": "r", "task": "t", "steps": []}) + "\n")
    rc = main(["audit", str(traces), "--out", str(tmp_path / "a.jsonl"), "--backend", "llm", "--base-url",
               "http://127.0.0.1:9/v1", "--model", "m", "--api-key-env", "NOT_SET_KEY"])
    assert rc == 2 and "NOT_SET_KEY: that environment variable is not set" in capsys.readouterr().err
