"""Agents that tamper with the grading while their step runs: the frozen plan, the OCR cache, a
daemon that edits evidence after the run, an in-process actor that patches the grader.

Each hostile step is set up to FAIL on its merits; the attack tries to turn it into a PASS.
Whatever isolation stops (or not), the run and a later `referee grade` must not say PASS.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from tests.security.conftest import Sec
from tests.security.sec_helpers import json_verdicts, kill_token, make_base, procs_with, remove_tree, sha256, wait_gone

DONE = "REAL-WORK-DONE"


def _grade(sec, run_dir):
    rc, out, err, dt = sec.cli("grade", run_dir, "--json", timeout=60)
    assert rc is not None, f"`referee grade` hung ({dt:.0f} s): {err[-2000:]}"
    assert "Traceback" not in err, err
    return rc, json_verdicts(out), out + err


def _honest_step(sid: str = "honest") -> dict:
    return {"id": sid, "do": f"Do the work.\nSAVE result.txt {DONE}",
            "validators": [{"kind": "text_contains", "evidence": "result.txt", "text": DONE}]}


# ------------------------------------------------------------------ the frozen plan


def test_agent_rewriting_the_frozen_plan_gets_no_pass(sec):
    plan = {"name": "rewrite-plan", "steps": [
        _honest_step(),
        {"id": "work", "do": "Do the real work (this agent will not).\nSAVE result.txt nothing-was-done\n"
                             "REWRITE_PLAN MUST-SHOW-THIS nothing-was-done",
         "validators": [{"kind": "text_contains", "evidence": "result.txt", "text": "MUST-SHOW-THIS"}]},
    ]}
    r = sec.run(plan)
    assert not r.hung, r.hang_message()
    assert r.verdict("honest") == "PASS", "the agent could not even do honest work:\n" + r.explain()
    assert r.verdict("work") != "PASS", "the agent rewrote plan.yaml and the grader used its plan:\n" + r.explain()
    assert r.rc == 1, r.explain()
    rc, steps, text = _grade(sec, r.run_dir)
    assert rc != 0 and steps is not None and steps["work"]["verdict"] != "PASS", text[-3000:]


# ------------------------------------------------------------------ the OCR cache


def _text_png(folder: Path) -> Path:
    """A screenshot that really shows 'Payment received 4711' (tesseract reads it)."""
    if shutil.which("tesseract") is None:
        pytest.skip("tesseract-ocr is not installed (apt-get install tesseract-ocr tesseract-ocr-eng)")
    Image = pytest.importorskip("PIL.Image")
    ImageDraw = pytest.importorskip("PIL.ImageDraw")
    ImageFont = pytest.importorskip("PIL.ImageFont")
    im = Image.new("RGB", (900, 200), "white")
    try:
        font = ImageFont.load_default(size=48)
    except TypeError:  # an old Pillow without the scalable default font
        font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 48)
    ImageDraw.Draw(im).text((30, 60), "Payment received 4711", fill="black", font=font)
    path = folder / "text.png"
    im.save(path)
    path.chmod(0o644)
    return path


def _ocr_step(do: str) -> dict:
    return {"id": "shot", "do": do,
            "validators": [{"kind": "ocr_contains", "evidence": "shot.png", "text": "Payment received"}]}


@pytest.fixture(scope="module")
def ocr_template():
    """An OCR cache that says the text is there: the one an honest run leaves (the attacker's template).
    One calibration run for the tests of this module, which only read it (a world-readable file)."""
    cal_sec = Sec(make_base())
    try:
        text_png = _text_png(cal_sec.base)
        cal = cal_sec.run({"name": "ocr-calibration", "steps": [_ocr_step(f"COPY {text_png} shot.png")]})
        assert not cal.hung, cal.hang_message()
        assert cal.verdict("shot") == "PASS", "OCR does not read the calibration image:\n" + cal.explain()
        cache = cal.run_dir / "cache" / "ocr.json"
        if cache.is_file():
            template = json.loads(cache.read_text())
        else:  # the cache left the run directory: forge one in the format runs used to keep there
            template = {f"tesseract:{sha256(text_png)}": {
                "engine": "tesseract", "width": 900, "height": 200, "ms": 1.0,
                "lines": [{"text": "Payment received 4711", "confidence": 0.95, "box": [35, 72, 494, 45]}]}}
        path = cal_sec.base / "ocr-template.json"
        path.write_text(json.dumps(template))
        path.chmod(0o644)
        yield path
    finally:
        kill_token(cal_sec.token)
        remove_tree(cal_sec.base)


def test_agent_forging_the_ocr_cache_does_not_make_a_blank_screenshot_pass(sec, ocr_template):
    template = ocr_template
    r = sec.run({"name": "ocr-forge", "steps": [_ocr_step(f"BLANK_PNG shot.png\nFORGE_OCR {template} shot.png")]})
    assert not r.hung, r.hang_message()
    assert r.verdict("shot") != "PASS", "a blank screenshot 'read' the text from the agent's cache:\n" + r.explain()
    assert r.rc == 1
    rc, steps, text = _grade(sec, r.run_dir)
    assert rc != 0 and steps is not None and steps["shot"]["verdict"] != "PASS", text[-3000:]


def test_ocr_cache_planted_in_a_finished_run_does_not_make_grade_pass(sec, ocr_template):
    template = json.loads(ocr_template.read_text())
    r = sec.run({"name": "ocr-blank", "steps": [_ocr_step("BLANK_PNG shot.png")]})
    assert not r.hung, r.hang_message()
    assert r.verdict("shot") == "FAIL", r.explain()
    blank = r.run_dir / "agent" / "shot" / "shot.png"
    assert blank.is_file(), r.explain()
    forged = {key.rsplit(":", 1)[0] + ":" + sha256(blank): value for key, value in template.items()}
    (r.run_dir / "cache").mkdir(exist_ok=True)
    (r.run_dir / "cache" / "ocr.json").write_text(json.dumps(forged))
    rc, steps, text = _grade(sec, r.run_dir)
    assert steps is not None and steps["shot"]["verdict"] != "PASS", \
        "`referee grade` believed an OCR cache planted in the run directory:\n" + text[-3000:]
    assert rc != 0


# ------------------------------------------------------------------ a daemon that outlives its step


def _daemon_plan(token: str) -> dict:
    return {"name": "daemon", "steps": [
        {"id": "work", "do": "Do the real work (this agent will not).\nSAVE result.txt nothing-was-done\n"
                             f"DAEMON_TAMPER {token} agent/work/result.txt {DONE}",
         "validators": [{"kind": "text_contains", "evidence": "result.txt", "text": DONE}]},
    ]}


def test_double_forked_daemon_is_gone_when_the_run_ends(sec):
    r = sec.run(_daemon_plan(sec.token))
    assert not r.hung, r.hang_message()
    assert r.verdict("work") == "FAIL", r.explain()
    alive = wait_gone(sec.token, timeout=3)
    assert not alive, f"the agent's double-forked daemon outlived the run: pids {alive}"


def test_daemon_editing_evidence_and_manifest_after_the_run_gets_no_pass_from_grade(sec):
    r = sec.run(_daemon_plan(sec.token))
    assert not r.hung, r.hang_message()
    assert r.verdict("work") == "FAIL", r.explain()
    marker = r.run_dir.parent / f"{sec.token}.tampered"
    deadline = time.monotonic() + 15
    while not marker.exists() and procs_with(sec.token) and time.monotonic() < deadline:
        time.sleep(0.1)  # whatever the daemon could do, it has done
    rc, steps, text = _grade(sec, r.run_dir)
    assert steps is not None and steps["work"]["verdict"] != "PASS", \
        "a daemon rewrote the evidence and its hash after the run, and grade believed it:\n" + text[-3000:]
    assert rc != 0


# ------------------------------------------------------------------ the in-process Python actor


def test_python_actor_patching_the_grader_gets_no_pass(sec):
    env = dict(sec.env)
    env["PYTHONPATH"] = f"{sec.base / 'agents'}:{env.get('PYTHONPATH', '')}"
    plan = {"name": "py-patcher", "actor": {"kind": "python", "target": "evil_actor:GraderPatcher"},
            "steps": [{"id": "work", "do": "Do the real work (this actor will not).",
                       "validators": [{"kind": "text_contains", "evidence": "result.txt", "text": DONE}]}]}
    r = sec.run(plan, agent=None, env=env)
    assert not r.hung, r.hang_message()
    assert "Traceback" not in r.stderr, r.stderr
    assert r.rc != 0, "the actor patched the grader in the runner's process: exit 0\n" + r.explain()
    if r.run_dir is not None and (r.run_dir / "results.json").exists():
        assert r.verdict("work") != "PASS", r.explain()
        rc, steps, text = _grade(sec, r.run_dir)  # a fresh process: the evidence does not hold
        assert steps is not None and steps["work"]["verdict"] != "PASS", text[-3000:]
