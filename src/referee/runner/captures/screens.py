"""Screen captures the runner takes of a browser page: screenshot (PNG), aria snapshot, DOM.

Which page (`ctx.pages`, `referee.runner.pages`): while an agent drives the browser, one the runner loads itself
in a Chromium of its own; the agent's page only when the capture says `source: agent_page`. The DOM and aria
YAML files say which in their first line.
"""

from __future__ import annotations

import time
from pathlib import Path

from referee.core.fsutil import atomic_write_bytes, atomic_write_text
from referee.rundir.schema import AriaRecord, dump_record, record_file
from referee.runner.captures.base import CaptureFailed, CaptureKind, register

# what page.content() gives: the doctype, then the root element's HTML
_WHOLE_PAGE = "e => (document.doctype ? new XMLSerializer().serializeToString(document.doctype) : '') + e.outerHTML"
NO_PAGE = "no browser page: screen captures need `actor: {kind: browser}`"


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")


def _wait_loaded(page, timeout_s: float, what: str) -> None:
    """Wait up to `timeout_s` for the page to finish loading; a page still loading then is a failed capture.

    Playwright's own load state is not enough: a navigation an external agent started over CDP may not
    have reached the runner's connection yet, and its load state then still says "load" from the page
    before. The document's `readyState` is the page's own word ('complete' once its load event fired).
    """
    deadline = time.monotonic() + timeout_s
    try:
        page.wait_for_load_state("load", timeout=timeout_s * 1000)
        left = max(deadline - time.monotonic(), 0.001)
        page.wait_for_function("document.readyState === 'complete'", timeout=left * 1000, polling=100)
    except Exception as exc:
        if type(exc).__name__ != "TimeoutError":
            raise CaptureFailed(f"{what} failed: {_first_line(exc)}") from None
        raise CaptureFailed(f"{what} failed: the page was still loading after the capture's timeout_s "
                            f"({timeout_s:g}s): {_url(page)}") from None


def _url(page) -> str:
    try:
        return str(page.url)
    except Exception:
        return "(no URL)"


class PageCapture(CaptureKind):
    """A capture of a browser page: no page, or a page that fails, is a failed capture."""

    what = "screen capture"

    def take(self, params, ctx):
        pages = getattr(ctx, "pages", None)
        if pages is None:  # an actor without a page source (a plugin's): its page, as it is
            if ctx.page is None:
                raise CaptureFailed(NO_PAGE)
            return self._read(ctx.page, params, ctx, None)
        url = getattr(params, "url", None)
        # the captures of one step's phase read one load of the page (screenshot, aria and DOM of the same page)
        with pages.open(getattr(params, "source", "runner"), ctx.join_url(url) if url else None,
                        params.timeout_s, reuse=(ctx.step_id, ctx.phase)) as (page, note):
            return self._read(page, params, ctx, note)

    def _read(self, page, params, ctx, note: str | None) -> list[Path]:
        _wait_loaded(page, params.timeout_s, self.what)
        try:
            return self.take_from(page, params, ctx, note)
        except Exception as exc:
            raise CaptureFailed(f"{self.what} failed: {_first_line(exc)}") from None

    def take_from(self, page, params, ctx, note: str | None = None) -> list[Path]:
        """Write the capture of `page`; `note` says which page it is (for the file's first line), if known."""
        raise NotImplementedError


def _header(page, note: str | None) -> str:
    """What the first line of a DOM or aria file says: the page's URL and which page it was.

    >>> class P: url = "http://127.0.0.1:5/"
    >>> _header(P(), "the runner's page")
    "url: http://127.0.0.1:5/ · page: the runner's page"
    """
    return f"url: {_url(page)}" + (f" · page: {note}" if note else "")


@register("screenshot")
class ScreenshotCapture(PageCapture):
    what = "screenshot"

    def take_from(self, page, params, ctx, note=None):
        ms = params.timeout_s * 1000
        if params.selector:
            data = page.locator(params.selector).first.screenshot(timeout=ms, animations="disabled")
        else:
            data = page.screenshot(full_page=params.full_page, timeout=ms, animations="disabled",
                                   caret="hide")
        path = ctx.out_dir / f"{params.name}.png"
        atomic_write_bytes(path, data)
        return [path]


@register("aria")
class AriaCapture(PageCapture):
    what = "aria snapshot"

    def take_from(self, page, params, ctx, note=None):
        snap = page.locator(params.selector).first.aria_snapshot(timeout=params.timeout_s * 1000)
        # the page shows what the agent made the app store (a secret value it learned, too): scrubbed, as a body is
        snap = ctx.scrub(snap)
        header = f"# {ctx.scrub(_header(page, note)).replace(chr(10), ' ')}\n"
        if params.format == "yaml":
            path = ctx.out_dir / f"{params.name}.aria.yaml"
            atomic_write_text(path, header + snap + ("\n" if not snap.endswith("\n") else ""))
            return [path]
        import yaml

        try:
            tree = yaml.safe_load(snap)
        except yaml.YAMLError:
            tree = None
        path = ctx.out_dir / record_file(params.name, "aria")
        atomic_write_text(path, dump_record(AriaRecord(url=ctx.scrub(page.url), tree=tree, yaml=snap)))
        return [path]


@register("dom")
class DomCapture(PageCapture):
    what = "DOM capture"

    def take_from(self, page, params, ctx, note=None):
        # page.content() takes no timeout and waits for a page still loading forever: a locator gives up
        html = page.locator(params.selector or ":root").first.evaluate(
            "e => e.outerHTML" if params.selector else _WHOLE_PAGE, timeout=params.timeout_s * 1000)
        path = ctx.out_dir / f"{params.name}.html"
        # scrubbed as an http body is: the page shows what the agent made the app store
        atomic_write_text(path, f"<!-- {ctx.scrub(_header(page, note)).replace('--', '- -')} -->\n" + ctx.scrub(html))
        return [path]
