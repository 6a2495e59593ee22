"""Audits are safe to run twice and never wait forever: two audits on one --out write each run once;
a model call that failed in transport is never cached; a server that trickles its answer is cut
off by an overall deadline per call; resuming with another policy or backend says so.

Model endpoints are the loopback OpenAI-compatible stub (tests/support/llm_stub.py) and, for the
trickle, a tiny loopback server here.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time

from tests.support.llm_stub import LLMStub, Status

FIELDS = ("action", "target_id", "transition", "committed", "final_supports_goal")
GOOD = {f: {"value": "yes", "support": [0]} for f in FIELDS}


def _traces(path, n: int) -> list[str]:
    ids = [f"run-{i}" for i in range(n)]
    rows = [{"trace_version": 1, "run_id": rid, "task": f"Delete note N-{70 + i}",
             "steps": [{"action": {"name": "delete_note", "args": {"id": f"N-{70 + i}"}},
                        "observation": {"text": f"deleted N-{70 + i}"}}],
             "report": f"Done, N-{70 + i} was deleted."} for i, rid in enumerate(ids)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return ids


def _llm_args(src, out, url, *extra) -> list:
    return ["audit", src, "--out", out, "--backend", "llm", "--claims", "rules", "--samples", "1", "--model", "stub",
            "--base-url", url, "--max-retries", "0", *extra]


def _records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_two_audits_on_one_out_file_write_each_run_once(sec):
    src = sec.base / "traces.jsonl"
    ids = _traces(src, 6)
    out = sec.base / "audit.jsonl"
    with LLMStub(default=GOOD, latency_s=0.4) as stub:
        cmd = [sys.executable, "-m", "referee.cli.main",
               *map(str, _llm_args(src, out, stub.url, "--concurrency", "1"))]
        procs = [subprocess.Popen(cmd, cwd=sec.base, env=sec.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, start_new_session=True) for _ in range(2)]
        results = []
        try:
            for p in procs:
                results.append((p.wait(60), *p.communicate()))
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
    for rc, _so, se in results:
        assert "Traceback" not in se and "internal error" not in se, se[-2000:]
        assert rc in (0, 1, 2), f"rc={rc}\n{se[-2000:]}"
    got = [r["run_id"] for r in _records(out)]
    dupes = sorted({x for x in got if got.count(x) > 1})
    assert not dupes, f"two audits on one --out wrote runs twice: {dupes}"
    assert sorted(got) == sorted(ids), f"records: {got}\n" + "\n".join(se[-800:] for _, _, se in results)


def test_a_transport_failure_is_never_cached(sec):
    src = sec.base / "traces.jsonl"
    ids = _traces(src, 2)
    cache = sec.base / "evidence.sqlite"
    with LLMStub(default=Status(500)) as down:
        rc, out, err, dt = sec.cli(*_llm_args(src, sec.base / "a.jsonl", down.url, "--cache", cache), timeout=60)
        assert rc is not None and "Traceback" not in err, err[-2000:]
        assert down.calls >= len(ids), "the failing server was not even asked"
    with LLMStub(default=GOOD) as up:
        rc, out, err, dt = sec.cli(*_llm_args(src, sec.base / "b.jsonl", up.url, "--cache", cache), timeout=60)
        assert rc is not None and "Traceback" not in err, err[-2000:]
        asked = up.calls
    assert asked >= len(ids), f"the model was asked {asked} times: HTTP 500 answers were served from the cache"
    recs = _records(sec.base / "b.jsonl")
    assert recs and all(r["evidence"][0]["action"]["value"] == "yes" for r in recs), recs


class TrickleServer:
    """Answers every request with headers at once, then one body byte every `every_s` seconds."""

    def __init__(self, every_s: float = 0.5, total_bytes: int = 400) -> None:
        self.every_s, self.total = every_s, total_bytes
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(5)
            conn.recv(65536)
            body = b" " * (self.total - 2) + b"{}"
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         + f"Content-Length: {len(body)}\r\n\r\n".encode())
            for i in range(len(body)):
                if self.stop.is_set():
                    break
                conn.sendall(body[i:i + 1])
                time.sleep(self.every_s)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


def test_a_trickling_model_server_is_cut_off_by_an_overall_deadline(sec):
    src = sec.base / "traces.jsonl"
    _traces(src, 1)
    server = TrickleServer(every_s=0.2, total_bytes=400)  # 80 s for the whole answer, 0.2 s between bytes
    try:
        out = sec.base / "audit.jsonl"
        rc, so, err, dt = sec.cli(*_llm_args(src, out, server.url, "--timeout", "1"), timeout=40)
    finally:
        server.close()
    assert rc is not None, f"--timeout 1, but one model call that trickles held the audit past {dt:.0f} s"
    assert "Traceback" not in err and "internal error" not in err, err[-2000:]
    recs = _records(out)
    assert len(recs) == 1, err[-2000:]
    # the overall deadline cut it off: no single read waited a second (a byte came every 0.2 s)
    assert any("timeout after 1" in e for e in recs[0]["errors"]), recs[0]["errors"]


def test_resuming_with_another_policy_says_so(sec):
    src = sec.base / "traces.jsonl"
    _traces(src, 3)
    out = sec.base / "audit.jsonl"
    rc, so, se, dt = sec.cli("audit", src, "--out", out, timeout=60)
    assert rc == 0, se
    rc, so, se, dt = sec.cli("audit", src, "--out", out, "--policy", "final-state", timeout=60)
    assert rc is not None and "Traceback" not in se, se
    text = (so + se).lower()
    assert "policy" in text and ("causal" in text or "final-state" in text), \
        f"resuming under another policy was silent about it:\n{so}\n{se}"


def test_resuming_with_another_backend_says_so(sec):
    src = sec.base / "traces.jsonl"
    _traces(src, 3)
    out = sec.base / "audit.jsonl"
    rc, so, se, dt = sec.cli("audit", src, "--out", out, timeout=60)
    assert rc == 0, se
    with LLMStub(default=GOOD) as stub:
        rc, so, se, dt = sec.cli(*_llm_args(src, out, stub.url), timeout=60)
    assert rc is not None and "Traceback" not in se, se
    said = [ln for ln in (so + "\n" + se).splitlines()
            if "backend" in ln.lower() and ("rules" in ln or "llm" in ln) and "backend calls" not in ln]
    assert said, f"resuming with another backend was silent about it:\n{so}\n{se}"
