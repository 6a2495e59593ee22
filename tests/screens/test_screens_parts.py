"""The screens pieces on their own, with real Chromium, datasette, Tesseract and RapidOCR."""

from __future__ import annotations

import json

import pytest

from referee.errors import EvidenceError
from referee.lint import ControlView
from referee.ocr import CALLS, ocr_bytes, ocr_cached
from referee.plan import load_plan_text
from referee.plan.script import parse_script
from referee.rundir.schema import CaptureFailure, parse_record
from referee.runner.captures.base import CaptureContext, CaptureFailed, write_failure
from referee.runner.captures.screens import AriaCapture, DomCapture, ScreenshotCapture
from referee.validators import checker


def _validator(yaml_text: str):
    """The first validator of a one-step plan, typed as the loader types it."""
    plan = load_plan_text(f"- id: s\n  do: x\n  validators:\n    - {yaml_text}\n", "p.yaml")
    return plan.validators["s"][0]


_OCR_CACHE: dict = {}  # shared by the checks below, as a run directory's cache is: one OCR per image and engine


def _check(yaml_text: str, path):
    tv = _validator(yaml_text)
    return checker(tv.params.kind).check(tv.params, ControlView(path, cache_table=_OCR_CACHE), tv.index)


@pytest.fixture(scope="module")
def table_shot(ds_server, browser, tmp_path_factory):
    browser.page.goto(ds_server + "/shop/products", wait_until="load")
    path = tmp_path_factory.mktemp("shots") / "table.png"
    path.write_bytes(browser.page.screenshot())
    return path


@pytest.mark.parametrize("engine", ["tesseract", "rapidocr"])
def test_both_engines_read_a_real_datasette_screenshot(table_shot, engine):
    text = ocr_bytes(table_shot.read_bytes(), engine).text().lower().replace(" ", "")
    for word in ("redgadget", "bluewidget", "products", "2rows"):
        assert word in text, (engine, text[:300])


def test_ocr_normalises_case_and_whitespace_and_honours_min_confidence(table_shot):
    assert _check('{kind: ocr_contains, text: "  RED    gadget "}', table_shot).status == "PASS"
    out = _check('{kind: ocr_contains, text: "RED gadget", ignore_case: false}', table_shot)
    assert out.status == "FAIL"
    out = _check('{kind: ocr_contains, text: "Red Gadget", min_confidence: 1.0}', table_shot)
    assert out.status == "FAIL" and "only below min_confidence 1" in out.reason
    assert _check('{kind: ocr_contains, text: "Red Gadget", min_confidence: 0.5}', table_shot).status == "PASS"
    assert _check('{kind: ocr_not_contains, text: "Red Gadget"}', table_shot).status == "FAIL"


def test_ocr_cache_is_keyed_by_engine_and_image_hash(table_shot):
    store: dict = {}

    def cached(ns, key, compute):
        table = store.setdefault(ns, {})
        if key not in table:
            table[key] = compute()
        return table[key]

    data = table_shot.read_bytes()
    before = CALLS.calls
    a = ocr_cached(data, "tesseract", cached)
    b = ocr_cached(data, "tesseract", cached)
    assert CALLS.calls == before + 1 and a == b
    (key,) = store["ocr"]
    assert key.startswith("tesseract-") and key.endswith(":" + __import__("hashlib").sha256(data).hexdigest())
    json.dumps(store)  # what the grader persists must be JSON


@pytest.mark.parametrize("data", [b"", b"GIF89a", b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, b"<html>not an image</html>"])
def test_unreadable_images_raise_evidence_error(tmp_path, data):
    bad = tmp_path / "bad.png"
    bad.write_bytes(data)
    tv = _validator("{kind: ocr_contains, text: x}")
    with pytest.raises(EvidenceError, match="not a readable image|empty image"):
        checker(tv.params.kind).check(tv.params, ControlView(bad), tv.index)


def test_captures_from_the_runners_page(browser, ds_server, tmp_path):
    browser.page.goto(ds_server + "/shop/products", wait_until="load")
    ctx = CaptureContext(step_id="s", phase="after", out_dir=tmp_path, page=browser.page)
    (png,) = ScreenshotCapture().take(ScreenshotCapture.Params(kind="screenshot", name="shot"), ctx)
    assert png.name == "shot.png" and png.read_bytes().startswith(b"\x89PNG")
    (el,) = ScreenshotCapture().take(ScreenshotCapture.Params(kind="screenshot", name="tbl", selector="table"), ctx)
    assert el.stat().st_size < png.stat().st_size
    (aj,) = AriaCapture().take(AriaCapture.Params(kind="aria", name="tree", format="json"), ctx)
    doc = json.loads(aj.read_text())
    assert doc["url"].endswith("/shop/products") and '- cell "Red Gadget"' in doc["yaml"]
    aria_check = _check("{kind: aria_contains, evidence: tree, role: cell, text: Red Gadget, exact: true}", aj)
    assert aria_check.status == "PASS"
    (dom,) = DomCapture().take(DomCapture.Params(kind="dom", name="page"), ctx)
    assert dom.name == "page.html" and "Blue Widget" in dom.read_text()


def test_a_capture_without_a_page_records_why(tmp_path):
    ctx = CaptureContext(step_id="s", phase="after", out_dir=tmp_path, page=None)
    params = ScreenshotCapture.Params(kind="screenshot", name="shot")
    with pytest.raises(CaptureFailed, match=r"actor: \{kind: browser\}") as exc:
        ScreenshotCapture().take(params, ctx)
    # the runner writes every failed capture one way: a CaptureFailure record in <name>.error.json
    f = write_failure(tmp_path, params, exc.value.why)
    assert f.name == "shot.error.json" and list(tmp_path.iterdir()) == [f]
    rec = parse_record(f.read_bytes(), "screenshot")
    assert isinstance(rec, CaptureFailure) and rec.capture_kind == "screenshot"
    assert "actor: {kind: browser}" in rec.capture_error


def test_dom_contains_reads_visible_text_unless_raw(browser, tmp_path):
    browser.page.set_content("<h1>Orders</h1><script>var token = 'hidden-needle'</script><p>3 <b>open</b></p>")
    path = tmp_path / "p.html"
    path.write_text(browser.page.content())
    assert _check("{kind: dom_contains, text: 3 open}", path).status == "PASS"
    assert _check("{kind: dom_contains, text: hidden-needle}", path).status == "FAIL"
    assert _check("{kind: dom_contains, text: hidden-needle, raw: true}", path).status == "PASS"
    with pytest.raises(EvidenceError, match="is a screenshot capture, not HTML"):  # never searched as HTML
        png = tmp_path / "x.png"
        png.write_bytes(browser.page.screenshot())
        _check("{kind: dom_contains, text: Orders}", png)


@pytest.mark.parametrize("item, message", [
    ({"click": {}}, "name exactly one of role, text, label, placeholder, selector"),
    ({"fill": {"role": "textbox"}}, "Field required at 'value'"),
    ({"hover": {"text": "x"}},
     "unknown action 'hover'; known actions: goto, click, check, fill, press, select, wait_for"),
    ({"goto": "/", "click": "x"}, "one action per item"),
    ({"wait_for": {"text": "x", "state": "gone"}}, "at 'state'"),
    ({"click": {"text": "x", "name": "y"}}, "`name` goes with `role`"),
])
def test_script_mistakes_are_named(item, message):
    with pytest.raises(ValueError, match="script item #1") as exc:
        parse_script([item])
    assert message in str(exc.value)


def test_plan_level_mistakes_in_screen_validators_are_one_line():
    from referee.errors import PlanError

    with pytest.raises(PlanError, match="did you mean 'tesseract'"):
        load_plan_text("- id: s\n  do: x\n  validators:\n    - {kind: ocr_contains, text: x, engine: tesseact}\n",
                       "p.yaml")
    with pytest.raises(PlanError, match="blank needle matches every screen"):
        load_plan_text("- id: s\n  do: x\n  validators:\n    - {kind: ocr_contains, text: '  '}\n", "p.yaml")


def test_network_is_loopback_only(browser, ds_server):
    """The runner's browser reaches the app on loopback and nothing else, whoever drives it."""
    assert browser.page.goto(ds_server + "/-/versions.json").status == 200
    for url in ("http://example.com/", "http://93.184.215.14/", "https://1.1.1.1/"):
        with pytest.raises(Exception, match="ERR_PROXY_CONNECTION_FAILED"):
            browser.page.goto(url, timeout=10_000)
    assert "http://example.com/" in browser.blocked
    browser.page.wait_for_load_state("load")  # let the last error page commit before anyone navigates again
