"""`referee lint`: validators that also hold on a negative control (datasette's start page) are too loose."""

from __future__ import annotations

import json

import yaml

from tests.conftest import base_cli_env, run_cli


def _plan(tmp_path, validators, *, script=None, controls=()):
    step = {"id": "open_products", "do": "Open the products table.", "validators": validators}
    if script is not None:
        step["script"] = script
    path = tmp_path / "plan.yaml"
    plan = {"name": "lint-me", "controls": [str(c) for c in controls], "steps": [step]}
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    return path


def test_lint_flags_a_validator_that_matches_the_control_and_passes_a_specific_one(tmp_path, home_control):
    plan = _plan(tmp_path, [
        {"kind": "ocr_contains", "name": "loose", "text": "products"},  # the start page lists the table too
        {"kind": "ocr_contains", "name": "specific", "text": "Red Gadget"},  # only the table page shows a row
        {"kind": "ocr_not_contains", "name": "negative", "text": "Traceback"},
        {"kind": "aria_contains", "name": "aria_on_png", "role": "cell", "text": "Red Gadget"},
    ])
    cache = ["--cache-dir", tmp_path / "cache"]  # the second lint (the human form) reads the first one's OCR
    rc, out, err = run_cli(["lint", plan, "--control", home_control, *cache, "--json"], env=base_cli_env(),
                           timeout=120)
    assert rc == 1, err
    report = json.loads(out)
    assert [f["validator"] for f in report["loose"]] == ["loose"]
    assert "products" in report["loose"][0]["matched"]
    status = {c["validator"]: c["status"] for c in report["checks"]}
    assert status == {"loose": "loose", "specific": "specific", "negative": "negative", "aria_on_png": "not_applicable"}
    # the human form names the step, the validator, the control and the text it matched
    rc, out, err = run_cli(["lint", plan, "--control", home_control, *cache], env=base_cli_env(), timeout=120)
    assert rc == 1
    assert "TOO LOOSE open_products / loose on" in out and "matched 'products'" in out
    assert "ok        open_products / specific" in out
    # n/a pairs are one count line, not a row each
    assert "n/a       1 validator/control pair(s)" in out and "aria_on_png" not in out


def test_lint_passes_a_plan_whose_validators_only_the_right_screen_satisfies(tmp_path, home_control):
    plan = _plan(tmp_path, [{"kind": "ocr_contains", "text": "Red Gadget"},
                            {"kind": "ocr_contains", "engine": "rapidocr", "text": "Blue Widget"}],
                 controls=[home_control])  # `controls:` in the plan, no --control
    rc, out, err = run_cli(["lint", plan], env=base_cli_env(), timeout=120)
    assert rc == 0, out + err
    assert "0 too-loose validator finding(s)" in out and "TOO LOOSE" not in out


def test_lint_reports_a_broken_script_and_a_missing_control(tmp_path, home_control):
    plan = _plan(tmp_path, [{"kind": "ocr_contains", "text": "Red Gadget"}],
                 script=[{"goto": "/shop/products"}, {"click": {"role": "button", "text": "Apply"}}])
    rc, out, err = run_cli(["lint", plan, "--control", home_control], env=base_cli_env())
    assert rc == 1
    assert ("script item #2 (click): name exactly one of role, text, label, placeholder, selector "
            "(got role, text)") in out
    rc, out, err = run_cli(["lint", plan, "--control", tmp_path / "nope.png"], env=base_cli_env())
    assert rc == 2 and "control file not found" in err and len(err.strip().splitlines()) == 1


def test_lint_lines_never_carry_raw_bytes():
    """Binary evidence (a PNG read as text) and terminal escapes show as escapes on one line."""
    from referee.cli.screens_cmds import _shown

    shown = _shown(b"\x89PNG\r\n\x1a\n\x00\x00\rIHDR" + bytes(range(128, 160)) + b"\x1b[2J")
    assert shown.isprintable() and "\\x89PNG\\r\\n" in shown and "\x1b" not in shown
    assert len(_shown("x" * 10_000)) <= 160


def test_an_unreadable_control_is_a_one_line_error(tmp_path, home_control):
    """A zero-byte or truncated PNG given as a control exited 0 with every check against it "ok" (read as an
    empty snapshot); like a missing control, it is a usage error naming the file and the fix (exit 2)."""
    plan = _plan(tmp_path, [{"kind": "ocr_contains", "text": "Welcome"}, {"kind": "aria_contains", "text": "Welcome"}])
    (tmp_path / "zero.png").write_bytes(b"")
    (tmp_path / "trunc.png").write_bytes(home_control.read_bytes()[:200])
    for name, why in (("zero.png", "control is empty"), ("trunc.png", "is not a readable image")):
        rc, out, err = run_cli(["lint", plan, "--control", tmp_path / name], env=base_cli_env(), timeout=120)
        assert rc == 2 and out == "", (name, out, err)
        (line,) = err.strip().splitlines()
        assert line.startswith(f"referee: error: {tmp_path / name}: ") and why in line, line
        assert "; pass " in line or "; save the screenshot again" in line, line


# last in the file: the module's `browser` holds this process's asyncio loop until the module ends, and the
# `referee lint` calls above run in this process only while none runs (tests.support.incli.process_needed)
def test_lint_with_dom_and_aria_controls(tmp_path, ds_server, browser):
    """Structural controls work the same way: the start page's DOM and aria snapshot."""
    browser.page.goto(ds_server + "/", wait_until="load")
    dom = tmp_path / "home.html"
    dom.write_text(browser.page.content())
    aria = tmp_path / "home.aria.yaml"
    aria.write_text(browser.page.locator("body").aria_snapshot())
    plan = _plan(tmp_path, [
        {"kind": "dom_contains", "name": "dom_loose", "text": "products"},
        {"kind": "dom_contains", "name": "dom_specific", "text": "Red Gadget"},
        {"kind": "aria_contains", "name": "aria_loose", "role": "link", "text": "products"},
        {"kind": "aria_contains", "name": "aria_specific", "role": "heading", "text": "products"},
    ])
    rc, out, err = run_cli(["lint", plan, "--control", dom, "--control", aria, "--json"], env=base_cli_env())
    assert rc == 1, err
    report = json.loads(out)
    loose = {(f["validator"], f["control"].rsplit("/", 1)[-1]) for f in report["loose"]}
    # the start page says "products" however it is looked at: in its DOM, and in its aria text
    assert loose == {("dom_loose", "home.html"), ("aria_loose", "home.aria.yaml")}
    status = {(c["validator"], c["control"].rsplit("/", 1)[-1]): c["status"] for c in report["checks"]}
    # each reads its own kind of snapshot only: dom_contains on an aria snapshot would match its role words
    assert status[("dom_loose", "home.aria.yaml")] == "not_applicable"
    assert status[("aria_loose", "home.html")] == "not_applicable"
    assert status[("dom_specific", "home.html")] == "specific"
    assert status[("aria_specific", "home.aria.yaml")] == "specific"  # the start page has no heading "products"
