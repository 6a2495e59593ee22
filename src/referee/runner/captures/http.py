"""The http capture: status, headers (secrets redacted) and body of one request, made by the runner."""

from __future__ import annotations

import base64

from referee.fsutil import atomic_write_text
from referee.rundir import HttpRecord, dump_record, record_file
from referee.runner.captures.base import CaptureKind, register

REDACTED = "[redacted]"
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


@register("http")
class HttpCapture(CaptureKind):
    def take(self, params, ctx):
        import httpx

        url = ctx.join_url(ctx.expand(params.url))
        headers = {k: ctx.expand(v) for k, v in params.headers.items()}
        # the record shows the URL as the plan wrote it: a `${TOKEN}` in it is never written out
        record = HttpRecord(url=ctx.join_url(ctx.shown(params.url)), method=params.method)
        try:
            with httpx.Client(timeout=params.timeout_s, follow_redirects=True, trust_env=False) as client:
                resp = client.request(params.method, url, headers=headers,
                                      json=params.json_body if params.json_body is not None else None)
            record.status = resp.status_code
            # a Location header or an error page may echo the URL it was asked for
            record.headers = {k: ctx.scrub(v) for k, v in redact_headers(resp.headers).items()}
            try:
                record.body = ctx.scrub(resp.content.decode(resp.encoding or "utf-8"))
            except (UnicodeDecodeError, LookupError):
                record.body_base64 = base64.b64encode(resp.content).decode("ascii")
        except httpx.HTTPError as exc:
            # the app did not answer: an observation (FAIL for the validators), not a grader error
            record.error = ctx.scrub(f"{type(exc).__name__}: {exc}")
        path = ctx.out_dir / record_file(params.name, "http")
        atomic_write_text(path, dump_record(record))
        return [path]
