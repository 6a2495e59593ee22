"""Acceptance: a browser journey over datasette through `referee run` / `referee grade`
(real Chromium, Tesseract, RapidOCR)."""

from __future__ import annotations

import json
import shutil

from tests.conftest import run_cli


def test_run_exit_code_and_verdicts(journey):
    """The scripted and agent-driven steps get the verdicts their persisted evidence supports."""
    assert journey.rc == 1, journey.err  # some steps FAIL by design
    verdicts = {s["id"]: s["verdict"] for s in journey.results()["steps"]}
    assert verdicts == {"open_products": "PASS", "products_again": "FAIL", "wrong_checks": "FAIL",
                        "stale_claim": "FAIL", "broken_shot": "ERROR", "add_product": "PASS",
                        "filter_red": "PASS", "bad_script": "PASS"}


def test_script_actions_by_role_text_and_selector(journey):
    """goto, click by role, select by selector, fill and press by role, wait_for: the filtered table shows one row."""
    step = journey.step("filter_red")
    assert step["verdict"] == "PASS", step
    assert [v["status"] for v in step["validators"]] == ["PASS"] * 4
    manifest = json.loads((journey.run_dir / "manifest.json").read_text())
    for sid in ("filter_red", "products_again"):
        rec = manifest["steps"][sid]
        assert rec["actor_exit"] == 0 and "script item" not in (rec["actor_error"] or "")


def test_a_failing_script_is_recorded_and_decides_nothing(journey):
    """The actor's failure goes into the manifest; the agent still acts (it exits 0, claiming nothing), and the
    verdict still comes from the evidence alone."""
    manifest = json.loads((journey.run_dir / "manifest.json").read_text())
    rec = manifest["steps"]["bad_script"]
    assert rec["actor_exit"] == 0
    assert rec["actor_error"].startswith("script item #2 (click role='button', name='Delete everything'")


def test_runner_takes_screenshot_aria_and_dom_into_the_manifest(journey):
    manifest = json.loads((journey.run_dir / "manifest.json").read_text())
    mine = {(f["step"], f["phase"], f["capture"]): f for f in manifest["files"] if f["captured_by"] == "runner"}
    shot = mine[("open_products", "after", "_screen")]
    assert shot["path"].endswith("_screen.png") and shot["kind"] == "screenshot"
    assert (journey.run_dir / shot["path"]).read_bytes().startswith(b"\x89PNG")
    # require_change made the runner screenshot the page before the step too
    assert ("open_products", "before", "_screen") in mine
    aria = (journey.run_dir / mine[("open_products", "after", "tree")]["path"]).read_text()
    assert '- cell "Red Gadget"' in aria and '- columnheader "name' in aria
    dom = (journey.run_dir / mine[("open_products", "after", "page")]["path"]).read_text()
    assert "<table" in dom and "Blue Widget" in dom
    for f in manifest["files"]:
        assert len(f["sha256"]) == 64 and f["size"] > 0


def test_ocr_aria_dom_validators_hold_on_the_right_screen(journey):
    step = journey.step("open_products")
    assert [v["status"] for v in step["validators"]] == ["PASS"] * 4
    ocr = step["validators"][0]
    assert "'Red Gadget' read in _screen" in ocr["reason"] and "not before the step" in ocr["reason"]
    assert "red gadget" in ocr["matched"]
    assert step["validators"][1]["reason"].startswith("'Blue Widget' in tree")


def test_validators_not_holding(journey):
    """Absent text, the wrong role, and a negative check over present text all FAIL; the true ones hold."""
    status = {v["name"]: (v["status"], v["reason"]) for v in journey.step("wrong_checks")["validators"]}
    assert status["ocr_absent"][0] == "FAIL" and "not read in _screen" in status["ocr_absent"][1]
    assert "tesseract read:" in status["ocr_absent"][1]  # says what it did read
    assert status["aria_wrong_role"][0] == "FAIL" and "in a heading not in _aria" in status["aria_wrong_role"][1]
    assert status["ocr_not_present_but_is"][0] == "FAIL" and "read in _screen" in status["ocr_not_present_but_is"][1]
    assert status["ocr_not_holds"][0] == "PASS"
    assert status["aria_holds"][0] == "PASS"


def test_require_change_catches_a_pre_existing_state(journey):
    v = journey.step("products_again")["validators"][0]
    assert v["status"] == "FAIL"
    assert v["reason"].startswith("already true before the step")


def test_stale_agent_screenshot_does_not_pass_over_the_runner_screenshot(journey):
    """The agent saved a screenshot of a fake banner, then the page showed the truth; the runner's shot wins."""
    step = journey.step("stale_claim")
    by_name = {v["name"]: v for v in step["validators"]}
    assert by_name["agent_shot_alone"]["status"] == "PASS"  # the stale file does show the text...
    both = by_name["agent_and_runner"]
    assert both["status"] == "FAIL"  # ...but the runner's own screenshot, taken after the step, does not
    assert "not read in final" in both["reason"]
    assert step["verdict"] == "FAIL" and step["claim"]["pass"] is True and step["overclaim"] is True


def test_unreadable_image_is_error_not_fail(journey):
    step = journey.step("broken_shot")
    assert step["verdict"] == "ERROR"
    assert "not a readable image" in step["validators"][0]["reason"]


def test_agent_over_cdp_changes_the_runners_page(journey):
    """The external agent drove the runner's page over REFEREE_CDP_URL; both engines read its result."""
    step = journey.step("add_product")
    assert step["verdict"] == "PASS", step
    reasons = {v["name"]: v["reason"] for v in step["validators"]}
    assert "not before the step" in reasons["ocr_contains#0"]
    assert "greenlantern" in reasons["rapid"]  # RapidOCR runs words together; matching ignores spaces for it


def test_run_lints_first_and_warns_about_the_loose_validator(journey):
    assert "too loose" in journey.err and "loose_products" in journey.err
    assert "open_products" in journey.err


def test_regrading_reuses_the_ocr_cache(journey, tmp_path):
    """The run OCR'd each image once; re-grading (twice) OCRs nothing and decides the same bytes."""
    first = journey.ocr_trace.read_text().splitlines()
    calls = [(json.loads(line)["engine"], json.loads(line)["sha256"]) for line in first]
    assert len(calls) >= 5 and {e for e, _ in calls} == {"tesseract", "rapidocr"}
    assert len(calls) == len(set(calls)), "an image was OCR'd twice in one run"
    assert (journey.run_dir / "cache" / "ocr.json").is_file()
    results_at_run = (journey.run_dir / "results.json").read_bytes()
    copy = tmp_path / "run"  # `grade` writes into the run directory: the journey's is only read (shared)
    shutil.copytree(journey.run_dir, copy)
    trace = tmp_path / "regrade-calls.jsonl"
    env = {**journey.env(), "REFEREE_OCR_TRACE": str(trace)}
    for _ in range(2):
        rc, out, err = run_cli(["grade", str(copy), "--json"], env=env, timeout=180)
        assert rc == 1, err
        assert not trace.exists() or trace.read_text() == ""  # measured: zero OCR calls
        assert (copy / "results.json").read_bytes() == results_at_run


def test_grading_without_the_cache_ocrs_again_and_agrees(journey, tmp_path):
    """The cache is only a cache: drop one image's entry and grading OCRs exactly that image, deciding the same."""
    copy = tmp_path / "run"
    shutil.copytree(journey.run_dir, copy)
    cache = json.loads((copy / "cache" / "ocr.json").read_text())
    dropped = sorted(k for k in cache if k.startswith("tesseract"))[0]
    (copy / "cache" / "ocr.json").write_text(json.dumps({k: v for k, v in cache.items() if k != dropped}))
    trace = tmp_path / "calls.jsonl"
    rc, out, err = run_cli(["grade", str(copy)], env={**journey.env(), "REFEREE_OCR_TRACE": str(trace)},
                             timeout=180)
    assert rc == 1, err
    calls = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [(c["engine"], c["sha256"]) for c in calls] == [("tesseract", dropped.rsplit(":", 1)[1])]
    assert (copy / "results.json").read_bytes() == (journey.run_dir / "results.json").read_bytes()
    assert dropped in json.loads((copy / "cache" / "ocr.json").read_text())  # and it is cached again
