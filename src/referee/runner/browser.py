"""The runner's own browser: system Chromium via Playwright, headless, loopback-only, with a CDP endpoint for agents,
and a second Chromium (no endpoint, its own account) in which the runner loads the pages its captures read."""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit

from referee.errors import ActorError, require
from referee.runner.browseruser import CAPTURE_USER, browser_launcher, remove_launcher

CHROMIUM = "/usr/bin/chromium"
VIEWPORT = {"width": 1280, "height": 800}
# every context either browser makes: the same screen, locale and clock, and no service worker (one an agent
# registered would answer the page's requests itself)
CONTEXT = {"viewport": VIEWPORT, "device_scale_factor": 1, "locale": "en-US", "timezone_id": "UTC",
           "service_workers": "block"}


def chromium_path() -> str:
    """The system Chromium (`REFEREE_CHROMIUM` overrides); never a browser Playwright downloaded.

    >>> chromium_path().endswith("chromium") or chromium_path().endswith("chrome")  # doctest: +SKIP
    True
    """
    override = os.environ.get("REFEREE_CHROMIUM")
    if override:  # asked for by name: never silently replaced by another browser
        if not (os.path.isfile(override) and os.access(override, os.X_OK)):
            why = "is not an executable file" if os.path.exists(override) else "does not exist"
            raise ActorError(f"REFEREE_CHROMIUM={override} {why}",
                             fix=f"point REFEREE_CHROMIUM at a Chromium binary, or unset it to use {CHROMIUM}")
        return override
    path = CHROMIUM
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        found = shutil.which("chromium") or shutil.which("chromium-browser")
        if not found:
            raise ActorError(f"no Chromium at {path}", fix="install it with: apt-get install chromium "
                             "(or set REFEREE_CHROMIUM to a Chromium binary)")
        path = found
    return path


def is_loopback(url: str) -> bool:
    """True for URLs whose host is this machine (the only place the runner's browser may go).

    >>> [is_loopback(u) for u in ("http://127.0.0.1:8/x", "http://localhost/", "http://[::1]:5/", "https://example.com/")]
    [True, True, True, False]
    >>> is_loopback("data:text/html,hi"), is_loopback("about:blank")
    (True, True)
    """
    parts = urlsplit(url)
    if parts.scheme in ("data", "about", "blob", "chrome", "devtools"):
        return True
    host = (parts.hostname or "").strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dead_end() -> socket.socket:
    """A loopback port that is bound but never listens: connecting to it is refused at once.

    Chromium is told to use it as its proxy; it bypasses proxies for loopback hosts only, so every
    other request (names and IP literals alike, HTTP, HTTPS and WebSocket) fails with
    ERR_PROXY_CONNECTION_FAILED, whoever drives the page. Held open so no one else can take the port.
    """
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    return s


def _chromium_args(proxy_port: int) -> list[str]:
    """Chromium's command line for both browsers: quiet, and every request but loopback refused at the proxy."""
    return ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--disable-default-apps", "--no-first-run",
            "--disable-domain-reliability", "--disable-breakpad", "--metrics-recording-only",
            "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication",
            f"--proxy-server=http://127.0.0.1:{proxy_port}"]


def _close(context: Any) -> None:
    try:
        context.close()
    except Exception:
        pass


@dataclass
class BrowserSession:
    """One Chromium, one context, one page, owned by the runner for the whole plan.

    >>> with BrowserSession.start() as b:  # doctest: +SKIP
    ...     b.page.goto("http://127.0.0.1:8001/"); b.cdp_url
    'http://127.0.0.1:40123'
    """

    headless: bool = True
    cdp_port: int = 0
    blocked: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    _pw: Any = None
    _browser: Any = None
    _context: Any = None
    _page: Any = None
    _dead: socket.socket | None = None
    _launcher: str | None = None  # what starts Chromium as referee-browser (a root runner), removed at close
    _capture: Any = None  # the second Chromium, for captures: started on first use, once per session
    _capture_launcher: str | None = None
    _fresh: tuple[Any, Any, Any] | None = None  # (key, context, page) of the page fresh_page loaded last

    @classmethod
    def start(cls, *, headless: bool = True, cdp: bool = True) -> "BrowserSession":
        """Launch the system Chromium; the page is `about:blank` until a script or agent navigates."""
        sync_api = require("playwright.sync_api", "browser")
        os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        exe = chromium_path()
        sess = cls(headless=headless, cdp_port=free_port() if cdp else 0)
        sess._dead = _dead_end()
        args = _chromium_args(sess._dead.getsockname()[1])
        if cdp:
            args += [f"--remote-debugging-port={sess.cdp_port}", "--remote-debugging-address=127.0.0.1"]
        try:
            # a root runner's Chromium runs as an account of its own once an agent may drive it over CDP: as root
            # it would read (file:///) and write (downloads) any file for the agent, whatever the agent's isolation
            sess._launcher = browser_launcher(exe) if cdp else None
        except OSError as exc:
            sess.close()
            raise ActorError(f"cannot start Chromium as its own account: {exc}",
                             fix="let the runner create the system user referee-browser (useradd), or run it "
                                 "as a user other than root") from None
        try:
            sess._pw = sync_api.sync_playwright().start()
            sess._browser = sess._pw.chromium.launch(executable_path=sess._launcher or exe, headless=headless,
                                                     args=args)
            sess._context = sess._browser.new_context(**CONTEXT)
            sess._page = sess._new_page()
        except ActorError:
            sess.close()
            raise
        except Exception as exc:
            sess.close()
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if os.environ.get("REFEREE_CHROMIUM"):  # the user's choice failed: say so, not "check /usr/bin/chromium"
                raise ActorError(f"cannot start Chromium from REFEREE_CHROMIUM={exe}: {first}",
                                 fix=f"point REFEREE_CHROMIUM at a Chromium binary, or unset it to use {CHROMIUM}"
                                 ) from None
            raise ActorError(f"cannot start Chromium ({exe}): {first}",
                             fix=f"check that {exe} runs (apt-get install chromium)") from None
        return sess

    def _new_page(self) -> Any:
        """A page of the runner's context, watched for refused requests and console errors like the first."""
        page = self._context.new_page()
        page.on("requestfailed", self._on_failed)
        page.on("console", self._on_console)
        return page

    def _on_failed(self, request) -> None:
        failure = request.failure or ""
        if "PROXY" in str(failure) or not is_loopback(request.url):
            self.blocked.append(request.url)

    def _on_console(self, msg) -> None:
        if msg.type == "error" and len(self.console_errors) < 200:
            self.console_errors.append(msg.text[:500])

    @property
    def page(self) -> Any:
        """The runner's page. If an agent closed it, a fresh one takes its place (the page stays the runner's)."""
        if self._page is None or self._context is None:
            return self._page
        if not self._page.is_closed():
            # An agent closes the page over its own CDP connection: Playwright learns of it from an event that
            # is only read while this connection waits for an answer. One round trip to the browser (not to
            # the page, whose scripts may be busy) makes sure a close already done is known here.
            try:
                self._context.cookies()
            except Exception:
                pass
        if self._page.is_closed():
            self._page = self._new_page()
        return self._page

    @property
    def cdp_url(self) -> str | None:
        return f"http://127.0.0.1:{self.cdp_port}" if self.cdp_port else None

    def _capture_browser(self) -> Any:
        """The second Chromium, started on first use: Playwright drives it over a pipe (no debugging port, so no
        agent can reach it), and a root runner starts it as `referee-capture`, an account the agent's browser is
        not (that one could otherwise write into this one's profile)."""
        if self._capture is None:
            if self._pw is None or self._dead is None:
                raise ActorError("the browser session is closed")
            exe = chromium_path()
            try:
                self._capture_launcher = browser_launcher(exe, CAPTURE_USER)
            except OSError as exc:
                raise ActorError(f"cannot start the capture Chromium as its own account: {exc}",
                                 fix=f"let the runner create the system user {CAPTURE_USER} (useradd), or run it "
                                     "as a user other than root") from None
            self._capture = self._pw.chromium.launch(executable_path=self._capture_launcher or exe,
                                                     headless=self.headless,
                                                     args=_chromium_args(self._dead.getsockname()[1]))
        return self._capture

    def cookies(self) -> list[dict]:
        """The cookies of the runner's context (the agent's session), read over the runner's own connection."""
        return list(self._context.cookies()) if self._context is not None else []

    def fresh_page(self, url: str, timeout_s: float, reuse: object = None) -> Any:
        """`url` loaded in a new context of the capture browser holding the runner's context's cookies (the
        server's state, as this session sees it). Playwright's errors propagate.

        The page stays open until the next call or `forget_pages()`; a call with the same `reuse` key (one
        step's phase), URL and cookies gets that same page again rather than another load.
        """
        cookies = self.cookies()
        key = (reuse, url, json.dumps(cookies, sort_keys=True, default=str))
        if reuse is not None and self._fresh is not None and self._fresh[0] == key:
            return self._fresh[2]
        self.forget_pages()
        context = self._capture_browser().new_context(**CONTEXT)
        try:
            try:
                context.add_cookies(cookies)
            except Exception:  # one cookie Playwright will not set (an odd shape) keeps none of the others out
                for cookie in cookies:
                    try:
                        context.add_cookies([cookie])
                    except Exception:
                        pass
            page = context.new_page()
            page.on("requestfailed", self._on_failed)
            page.goto(url, wait_until="load", timeout=timeout_s * 1000)
        except BaseException:
            _close(context)
            raise
        self._fresh = (key, context, page)
        return page

    def forget_pages(self) -> None:
        """Close the page `fresh_page` loaded last: the next capture loads its page again (the agent acted)."""
        if self._fresh is not None:
            _close(self._fresh[1])
            self._fresh = None

    def settle(self, timeout_s: float = 5.0) -> None:
        """Let the page finish loading before the runner looks at it; never raises."""
        try:
            self.page.wait_for_load_state("load", timeout=timeout_s * 1000)
        except Exception:
            pass

    def write_log(self, path: Path, scrub: Callable[[str], str] = lambda text: text) -> None:
        """Record what the network guard refused and what the page logged as errors (diagnostics only), each line
        through `scrub` (the run's secret values replaced: the agent writes the console and picks the URLs)."""
        lines = ([f"blocked (not loopback): {u}" for u in self.blocked]
                 + [f"console error: {m}" for m in self.console_errors])
        if lines:
            from referee.core.fsutil import atomic_write_text

            atomic_write_text(path, "\n".join(scrub(line) for line in lines) + "\n")

    def close(self) -> None:
        self.forget_pages()
        for obj, meth in ((self._context, "close"), (self._browser, "close"), (self._capture, "close"),
                          (self._pw, "stop")):
            if obj is not None:
                try:
                    getattr(obj, meth)()
                except Exception:
                    pass
        self._context = self._browser = self._capture = self._pw = self._page = None
        if self._dead is not None:
            self._dead.close()
            self._dead = None
        remove_launcher(self._launcher)
        remove_launcher(self._capture_launcher)
        self._launcher = self._capture_launcher = None

    def __enter__(self) -> "BrowserSession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
