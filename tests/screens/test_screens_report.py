"""report.html: rendered in headless Chromium, agent text escaped, verdict table read back from a screenshot."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil

from referee.ocr import ocr_bytes
from tests.conftest import base_cli_env, run_cli


# first in the file: once the module's `browser` runs, it holds this process's asyncio loop and `referee` runs in
# a child (tests.support.incli.process_needed)
def test_report_of_a_directory_that_is_no_run_is_one_line(tmp_path):
    """`report` grades again (a results.json is never trusted), so a folder without a run is a usage error."""
    rc, out, err = run_cli(["report", tmp_path], env=base_cli_env())
    assert rc == 2 and "no manifest.json: not a referee run directory" in err and len(err.strip().splitlines()) == 1


def _open(browser, path):
    dialogs = []
    page = browser.page
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(path.resolve().as_uri(), wait_until="load")
    return page, dialogs


def _without_thumbnails(shot, table) -> bytes:
    """The table's screenshot `shot` without its last column, the screens (thumbnails): the rest is what OCR reads
    of the verdict table. The thumbnails hold none of the words looked for, and Tesseract spends seconds on them."""
    from PIL import Image

    img = Image.open(shot)
    box = table.bounding_box()
    screens = table.locator("thead th").last
    assert screens.inner_text().strip() == "screens"
    right = (screens.bounding_box()["x"] - box["x"]) * img.width / box["width"]
    buf = io.BytesIO()
    img.crop((0, 0, round(right), img.height)).save(buf, format="PNG")
    return buf.getvalue()


def test_report_renders_escapes_and_shows_the_verdict_table(journey, browser, tmp_path):
    run_dir = tmp_path / "run"  # `report` writes into the run directory: the journey's is only read (shared)
    shutil.copytree(journey.run_dir, run_dir)
    rc, out, err = run_cli(["report", run_dir], env=journey.env())
    assert rc == 0, err
    report = run_dir / "report.html"
    html = report.read_text()
    assert "<script>window.__pwned" not in html and "&lt;script&gt;window.__pwned = 1" in html
    assert 'src="http' not in html and "<link" not in html  # self-contained

    page, dialogs = _open(browser, report)
    assert page.evaluate("typeof window.__pwned") == "undefined" and dialogs == []
    results = journey.results()
    rows = page.locator("table.steps tbody tr")
    assert rows.count() == len(results["steps"])
    shown = {r.get_attribute("id")[5:]: r.locator(".v").inner_text() for r in rows.all()}
    assert shown == {s["id"]: s["verdict"] for s in results["steps"]}

    stale = page.locator("#step-stale_claim")
    assert "<script>window.__pwned = 1" in stale.inner_text()  # the note is shown as text
    assert stale.locator(".over").inner_text() == "OVERCLAIM"
    assert "not read in final" in stale.inner_text()
    captions = stale.locator("figcaption").all_inner_texts()
    assert "after · runner · final" in captions and "after · agent · stale.png" in captions
    assert page.locator("#step-add_product .over").count() == 0

    # thumbnails open full size in the page's own viewer (the images are data: URIs)
    srcs = stale.locator("img").evaluate_all("els => els.map(e => e.src)")
    assert srcs and all(s.startswith("data:image/png;base64,") for s in srcs)
    stale.locator("a.shot").first.click()
    assert page.locator("#lightbox").is_visible()
    assert page.locator("#lightbox img").evaluate("e => e.naturalWidth") == 1280
    page.keyboard.press("Escape")
    assert not page.locator("#lightbox").is_visible()

    # look at the verdict table the way a person would: a screenshot, read by OCR
    shot = tmp_path / "report-table.png"
    page.set_viewport_size({"width": 1400, "height": 900})
    table = page.locator("table.steps")
    table.screenshot(path=str(shot))
    if os.environ.get("REFEREE_KEEP_REPORT_SHOT"):
        shutil.copy(shot, os.environ["REFEREE_KEEP_REPORT_SHOT"])
    text = ocr_bytes(_without_thumbnails(shot, table), "tesseract").text()
    for word in ("PASS", "FAIL", "ERROR", "OVERCLAIM", "stale_claim", "add_product"):
        assert word in text, f"{word!r} not visible in the report screenshot: {text[:400]}"
    assert "<script>" in text.replace(" ", "")  # the agent's markup is visible as text


def test_report_does_not_embed_evidence_modified_after_capture(journey, browser, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(journey.run_dir, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    entry = next(f for f in manifest["files"] if f["step"] == "stale_claim" and f["capture"] == "final")
    (copy / entry["path"]).write_bytes((copy / entry["path"]).read_bytes() + b"tampered")
    assert hashlib.sha256((copy / entry["path"]).read_bytes()).hexdigest() != entry["sha256"]
    rc, out, err = run_cli(["report", copy], env=journey.env())
    assert rc == 0, err
    page, _ = _open(browser, copy / "report.html")
    stale = page.locator("#step-stale_claim")
    assert "after · runner · final: modified after capture" in stale.inner_text()
    assert stale.locator("img").count() == 1  # only the agent's (untouched) file is embedded
