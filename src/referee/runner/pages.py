"""Which browser page a screen capture reads: while an agent drives the browser, one the runner loads itself.

An agent holding CDP to the runner's Chromium controls every tab and context of it (it rewrites the DOM, adds a
script to every new document, answers requests itself), so no page of that browser, a fresh tab included, shows
only what the app served. The runner's captures read the page from its second Chromium instead
(`BrowserSession.fresh_page`): the URL loaded afresh with the session's cookies, so what they see is the server's
state for that session. The URL is the agent's page's, and it must be a page of app.url's origin (or of one the
plan's own `script:` opened with `goto`): a `data:` URL or a server of the agent's own would be the agent's
painting again. A capture may name the page (`url:`), or ask
for the agent's own page (`source: agent_page`), which the report then says.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from referee.plan.captures import AGENT_PAGE_NOTE
from referee.runner.captures.base import CaptureFailed

if TYPE_CHECKING:
    from referee.runner.browser import BrowserSession

AGENT_PAGE = AGENT_PAGE_NOTE
RUNNER_PAGE = "the runner's page (no agent drives this browser)"
BLANK = "about:blank"


def origin(url: str) -> tuple[str, str, int | None] | None:
    """(scheme, host, port) of an http(s) URL, default ports filled in; None for any other URL.

    >>> origin("http://127.0.0.1:8/a?b"), origin("https://Example.com/"), origin("data:text/html,hi")
    (('http', '127.0.0.1', 8), ('https', 'example.com', 443), None)
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return None
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    return parts.scheme, (parts.hostname or "").lower(), port


def _short(url: str, limit: int = 100) -> str:
    return url if len(url) <= limit else url[:limit] + "..."


def reloadable(page_url: str, app_url: str | None, opened: Collection[tuple] = ()) -> str | None:
    """None when the runner may load `page_url` (where the agent left its page) itself, else why not: it must be
    on app.url's origin or on one of `opened` (origins the plan's own script went to).

    >>> reloadable("http://127.0.0.1:9/todos?x=1", "http://127.0.0.1:9"), reloadable("about:blank", None)
    (None, None)
    >>> reloadable("data:text/html,<h1>done</h1>", "http://127.0.0.1:9")
    "it is not a page of app.url (http://127.0.0.1:9) or of a site the plan's script opened"
    """
    if page_url in ("", BLANK):
        return None
    allowed = {o for o in (origin(app_url) if app_url else None, *opened) if o is not None}
    if not allowed:
        return "the plan has no app.url, so the runner cannot tell the app's pages from the agent's"
    if origin(page_url) not in allowed:
        where = f"app.url ({_short(app_url)}) or of " if app_url else ""
        return f"it is not a page of {where}a site the plan's script opened"
    return None


class PageSource:
    """The pages screen captures read in a run of the browser actor (see the module docstring)."""

    def __init__(self, session: BrowserSession, app_url: str | None, agent_driven: bool,
                 opened: Collection[tuple] = ()) -> None:
        # `opened`: the origins the plan's script has gone to so far (the actor's own set, which grows)
        self.session, self.app_url, self.agent_driven, self.opened = session, app_url, agent_driven, opened

    @contextmanager
    def open(self, source: str, url: str | None, timeout_s: float, reuse: object = None
             ) -> Iterator[tuple[Any, str]]:
        """The page to read and how it was had (for the capture's record): `url` (already joined to app.url)
        loaded by the runner when given, else as `source` and the module docstring say. Captures with the same
        `reuse` key (one step's phase) read one load of a page. CaptureFailed when there is no page to read, or
        the runner may not or cannot load it."""
        page = self.session.page
        if page is None:
            raise CaptureFailed("no browser page: the browser session is closed")
        if source == "agent_page":
            yield page, AGENT_PAGE
            return
        if url is None and not self.agent_driven:
            yield page, RUNNER_PAGE
            return
        if url is None:
            url = str(page.url)
            why = reloadable(url, self.app_url, self.opened)
            if why is not None:
                raise CaptureFailed(f"the agent's page is at {_short(url)}: {why}; the runner loads only pages of "
                                    "app.url (and of the plan's script) itself (an agent drives this browser, so "
                                    "it reads no page of it). Name the page with `url:` in the capture, or read the "
                                    "agent's own page with `source: agent_page`")
        try:
            fresh = self.session.fresh_page(url, timeout_s, reuse)
        except Exception as exc:  # the load failed: said as such, not as the capture's own failure
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise CaptureFailed(f"the runner could not load {_short(url)}: {first}") from None
        yield fresh, f"loaded by the runner from {_short(url)} with the session's cookies"
