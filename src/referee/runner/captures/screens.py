"""Screen captures the runner takes from its own browser page: screenshot (PNG), aria snapshot, DOM."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from referee.fsutil import atomic_write_bytes, atomic_write_json, atomic_write_text
from referee.runner.captures.base import CaptureContext, CaptureKind, CaptureParams, register

NO_PAGE = "no browser page: screen captures need `actor: {kind: browser}`"


def _error(ctx: CaptureContext, name: str, why: str) -> list[Path]:
    """Record a failed capture as `<name>.error.json`; the grader turns it into ERROR with this reason."""
    path = ctx.out_dir / f"{name}.error.json"
    atomic_write_json(path, {"capture_error": why})
    return [path]


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")


def _settle(page, timeout_s: float) -> None:
    try:
        page.wait_for_load_state("load", timeout=min(timeout_s, 10.0) * 1000)
    except Exception:
        pass


@register("screenshot")
class ScreenshotCapture(CaptureKind):
    summary = "a PNG screenshot of the runner's own browser page (viewport, full page, or one element)"
    needs_page = True

    class Params(CaptureParams):
        full_page: bool = False
        selector: str | None = None

    def take(self, params, ctx):
        page = ctx.page
        if page is None:
            return _error(ctx, params.name, NO_PAGE)
        try:
            _settle(page, ctx.timeout_s)
            if params.selector:
                data = page.locator(params.selector).first.screenshot(timeout=ctx.timeout_s * 1000, animations="disabled")
            else:
                data = page.screenshot(full_page=params.full_page, timeout=ctx.timeout_s * 1000, animations="disabled",
                                       caret="hide")
        except Exception as exc:
            return _error(ctx, params.name, f"screenshot failed: {_first_line(exc)}")
        path = ctx.out_dir / f"{params.name}.png"
        atomic_write_bytes(path, data)
        return [path]


@register("aria")
class AriaCapture(CaptureKind):
    summary = "the page's accessibility snapshot (roles, names, states) as YAML or JSON"
    needs_page = True

    class Params(CaptureParams):
        selector: str = "body"
        format: Literal["yaml", "json"] = "yaml"

    def take(self, params, ctx):
        page = ctx.page
        if page is None:
            return _error(ctx, params.name, NO_PAGE)
        try:
            _settle(page, ctx.timeout_s)
            snap = page.locator(params.selector).first.aria_snapshot(timeout=ctx.timeout_s * 1000)
        except Exception as exc:
            return _error(ctx, params.name, f"aria snapshot failed: {_first_line(exc)}")
        header = f"# url: {page.url}\n"
        if params.format == "yaml":
            path = ctx.out_dir / f"{params.name}.aria.yaml"
            atomic_write_text(path, header + snap + ("\n" if not snap.endswith("\n") else ""))
            return [path]
        import yaml

        try:
            tree = yaml.safe_load(snap)
        except yaml.YAMLError:
            tree = None
        path = ctx.out_dir / f"{params.name}.aria.json"
        atomic_write_text(path, json.dumps({"url": page.url, "tree": tree, "yaml": snap}, indent=2, ensure_ascii=False))
        return [path]


@register("dom")
class DomCapture(CaptureKind):
    summary = "the page's HTML as the browser has it now (after scripts ran), or one element's outer HTML"
    needs_page = True

    class Params(CaptureParams):
        selector: str | None = None

    def take(self, params, ctx):
        page = ctx.page
        if page is None:
            return _error(ctx, params.name, NO_PAGE)
        try:
            _settle(page, ctx.timeout_s)
            if params.selector:
                html = page.locator(params.selector).first.evaluate("e => e.outerHTML", timeout=ctx.timeout_s * 1000)
            else:
                html = page.content()
        except Exception as exc:
            return _error(ctx, params.name, f"DOM capture failed: {_first_line(exc)}")
        path = ctx.out_dir / f"{params.name}.html"
        atomic_write_text(path, f"<!-- url: {page.url} -->\n" + html)
        return [path]
