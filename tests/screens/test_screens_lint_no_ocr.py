"""`referee lint` without the [ocr] extra: an OCR check of a screenshot control is the one-line install hint
(exit 2), never an "n/a" pair in a report that says ok, nor a truncated PNG accepted (docs/screens.md)."""

from __future__ import annotations

import json

from PIL import Image

from tests.conftest import run_cli
from tests.support.noextras import OCR, env_without

HINT = "install with: pip install 'referee[ocr]'"


def _plan(tmp_path, validator: str) -> str:
    (tmp_path / "plan.yaml").write_text("name: p\nsteps:\n  - id: s\n    do: x\n    validators:\n"
                                        f"      - {validator}\n")
    return "plan.yaml"


def _controls(tmp_path) -> tuple[str, str]:
    Image.new("RGB", (40, 20), "white").save(tmp_path / "home.png")
    (tmp_path / "trunc.png").write_bytes((tmp_path / "home.png").read_bytes()[:60])
    return "home.png", "trunc.png"


def test_an_ocr_check_of_a_screenshot_without_the_extra_is_the_install_hint(tmp_path):
    env = env_without(tmp_path / "shim", *OCR)
    plan = _plan(tmp_path, "{kind: ocr_contains, evidence: [shot.png], text: hello}")
    for control in _controls(tmp_path):
        for json_flag in ([], ["--json"]):
            rc, out, err = run_cli(["lint", plan, "--control", control, *json_flag], cwd=tmp_path, env=env)
            assert rc == 2, (control, out, err)
            assert HINT in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
            assert '"ok": true' not in out and "n/a" not in out, out


def test_a_lint_that_reads_no_image_needs_no_extra(tmp_path):
    env = env_without(tmp_path / "shim", *OCR)
    plan = _plan(tmp_path, "{kind: aria_contains, role: cell, text: Red Gadget}")
    home, _ = _controls(tmp_path)
    rc, out, err = run_cli(["lint", plan, "--control", home, "--json"], cwd=tmp_path, env=env)
    assert rc == 0 and json.loads(out)["ok"] is True, err
