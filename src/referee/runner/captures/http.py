"""The http capture: status, headers (secrets redacted) and body of one request, made by the runner."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from referee.core.fsutil import atomic_write_text
from referee.rundir.schema import HttpRecord, dump_record, record_file
from referee.runner.captures.base import CaptureKind, register, searchable

REDACTED = "[redacted]"
MAX_BODY = 32 << 20  # decoded bytes of a body kept in the record; past it the body is cut (`body_truncated`)
SECRET_HEADERS = {"authorization", "cookie", "set-cookie", "proxy-authorization", "x-api-key"}


def redact_headers(headers) -> dict[str, str]:
    """Copy headers with credentials replaced.

    >>> redact_headers({"Authorization": "Bearer x", "Content-Type": "a"})
    {'Authorization': '[redacted]', 'Content-Type': 'a'}
    """
    out: dict[str, str] = {}
    for k, v in headers.items():
        out[k] = REDACTED if k.lower() in SECRET_HEADERS else v
    return out


@dataclass
class _Answer:
    status: int | None = None
    headers: Any = None
    encoding: str | None = None
    body: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    error: str | None = None
    raised: BaseException | None = None  # not an answer (a malformed URL): the capture fails, in the caller


def _fetch(method: str, url: str, headers: dict[str, str], json_body: Any, timeout_s: float,
           stop: threading.Event, answer: _Answer) -> None:
    """Make the request; keep at most MAX_BODY bytes of the decoded body; give up once `stop` is set."""
    import httpx

    try:
        with httpx.Client(timeout=timeout_s, follow_redirects=False, trust_env=False) as client:
            with _followed(client, client.build_request(method, url, headers=headers, json=json_body)) as resp:
                answer.headers, answer.encoding = resp.headers, resp.encoding
                # decoded bytes: a small gzip answer may decode to gigabytes; stop reading past the limit
                for chunk in resp.iter_bytes(1 << 16):
                    if stop.is_set():
                        return
                    answer.body += chunk[: MAX_BODY - len(answer.body)]
                    if len(answer.body) >= MAX_BODY:
                        answer.truncated = True
                        break
                answer.status = resp.status_code
    except httpx.HTTPError as exc:
        answer.error = f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # noqa: BLE001 - handed to the capture's own thread, never printed here
        answer.raised = exc


MAX_REDIRECTS = 10


@contextmanager
def _followed(client: Any, request: Any) -> Iterator[Any]:
    """The streamed answer to `request`, redirects followed while they stay on its origin (scheme, host, port).

    A redirect to another origin is the answer (its status and Location are recorded): the runner tests the
    app, and sends nothing to whatever host the app points it at.
    """
    origin = request.url.scheme, request.url.host, request.url.port
    for hop in range(MAX_REDIRECTS + 1):
        resp = client.send(request, stream=True)
        nxt = resp.next_request if resp.is_redirect else None
        if nxt is None or (nxt.url.scheme, nxt.url.host, nxt.url.port) != origin or hop == MAX_REDIRECTS:
            break  # the last of too many redirects is the answer too
        resp.close()
        request = nxt
    try:
        yield resp
    finally:
        resp.close()


@register("http")
class HttpCapture(CaptureKind):
    def take(self, params, ctx):
        url = ctx.join_url(ctx.expand(params.url))
        headers = {k: ctx.expand(v) for k, v in params.headers.items()}
        # the record shows the URL as the plan wrote it: a `${TOKEN}` in it is never written out
        record = HttpRecord(url=ctx.join_url(ctx.shown(params.url)), method=params.method)
        answer, stop = _Answer(), threading.Event()
        # timeout_s bounds the whole answer, connect to last byte, not each read: a server that trickles
        # a byte at a time must not hold the run; the worker gives up at its next chunk or read timeout
        worker = threading.Thread(target=_fetch, daemon=True, name=f"http-capture-{params.name}",
                                  args=(params.method, url, headers, params.json_body, params.timeout_s, stop,
                                        answer))
        worker.start()
        worker.join(params.timeout_s)
        if worker.is_alive():
            stop.set()
            # the app did not answer in time: an observation (FAIL for the validators), not a grader error
            record.error = f"ReadTimeout: no whole answer within timeout_s ({params.timeout_s:g} s)"
        elif answer.raised is not None:
            raise answer.raised
        elif answer.status is None:
            record.error = ctx.scrub(answer.error or "request failed")
        else:
            record.status = answer.status
            # a Location header or an error page may echo the URL it was asked for
            record.headers = {k: ctx.scrub(v) for k, v in redact_headers(answer.headers).items()}
            text, exact = searchable(bytes(answer.body), answer.encoding)
            # the text is what validators search; the exact bytes stay beside it when they are not text
            record.body, record.body_base64 = ctx.scrub(text), exact
            record.body_truncated = answer.truncated
        path = ctx.out_dir / record_file(params.name, "http")
        atomic_write_text(path, dump_record(record))
        return [path]
