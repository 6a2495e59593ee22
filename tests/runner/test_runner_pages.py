"""Which page a screen capture may have the runner load: only pages of app.url's origin (referee.runner.pages)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from referee.plan.captures import AGENT_PAGE_NOTE, DomParams, ScreenshotParams, agent_page_captures
from referee.runner.pages import reloadable

APP = "http://127.0.0.1:8123"


SCRIPT = ("http", "127.0.0.1", 9000)  # a site the plan's own script opened with `goto`


@pytest.mark.parametrize("page_url, app_url, loads", [
    ("http://127.0.0.1:8123/", APP, True),
    ("http://127.0.0.1:8123/todos?x=1#top", APP + "/", True),
    ("about:blank", APP, True),  # before anyone navigated: an empty page, nothing the agent made
    ("about:blank", None, True),
    ("http://127.0.0.1:8124/", APP, False),  # another port: a server of the agent's own
    ("http://localhost:8123/", APP, False),  # not the origin the plan wrote
    ("https://127.0.0.1:8123/", APP, False),
    ("data:text/html,<li>Buy milk</li>", APP, False),
    ("blob:http://127.0.0.1:8123/0b7c", APP, False),
    ("file:///etc/hostname", APP, False),
    ("about:srcdoc", APP, False),
    ("http://127.0.0.1:8123/", None, False),  # no app.url: the app's pages cannot be told from others
    ("http://127.0.0.1:9000/page", None, True),  # ... but the plan's script went there
    ("http://127.0.0.1:9000/page", APP, True),
    ("http://127.0.0.1:9001/page", None, False),
])
def test_the_runner_loads_only_pages_of_the_apps_origin(page_url, app_url, loads):
    opened = {SCRIPT} if ":9000" in page_url or ":9001" in page_url else set()
    assert (reloadable(page_url, app_url, opened) is None) is loads


@pytest.mark.parametrize("params, agent_page", [
    ({"kind": "dom", "name": "d"}, False),
    ({"kind": "dom", "name": "d", "source": "runner", "url": "/orders"}, False),
    ({"kind": "dom", "name": "d", "source": "agent_page"}, True),
])
def test_a_capture_reads_the_agents_page_only_when_it_says_so(params, agent_page):
    assert agent_page_captures([DomParams(**params)]) == (frozenset({"d"}) if agent_page else frozenset())


@pytest.mark.parametrize("bad, why", [
    ({"source": "agent"}, "'runner' or 'agent_page'"),
    ({"source": "agent_page", "url": "/x"}, "give one of them"),
])
def test_a_page_source_the_runner_cannot_honour_is_a_plan_error(bad, why):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=why):
        ScreenshotParams(kind="screenshot", name="s", **bad)


def test_the_note_names_the_option_that_asked_for_the_agents_page():
    assert "source: agent_page" in AGENT_PAGE_NOTE and "painted" in AGENT_PAGE_NOTE


def _proc(pid: int) -> tuple[str, int, int, list[bytes]]:
    """(comm, parent pid, uid, argv) of a live process."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    return stat[stat.index("(") + 1:stat.rindex(")")], int(stat.rsplit(")", 1)[1].split()[1]), \
        os.stat(f"/proc/{pid}").st_uid, args


def _browsers_of(driver: int) -> list[tuple[int, list[bytes]]]:
    """(uid, argv) of each Chromium browser process the Playwright driver `driver` started (not their helpers)."""
    found = []
    for d in Path("/proc").glob("[0-9]*"):
        try:
            comm, ppid, uid, args = _proc(int(d.name))
        except (OSError, ValueError, IndexError):
            continue
        if comm in ("chromium", "chrome") and ppid == driver:
            found.append((uid, args))
    return found


def test_the_page_captures_read_comes_from_a_second_chromium_no_agent_can_reach(tmp_path):
    """The capture browser starts on first use, has no DevTools port (Playwright's pipe only), is given the
    runner's context's cookies (HttpOnly too), and under a root runner runs as its own account."""
    pytest.importorskip("playwright.sync_api")
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Echo(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            body = f"<html><body><p>cookie: {self.headers.get('Cookie')}</p></body></html>".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    from referee.runner.browser import BrowserSession

    sess = BrowserSession.start(cdp=True)
    try:
        driver = next(ppid for pid in Path("/proc").glob("[0-9]*") if pid.name.isdigit()
                      for comm, ppid, _, args in [_safe(int(pid.name))]
                      if comm in ("chromium", "chrome") and f"--remote-debugging-port={sess.cdp_port}".encode() in args)
        assert len(_browsers_of(driver)) == 1  # lazily: no capture browser before a capture needs one
        sess._context.add_cookies([{"name": "sid", "value": "s3ss10n", "url": url, "httpOnly": True}])
        page = sess.fresh_page(url, 30, reuse="s/after")
        assert "cookie: sid=s3ss10n" in page.inner_text("body")
        assert page.context != sess.page.context
        browsers = _browsers_of(driver)
        assert sess.fresh_page(url, 30, reuse="s/after") is page  # one load for the captures of a phase
        again = sess.fresh_page(url, 30, reuse="t/before")
        assert again is not page and page.is_closed()  # another phase: loaded again, the last one closed
        assert len(_browsers_of(driver)) == 2  # one capture browser for the whole session
        sess._context.add_cookies([{"name": "sid", "value": "other", "url": url}])
        assert "cookie: sid=other" in sess.fresh_page(url, 30, reuse="t/before").inner_text("body")
    finally:
        sess.close()
        server.shutdown()
    assert len(browsers) == 2, browsers
    (agents_uid, agents), (uid, args) = sorted(browsers, key=lambda b: not any(a.startswith(b"--remote-debugging-port")
                                                                               for a in b[1]))
    assert any(a.startswith(b"--remote-debugging-port") for a in agents)
    assert not any(a.startswith(b"--remote-debugging-port") for a in args), args
    assert b"--remote-debugging-pipe" in args
    if os.geteuid() == 0:
        import pwd

        assert uid == pwd.getpwnam("referee-capture").pw_uid != agents_uid == pwd.getpwnam("referee-browser").pw_uid


def _safe(pid: int) -> tuple[str, int, int, list[bytes]]:
    try:
        return _proc(pid)
    except (OSError, ValueError, IndexError):
        return "", 0, 0, []
