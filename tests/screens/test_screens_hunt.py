"""Bugs a black-box tester found in the browser actor, the screen captures, the lint and the report.

Each test uses real Chromium (/usr/bin/chromium) and real servers on loopback, and failed on the code it
was written against.
"""

from __future__ import annotations

import json
import shlex
import sys
import zlib
from pathlib import Path

import pytest

from referee.runner.captures.base import CaptureContext, CaptureFailed
from referee.runner.captures.screens import AriaCapture, DomCapture, ScreenshotCapture
from tests.conftest import base_cli_env, run_cli
from tests.runner.runner_helpers import find_run_dirs, write_plan

_CLOSING_AGENT = '''
import json, os
from playwright.sync_api import sync_playwright
with sync_playwright() as p:
    page = p.chromium.connect_over_cdp(os.environ["REFEREE_CDP_URL"]).contexts[0].pages[0]
    page.goto(os.environ["PAGE_URL"])
    page.close()
json.dump({"pass": True, "note": "closed the tab"}, open(os.environ["REFEREE_CLAIM_FILE"], "w"))
'''


def _browser_run(tmp_path: Path, steps: list[dict], *, agent: str | None = None, env: dict | None = None,
                 timeout: float = 120) -> tuple[int, str, str, Path | None]:
    """`referee run` of a browser-actor plan (no app: the steps use absolute loopback URLs)."""
    actor: dict = {"kind": "browser", "headless": True, "env": env or {}}
    if agent is not None:
        (tmp_path / "agent.py").write_text(agent)
        actor["command"] = f"{shlex.quote(sys.executable)} {shlex.quote(str(tmp_path / 'agent.py'))}"
    plan = write_plan(tmp_path / "plan.yaml", {"name": "hunt", "actor": actor, "steps": steps})
    rc, out, err = run_cli(["run", str(plan), "--out", str(tmp_path / "out")], cwd=tmp_path, timeout=timeout)
    dirs = find_run_dirs(tmp_path / "out")
    return rc, out, err, (dirs[-1] if dirs else None)


def _results(run_dir: Path) -> dict[str, dict]:
    return {s["id"]: s for s in json.loads((run_dir / "results.json").read_text())["steps"]}


def test_a_page_the_agent_closed_is_replaced_before_the_captures(tmp_path, pages_server):
    """docs/screens.md: "if the agent closed it, a fresh page takes its place (and the screenshots show that)".
    The runner only noticed the close when a capture failed on it (TargetClosedError): the step was ERROR."""
    steps = [{"id": "close_it", "do": "open the page, then close the tab",
              "capture": [{"kind": "screenshot", "name": "shot"}],
              "validators": [{"kind": "dom_contains", "raw": True, "text": "<html"},
                             {"kind": "aria_contains", "text": "Static Screen Text", "name": "gone"}]}]
    rc, out, err, run_dir = _browser_run(tmp_path, steps, agent=_CLOSING_AGENT,
                                         env={"PAGE_URL": pages_server + "/"})
    assert run_dir is not None, err
    step = _results(run_dir)["close_it"]
    # the fresh page is blank: the DOM capture works, and the closed page's text is gone
    assert [v["status"] for v in step["validators"]] == ["PASS", "FAIL"], step["validators"]
    files = [f["path"] for f in json.loads((run_dir / "manifest.json").read_text())["files"]]
    assert "evidence/close_it/after/shot.png" in files and not any(p.endswith(".error.json") for p in files), files


def test_goto_honours_its_own_timeout_s(tmp_path, pages_server):
    """docs/screens.md: "Each action waits up to its own `timeout_s`". `goto: {url, timeout_s}` passed the check
    (even `timeout_s: 0`), was missing from the schema and `referee kinds`, and always waited 10 s."""
    bad = write_plan(tmp_path / "bad.yaml", {"name": "bad", "actor": {"kind": "browser"}, "steps": [
        {"id": "a", "do": "x", "script": [{"goto": {"url": "/", "timeout_s": 0}}],
         "validators": [{"kind": "dom_contains", "text": "hi"}]}]})
    rc, out, err = run_cli(["check", str(bad)], cwd=tmp_path)
    assert rc == 2 and "script item #1 (goto): a timeout must be a number of seconds above 0" in err, err
    rc, out, err = run_cli(["kinds", "--json"], cwd=tmp_path)
    assert json.loads(out)["script actions"]["goto"]["params"] == ["url", "timeout_s=None"]
    from referee.plan.schema import plan_schema

    (goto,) = [b for b in plan_schema()["$defs"]["ScriptAction"]["oneOf"] if b["title"] == "goto"]
    assert "timeout_s" in goto["properties"]["goto"]["anyOf"][0]["properties"]

    steps = [{"id": "slow", "do": "open a page that never finishes loading, give up after 1 s",
              "script": [{"goto": {"url": pages_server + "/slow", "timeout_s": 1}}],
              "capture": [{"kind": "dom", "name": "d", "timeout_s": 1}],
              "validators": [{"kind": "dom_contains", "evidence": "d", "raw": True, "text": "<html"}]}]
    rc, out, err, run_dir = _browser_run(tmp_path, steps)
    assert run_dir is not None, err
    rec = json.loads((run_dir / "manifest.json").read_text())["steps"]["slow"]
    assert "script item #1 (goto" in rec["actor_error"] and "Timeout 1000ms exceeded" in rec["actor_error"], rec


_CLAIMING_AGENT = '''
import json, os
print("AGENT STARTED")
json.dump({"pass": True, "note": "agent ran"}, open(os.environ["REFEREE_CLAIM_FILE"], "w"))
'''


def test_a_failing_script_action_still_lets_the_agent_act(tmp_path, pages_server):
    """docs/screens.md: "A step runs its `script:` first, then the agent command"; a failing action "decides
    nothing". The agent was silently never started, and the manifest then said "no claim file" as if it ran."""
    steps = [{"id": "a", "do": "a script with a failing action, then the agent",
              "script": [{"goto": pages_server + "/"}, {"click": {"text": "No such button", "timeout_s": 1}}],
              "validators": [{"kind": "dom_contains", "text": "Static Screen Text"}]}]
    rc, out, err, run_dir = _browser_run(tmp_path, steps, agent=_CLAIMING_AGENT)
    assert run_dir is not None, err
    rec = json.loads((run_dir / "manifest.json").read_text())["steps"]["a"]
    assert rec["actor_exit"] == 0, rec
    assert rec["actor_error"].startswith("script item #2 (click text='No such button', timeout_s=1.0) failed: ")
    assert "no claim" not in rec["actor_error"], rec
    assert "AGENT STARTED" in (run_dir / "agent" / "a" / "stdout.txt").read_text()
    step = _results(run_dir)["a"]
    assert step["verdict"] == "PASS" and step["claim"]["pass"] is True, step


def test_the_runners_own_captures_can_be_named_as_evidence(tmp_path, pages_server):
    """`_screen`, `_aria` and `_dom` are the runner's after-step captures (every OCR reason and the lint name
    `_screen`). Named explicitly they were never taken: the check warned (or, with another step using the
    default, said "'_screen' is a capture of step 'b'") and the run was ERROR "evidence '_screen' ... not found"."""
    two = write_plan(tmp_path / "two.yaml", {"name": "two", "actor": {"kind": "browser"}, "steps": [
        {"id": "a", "do": "x", "validators": [{"kind": "ocr_contains", "evidence": "_screen", "text": "x"}]},
        {"id": "b", "do": "x", "validators": [{"kind": "ocr_contains", "text": "x"}]}]})
    rc, out, err = run_cli(["check", str(two)], cwd=tmp_path)
    assert rc == 0 and "warning" not in err and "_screen" not in err, err
    steps = [{"id": "a", "do": "open the page", "script": [{"goto": pages_server + "/"}],
              "validators": [{"kind": "ocr_contains", "evidence": ["_screen"], "text": "Static Screen Text"},
                             {"kind": "aria_contains", "evidence": "_aria", "role": "heading",
                              "text": "Static Screen Text"},
                             {"kind": "dom_contains", "evidence": ["_dom"], "text": "Static Screen Text",
                              "require_change": True}]}]
    rc, out, err, run_dir = _browser_run(tmp_path, steps)
    assert run_dir is not None, err
    step = _results(run_dir)["a"]
    assert [v["status"] for v in step["validators"]] == ["PASS", "PASS", "PASS"], step["validators"]
    files = {f["path"] for f in json.loads((run_dir / "manifest.json").read_text())["files"]}
    assert {"evidence/a/after/_screen.png", "evidence/a/after/_dom.html", "evidence/a/before/_dom.html"} <= files


def test_a_bad_referee_chromium_is_named_not_replaced(tmp_path, pages_server):
    """REFEREE_CHROMIUM naming a missing file was silently replaced by /usr/bin/chromium (the run PASSed), and
    a file that is not an executable Chromium failed with "check that /usr/bin/chromium runs"."""
    not_exec = tmp_path / "chromium-copy"
    not_exec.write_text("not a browser")
    fake = tmp_path / "fake-chromium"
    fake.write_text("#!/bin/sh\nexit 3\n")
    fake.chmod(0o755)
    steps = [{"id": "a", "do": "open", "script": [{"goto": pages_server + "/"}],
              "validators": [{"kind": "dom_contains", "text": "Static Screen Text"}]}]
    plan = write_plan(tmp_path / "plan.yaml", {"name": "chrome", "actor": {"kind": "browser"}, "steps": steps})
    for value, why in ((tmp_path / "missing", "does not exist"), (not_exec, "is not an executable file"),
                       (fake, None)):
        env = {**base_cli_env(), "REFEREE_CHROMIUM": str(value)}
        out_dir = tmp_path / f"out-{value.name}"
        rc, out, err = run_cli(["run", str(plan), "--out", str(out_dir)], cwd=tmp_path, env=env)
        said = "".join((out + err).split())  # the console wraps long lines, even inside a path
        assert rc != 0 and "1PASS·" not in said, said
        if why is not None:  # found before the run: one line, and no run directory
            assert err.strip() == (f"referee: error: REFEREE_CHROMIUM={value} {why}; point REFEREE_CHROMIUM at a "
                                   "Chromium binary, or unset it to use /usr/bin/chromium"), err
            assert not out_dir.exists()
        else:
            assert f"cannotstartChromiumfromREFEREE_CHROMIUM={value}:" in said, said
            assert "unsetittouse/usr/bin/chromium" in said and "checkthat/usr/bin/chromium" not in said, said


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG that says it is width x height (1-bit grey) and holds no pixel data: what a decompression bomb
    looks like to anything that reads its header."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return len(body).to_bytes(4, "big") + kind + body + zlib.crc32(kind + body).to_bytes(4, "big")

    ihdr = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([1, 0, 0, 0, 0])
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")


def test_an_image_the_grader_refused_as_a_bomb_is_not_embedded_in_the_report(tmp_path):
    """A 30000x30000 PNG the grader refused (DecompressionBombError: ERROR) was still embedded in report.html as
    a data: URI, for the browser to decode (gigabytes); it is named as refused and linked, like a too-big image."""
    (tmp_path / "bomb.png").write_bytes(_png_header_only(30000, 30000))
    agent = (f"cp {shlex.quote(str(tmp_path / 'bomb.png'))} \"$REFEREE_AGENT_DIR/bomb.png\" && "
             "printf '{\"pass\": true}' > \"$REFEREE_CLAIM_FILE\"")
    plan = write_plan(tmp_path / "plan.yaml", {"name": "bomb", "actor": {"kind": "command", "command": agent},
                                               "steps": [{"id": "bomb", "do": "save a screenshot", "validators": [
                                                   {"kind": "ocr_contains", "evidence": "bomb.png", "text": "x"}]}]})
    rc, out, err = run_cli(["run", str(plan), "--out", str(tmp_path / "out")], cwd=tmp_path)
    (run_dir,) = find_run_dirs(tmp_path / "out")
    (check,) = _results(run_dir)["bomb"]["validators"]
    assert check["status"] == "ERROR" and "decompression bomb" in check["reason"], check
    html = (run_dir / "report.html").read_text()
    assert "data:image/png" not in html
    assert "refused: 30000x30000 pixels, a decompression bomb (not embedded)" in html
    assert 'href="./agent/bomb/bomb.png"' in html


# last in the file: the module's `browser` holds this process's asyncio loop until the module ends, and the
# `referee` commands above run in this process only while none runs (tests.support.incli.process_needed)
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
