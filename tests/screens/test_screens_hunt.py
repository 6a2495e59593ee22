"""Bugs a black-box tester found in the browser actor, the screen captures, the lint and the report.

Each test uses real Chromium (/usr/bin/chromium) and real servers on loopback, and failed on the code it
was written against.
"""

from __future__ import annotations

import pytest

from referee.runner.captures.base import CaptureContext, CaptureFailed
from referee.runner.captures.screens import AriaCapture, DomCapture, ScreenshotCapture


@pytest.mark.parametrize("capture", [ScreenshotCapture, DomCapture, AriaCapture])
def test_a_page_still_loading_past_timeout_s_is_a_failed_capture(browser, pages_server, tmp_path, capture):
    """docs/screens.md: "A page still loading past a screen capture's `timeout_s` is a failed capture". The
    capture used to wait up to timeout_s for the load, then capture the half-loaded page anyway."""
    browser.page.goto(pages_server + "/slow", wait_until="commit")
    try:
        ctx = CaptureContext(step_id="s", phase="after", out_dir=tmp_path, page=browser.page)
        params = capture.Params(kind=capture.kind, name="c", timeout_s=1)
        with pytest.raises(CaptureFailed, match=r"still loading after the capture's timeout_s \(1s\): .*/slow"):
            capture().take(params, ctx)
        assert list(tmp_path.iterdir()) == []
    finally:
        browser.page.goto("about:blank")  # stop the endless load for the tests after this one
