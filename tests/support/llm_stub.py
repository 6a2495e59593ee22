"""An OpenAI-compatible /v1/chat/completions stub on 127.0.0.1 for tests and benchmarks (stdlib only).

Usage::

    from tests.support.llm_stub import LLMStub, Status, Hang, Raw

    with LLMStub(answers=[Status(429), {"label": "success"}], latency_s=0.2) as stub:
        client = LLMClient(LLMConfig(base_url=stub.url, model="stub"))
        ...
        assert stub.calls == 2

Answers are served in order from `answers` (a script); when the script is used up, `default`
is served (or `handler(request_body)` if given, which returns an answer). An answer is:

- a `str`: the assistant message content, as given (so "not json {" is malformed JSON);
- a `dict` or `list`: JSON-encoded into the message content;
- `Status(code, body="", retry_after=None, headers=())`: an HTTP error (429, 500, ...), with more
  response headers as (name, value) pairs (`retry-after-ms`, an HTTP-date `Retry-After`);
- `Hang(seconds)`: sleep that long before answering with `default` (for client timeouts);
- `Raw(bytes, status=200)`: a raw HTTP body (e.g. a broken envelope);
- `Trickle(answer, interval=0.1, headers=False)`: the answer's response sent one byte every
  `interval` seconds (the body only, or the headers too): per-read timeouts never fire;
- `Drop()`: close the connection without a response (a reset);
- a callable: called with the request body (dict), returns one of the above.

`stub.calls` counts requests; `stub.requests` keeps every request body (thread-safe), `stub.auth` the
Authorization header of each; an answer reports usage: prompt tokens = characters of the messages // 4,
completion tokens = characters of the answer // 4 + 1 (`stub_usage`);
`stub.max_in_flight` is the most requests it held at once; `stub.trickles_cut` counts trickled
answers whose client hung up before the last byte.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


@dataclass(frozen=True)
class Status:
    code: int
    body: str = ""
    retry_after: float | None = None
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Hang:
    seconds: float


@dataclass(frozen=True)
class Raw:
    body: bytes
    status: int = 200


@dataclass(frozen=True)
class Trickle:
    answer: Any = "{}"
    interval: float = 0.1
    headers: bool = False  # trickle the status line and headers too, not only the body


@dataclass(frozen=True)
class Drop:
    """Close the connection at once, with no response."""


def stub_usage(body: dict, content: str) -> tuple[int, int]:
    """The (prompt, completion) tokens the stub reports for a request body and its answer."""
    prompt = sum(len(str(m.get("content") or "")) for m in body.get("messages") or [] if isinstance(m, dict)) // 4
    return prompt, len(content) // 4 + 1


def completion(content: str, model: str = "stub", body: dict | None = None) -> dict:
    """The OpenAI chat.completion envelope around one assistant message."""
    p, c = stub_usage(body or {}, content)
    return {"id": "chatcmpl-stub", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}}


class LLMStub:
    """A scripted OpenAI-compatible server on a free loopback port; start() / stop() or use `with`."""

    def __init__(self, answers: list | None = None, *, default: Any = "{}", latency_s: float = 0.0,
                 handler: Callable[[dict], Any] | None = None) -> None:
        self.script: list = list(answers or [])
        self.default = default
        self.latency_s = latency_s
        self.handler = handler
        self.calls = 0
        self.requests: list[dict] = []
        self.auth: list[str | None] = []
        self.in_flight = 0
        self.max_in_flight = 0  # the most requests the stub held at once: concurrency without a stopwatch
        self.trickles_cut = 0   # trickled answers the client hung up on before the last byte
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """The base URL to pass as --base-url (ends in /v1)."""
        assert self._server is not None, "stub not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> "LLMStub":
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            wbufsize = 1 << 16               # headers and body leave in one write...
            disable_nagle_algorithm = True   # ...and at once: no 40 ms delayed-ACK stall per call

            def log_message(self, *a: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 (stdlib name)
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                with stub._lock:
                    stub.auth.append(self.headers.get("Authorization"))
                answer = stub._next(body)
                with stub._lock:
                    stub.in_flight += 1
                    stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
                try:
                    if stub.latency_s:
                        time.sleep(stub.latency_s)
                    if isinstance(answer, Hang):
                        time.sleep(answer.seconds)
                        answer = stub.default
                finally:
                    with stub._lock:
                        stub.in_flight -= 1
                if callable(answer) and not isinstance(answer, (Status, Raw, Trickle, Drop)):
                    answer = answer(body)
                if isinstance(answer, Drop):
                    self._drop()
                elif isinstance(answer, Trickle):
                    self._trickle(answer, body)
                else:
                    self._send(answer, body)

            def _drop(self) -> None:
                self.close_connection = True
                try:  # linger 0: the client sees a reset, not a clean end of stream
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

            def _trickle(self, t: Trickle, body: dict) -> None:
                content = t.answer if isinstance(t.answer, str) else json.dumps(t.answer)
                data = json.dumps(completion(content, body.get("model", "stub"))).encode()
                head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                        "\r\n").encode()
                self.close_connection = True
                try:
                    if not t.headers:
                        self.wfile.write(head)
                        self.wfile.flush()
                    rest = (head if t.headers else b"") + data
                    for i in range(len(rest)):
                        self.wfile.write(rest[i:i + 1])
                        self.wfile.flush()
                        time.sleep(t.interval)
                except OSError:  # the client hung up (BrokenPipe, ConnectionReset)
                    with stub._lock:
                        stub.trickles_cut += 1

            def _send(self, answer: Any, body: dict) -> None:
                headers: dict[str, str] = {}
                if isinstance(answer, Status):
                    status, data = answer.code, (answer.body or json.dumps({"error": {"message": "stub"}})).encode()
                    if answer.retry_after is not None:
                        headers["Retry-After"] = str(answer.retry_after)
                    headers.update(dict(answer.headers))
                elif isinstance(answer, Raw):
                    status, data = answer.status, answer.body
                else:
                    content = answer if isinstance(answer, str) else json.dumps(answer)
                    status, data = 200, json.dumps(completion(content, body.get("model", "stub"), body)).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="llm-stub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "LLMStub":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- scripting -------------------------------------------------------------------------
    def push(self, *answers: Any) -> None:
        """Append answers to the script."""
        with self._lock:
            self.script.extend(answers)

    def _next(self, body: dict) -> Any:
        with self._lock:
            self.calls += 1
            self.requests.append(body)
            if self.script:
                return self.script.pop(0)
        if self.handler is not None:
            return self.handler(body)
        return self.default

    def reset_counts(self) -> None:
        with self._lock:
            self.calls = 0
            self.requests.clear()
            self.auth.clear()
