"""A small OpenAI-compatible chat client: JSON answers, a lenient parser, retries with backoff, bounded concurrency,
token usage counted per caller."""

from __future__ import annotations

import contextvars
import json
import os
import random
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Literal, TypeVar

from referee.core.concurrency import ordered_map
from referee.core.timeouts import MAX_RETRIES
from referee.errors import BackendError, UsageError

T = TypeVar("T")
R = TypeVar("R")

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class LLMError(BackendError):
    """A model call with no usable answer (transport failure, timeout, malformed response), after retries.

    The llm backends raise it so that the auditor records `unknown`, caches nothing and asks again on resume.
    """


class _Deadline(Exception):
    """A request that ran past its overall deadline (internal: chat() turns it into a timeout result)."""


@dataclass(frozen=True)
class LLMConfig:
    """Where and how to call a model.

    >>> LLMConfig(base_url="http://127.0.0.1:8000/v1", model="m").chat_url
    'http://127.0.0.1:8000/v1/chat/completions'
    """

    base_url: str
    model: str
    api_key: str | None = None
    timeout_s: float = 60.0        # one request, from connect to the last byte of the answer
    connect_timeout_s: float = 10.0  # to open the connection; a server that is down fails fast
    max_retries: int = MAX_RETRIES  # retries after the first attempt
    backoff_s: float = 0.5         # first wait; doubles each retry, with jitter
    max_backoff_s: float = 20.0
    concurrency: int = 8
    temperature: float | None = 0.0  # None: never sent (models that accept only their default)
    max_tokens: int | None = None
    # the name the answer's token limit goes by: newer OpenAI models refuse `max_tokens` and want
    # `max_completion_tokens`; "auto" sends max_tokens and switches when a server refuses it
    token_param: Literal["auto", "max_tokens", "max_completion_tokens"] = "auto"

    @property
    def chat_url(self) -> str:
        base = self.base_url.rstrip("/")
        return base if base.endswith("/chat/completions") else base + "/chat/completions"

    @classmethod
    def from_env(cls, base_url: str | None, model: str | None, *, api_key_env: str | None = None,
                 **kw: Any) -> "LLMConfig":
        """Build a config; the key comes from OPENAI_API_KEY (or the variable `api_key_env` names, which must
        then be set), the base URL from OPENAI_BASE_URL when not given."""
        base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        if not base_url:
            raise UsageError("no model endpoint given",
                             fix="pass --base-url (any OpenAI-compatible /v1 URL) or set OPENAI_BASE_URL")
        if not model:
            raise UsageError("no model name given", fix="pass --model NAME")
        check_base_url(base_url)
        key = os.environ.get(api_key_env or "OPENAI_API_KEY")
        if api_key_env and not key:
            raise UsageError(f"--api-key-env {api_key_env}: that environment variable is not set",
                             fix=f"export {api_key_env}=... or name the variable that holds the key")
        return cls(base_url=base_url, model=model, api_key=key, **kw)


def check_base_url(url: str) -> None:
    """A model endpoint is an http(s) URL with a host (and a port that is a number): else a UsageError naming it,
    before any call (a missing scheme was retried on every call, and an unclosed IPv6 bracket was an internal error).

    >>> check_base_url("http://127.0.0.1:8000/v1")
    >>> check_base_url("127.0.0.1:8000/v1")
    Traceback (most recent call last):
    ...
    referee.errors.UsageError: --base-url 127.0.0.1:8000/v1: not an http(s) URL with a host; ...
    """
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018  (raises ValueError for a port that is no number)
    except ValueError:
        ok = False
    if not ok:
        raise UsageError(f"--base-url {url}: not an http(s) URL with a host",
                         fix="give the endpoint as http://HOST:PORT/v1 (or https://...)")


@dataclass(frozen=True)
class ChatResult:
    """One finished chat call: the text, the parsed JSON object (or None), attempts made, last error, and the
    token usage the server reported for the answer (prompt, completion), when it did."""

    text: str | None
    data: dict | None
    attempts: int
    error: str | None = None
    usage: tuple[int, int] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def parse_json_loose(text: str | None) -> dict | None:
    """Pull the first JSON object out of a model answer: plain JSON, a ```json fence, or JSON inside prose.

    >>> parse_json_loose('Sure! ```json\\n{"a": 1}\\n``` hope it helps')
    {'a': 1}
    >>> parse_json_loose('the answer is {"a": {"b": 2}} ok')
    {'a': {'b': 2}}
    >>> parse_json_loose("no json here") is None, parse_json_loose("[" * 5000 + "]" * 5000) is None
    (True, True)
    """
    if not text:
        return None
    text = text.strip()
    try:
        obj = json.loads(text)
        return obj if isinstance(obj, dict) else None
    except (ValueError, RecursionError):  # RecursionError: nested past json's limit (a model in a loop)
        pass
    dec = json.JSONDecoder()
    # try every '{' in order: fences and prose just shift where the object starts
    start = text.find("{")
    while start != -1:
        try:
            obj, _ = dec.raw_decode(text, start)
            if isinstance(obj, dict):
                return obj
        except (ValueError, RecursionError):
            pass
        start = text.find("{", start + 1)
    return None


@dataclass
class Usage:
    """Tokens the model calls of one scope used: calls answered, prompt and completion tokens."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, prompt: int, completion: int) -> None:
        self.calls += 1
        self.prompt_tokens += prompt
        self.completion_tokens += completion


_METERS: contextvars.ContextVar[tuple[Usage, ...]] = contextvars.ContextVar("referee_llm_meters", default=())


@contextmanager
def usage_meter() -> Iterator[Usage]:
    """Count the tokens of every chat call answered in this block, in this thread (nested meters all count).

    >>> with usage_meter() as used:
    ...     pass
    >>> used.calls, used.prompt_tokens
    (0, 0)
    """
    used = Usage()
    token = _METERS.set(_METERS.get() + (used,))
    try:
        yield used
    finally:
        _METERS.reset(token)


def retry_after_s(headers: Any, now: float | None = None) -> float | None:
    """Seconds a server asks to wait: `retry-after-ms`, or `retry-after` as seconds or as an HTTP date.

    >>> retry_after_s({"retry-after-ms": "1500"}), retry_after_s({"retry-after": "3"})
    (1.5, 3.0)
    >>> retry_after_s({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412480.0)
    10.0
    >>> retry_after_s({"retry-after": "soon"}) is None
    True
    """
    from email.utils import parsedate_to_datetime

    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    ra = headers.get("retry-after")
    if not ra:
        return None
    try:
        return max(0.0, float(ra))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(ra).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when - (time.time() if now is None else now))


@dataclass
class LLMClient:
    """A thread-safe OpenAI-compatible chat client that never raises for a model's bad answer.

    >>> c = LLMClient(LLMConfig(base_url="http://127.0.0.1:9/v1", model="m", max_retries=0, timeout_s=0.2))
    >>> c.chat([{"role": "user", "content": "hi"}]).ok
    False
    """

    config: LLMConfig
    sleep: Callable[[float], None] = time.sleep
    calls: int = 0                 # HTTP requests sent, retries included (tests count these)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _idle: list = field(default_factory=list, repr=False)     # httpx clients not in use now
    _clients: list = field(default_factory=list, repr=False)  # every open httpx client, to close
    _token_param: str = field(default="", repr=False)  # learnt: the name this server takes the token limit by

    def _checkout(self):
        """An httpx client for one request: an idle one (its connections kept alive) or a new one."""
        import httpx

        with self._lock:
            if self._idle:
                return self._idle.pop()
        headers = {"Content-Type": "application/json"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        client = httpx.Client(timeout=self._timeout(), headers=headers)
        with self._lock:
            self._clients.append(client)
        return client

    def _checkin(self, client) -> None:
        with self._lock:
            if client in self._clients:
                self._idle.append(client)

    def _discard(self, client) -> None:
        with self._lock:
            if client in self._clients:
                self._clients.remove(client)
        client.close()

    def _post(self, body: dict):
        """POST one request under an overall deadline of `timeout_s`, from connect to the last byte.

        httpx's timeouts bound each read, so a server that sends a byte a second would never trip them.
        The request runs in a worker thread and the caller waits at most `timeout_s`; past it the caller
        gives up and closes that request's own client, which ends the abandoned read at its next byte.
        """
        http = self._checkout()
        box: dict[str, Any] = {}
        done = threading.Event()

        def work() -> None:
            try:
                box["resp"] = http.post(self.config.chat_url, json=body)
            except BaseException as exc:  # handed to the caller's thread as it is
                box["exc"] = exc
            finally:
                done.set()

        threading.Thread(target=work, name="referee-llm-request", daemon=True).start()
        if not done.wait(self.config.timeout_s):
            self._discard(http)
            raise _Deadline()
        self._checkin(http)
        if "exc" in box:
            raise box["exc"]
        return box["resp"]

    def _timeout(self):
        import httpx

        return httpx.Timeout(self.config.timeout_s, connect=min(self.config.connect_timeout_s, self.config.timeout_s))

    def close(self) -> None:
        with self._lock:
            clients, self._clients, self._idle = self._clients, [], []
        for c in clients:
            c.close()

    def __enter__(self) -> "LLMClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _wait(self, attempt: int, retry_after: float | None) -> None:
        delay = min(self.config.max_backoff_s, self.config.backoff_s * (2 ** attempt))
        delay *= 0.75 + 0.5 * random.random()  # jitter, so concurrent workers do not retry in lockstep
        if retry_after is not None:  # what the server asks, within our ceiling
            delay = min(self.config.max_backoff_s, max(delay, retry_after))
        self.sleep(delay)

    def chat(self, messages: list[dict], *, json_schema: dict | None = None, schema_name: str = "answer",
             temperature: float | None = None) -> ChatResult:
        """Send one chat request, retrying 429/5xx/timeouts; parse a JSON object from the answer when asked.

        >>> client = LLMClient(LLMConfig(base_url="http://127.0.0.1:9", model="m", max_retries=0, timeout_s=0.2))
        >>> client.chat([]).attempts
        1
        """
        import httpx

        body: dict[str, Any] = {"model": self.config.model, "messages": messages}
        if self.config.temperature is not None:  # None: the user asked that none be sent, whoever asks for one
            body["temperature"] = self.config.temperature if temperature is None else temperature
        token_param = self._token_param or ("max_tokens" if self.config.token_param == "auto"
                                            else self.config.token_param)
        if self.config.max_tokens:
            body[token_param] = self.config.max_tokens
        if json_schema is not None:
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": schema_name, "schema": json_schema, "strict": False}}
        error: str | None = None
        attempts = 0
        dropped_format = switched_tokens = False
        free = 0  # requests that ask again with a corrected body: not retries
        while attempts <= self.config.max_retries + free:
            attempts += 1
            with self._lock:
                self.calls += 1
            retry_after = None
            try:
                resp = self._post(body)
            except httpx.ConnectTimeout:  # before TimeoutException, which it is a kind of
                error = f"timeout: no connection after {min(self.config.connect_timeout_s, self.config.timeout_s)}s"
            except (httpx.TimeoutException, _Deadline):
                error = f"timeout after {self.config.timeout_s}s"
            except httpx.TransportError as exc:
                error = f"transport error: {type(exc).__name__}: {exc}"
            except httpx.DecodingError as exc:  # a body its headers misdescribe (gzip that is none): no answer
                error = f"malformed response: {type(exc).__name__}: {exc}"
            else:
                if resp.status_code == 200:
                    text = _answer_text(resp)
                    if text is None:
                        error = "no message content in the response"
                        break  # a well-formed 200 without content will not improve on retry
                    data = parse_json_loose(text) if json_schema is not None else None
                    err = "answer is not a JSON object" if (json_schema is not None and data is None) else None
                    usage = _usage(resp)
                    for meter in _METERS.get():
                        meter.add(*(usage or (0, 0)))
                    return ChatResult(text=text, data=data, attempts=attempts, error=err, usage=usage)
                error = f"HTTP {resp.status_code}: {resp.text[:200]}"
                if (resp.status_code == 400 and token_param in body and not switched_tokens
                        and self.config.token_param == "auto" and _refuses(resp.text, token_param)):
                    # the model takes its token limit by the other name: ask again (not a retry) and remember
                    other = "max_completion_tokens" if token_param == "max_tokens" else "max_tokens"
                    body[other] = body.pop(token_param)
                    token_param, switched_tokens = other, True
                    free += 1
                    with self._lock:
                        self._token_param = other
                    continue
                if resp.status_code == 400 and "response_format" in body and not dropped_format:
                    # some servers reject json_schema; ask again without it and rely on the loose parser
                    body.pop("response_format")
                    dropped_format = True
                    continue
                if resp.status_code not in RETRY_STATUS:
                    break
                retry_after = retry_after_s(resp.headers)
            if attempts <= self.config.max_retries + free:
                self._wait(attempts - 1 - free, retry_after)
        return ChatResult(text=None, data=None, attempts=attempts, error=error)

    def map(self, fn: Callable[[T], R], items: Iterable[T], *, concurrency: int | None = None) -> Iterator[R]:
        """Apply `fn` to items with at most `concurrency` in flight, yielding results in input order.

        >>> list(LLMClient(LLMConfig(base_url="http://x", model="m")).map(lambda x: x * 2, [1, 2, 3]))
        [2, 4, 6]
        """
        return ordered_map(fn, items, concurrency or self.config.concurrency, name="referee-llm")


def _refuses(text: str, param: str) -> bool:
    """Whether a 400 body says the server does not take `param` (OpenAI: "Unsupported parameter: 'max_tokens'
    ... Use 'max_completion_tokens' instead")."""
    low = text.lower()
    return param in low and any(w in low for w in ("unsupported", "not supported", "unrecognized", "unknown",
                                                    "not allowed", "invalid", "instead"))


def _usage(resp) -> tuple[int, int] | None:
    """(prompt, completion) tokens of an answer, None when the server does not say."""
    try:
        u = resp.json().get("usage")
        if not isinstance(u, dict):
            return None
        # a count is a whole number of 0 or more: a negative one, a boolean or a string is the server's slip, not 0
        p, c = u.get("prompt_tokens"), u.get("completion_tokens")
        return (p if type(p) is int and p >= 0 else 0), (c if type(c) is int and c >= 0 else 0)
    except (ValueError, TypeError, AttributeError, RecursionError):
        return None


def _answer_text(resp) -> str | None:
    try:
        payload = resp.json()
        msg = payload["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError, RecursionError):
        return None
    content = msg.get("content") if isinstance(msg, dict) else None
    if isinstance(content, list):  # some servers return content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else None
