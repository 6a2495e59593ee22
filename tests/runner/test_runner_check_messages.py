"""`referee check` names the field and the fix of a wrongly typed value, and keeps each error one line whatever
the plan's file is called (cases a black-box tester found)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli

TYPES = """steps:
  - id: a
    do: x
    validators:
      - kind: http_status_eq
        url: http://127.0.0.1:9/x
        expected: "abc"
      - kind: text_contains
        evidence: 5
        text: [1, 2]
"""


def _check(tmp_path, cli_env, name: str, text: str, *extra: str) -> tuple[int, str, str]:
    path = tmp_path / name
    path.write_text(text)
    return run_cli(["check", *extra, str(path)], cwd=tmp_path, env=cli_env)


def test_a_wrongly_typed_field_is_named_once_with_a_fix(tmp_path, cli_env):
    rc, out, err = _check(tmp_path, cli_env, "types.yaml", TYPES)
    assert rc == 2
    lines = err.splitlines()
    assert len(lines) == 3, err  # `evidence` may be a text or a list: one error, not one per form
    evidence = next(ln for ln in lines if ":9:" in ln)
    assert "invalid 'evidence'" in evidence and "list[str]" not in evidence, evidence
    assert "a valid string" in evidence and "a valid list" in evidence, evidence
    assert "types.yaml:7:19: invalid 'expected'" in err and "give a whole number" in err
    rc, out, _ = _check(tmp_path, cli_env, "types.yaml", TYPES, "--json")
    errors = json.loads(out)[str(tmp_path / "types.yaml")]["errors"]
    assert [e["fix"] for e in errors] == ["give a whole number",
                                          "give a text (quote it if YAML reads it as something else)",
                                          "give a text (quote it if YAML reads it as something else)"], errors


def test_steps_that_are_no_list_get_a_fix(tmp_path, cli_env):
    rc, _, err = _check(tmp_path, cli_env, "p.yaml", "steps: 5\n")
    assert rc == 2 and err.strip().endswith("give a list, e.g. [a, b] or one '- item' per line"), err


def test_a_newline_or_escape_in_the_file_name_cannot_split_or_colour_a_line(tmp_path, cli_env):
    rc, out, err = _check(tmp_path, cli_env, "bad\nna\x1bme.yaml", TYPES)
    assert rc == 2
    assert len(err.splitlines()) == 3 and all(ln.startswith("referee: error: ") for ln in err.splitlines()), err
    assert "bad\\x0ana\\x1bme.yaml:7:19:" in err and "\x1b" not in err + out
    assert out.splitlines() == [f"{tmp_path}/bad\\x0ana\\x1bme.yaml: 3 errors"], out
    ok = "steps:\n  - id: a\n    do: x\n    validators: [{kind: text_contains, evidence: shot, text: hi}]\n"
    rc, out, err = _check(tmp_path, cli_env, "w\narn.yaml", ok)
    assert rc == 0 and len(out.splitlines()) == 2 and "\\x0aarn.yaml:4:" in out.splitlines()[0], out


@pytest.mark.parametrize("name", ["home", "screen", "bigshot"])
def test_evidence_naming_a_captures_stdout_as_file_is_no_near_miss(tmp_path, cli_env, name):
    """`evidence: screen.png` names the file `stdout_as: screen.png` writes; it was taken for a near miss of the
    capture `screen` once the name had 6 letters or more (a black-box tester's case)."""
    plan = ("steps:\n  - id: s\n    do: x\n"
            f"    capture: [{{kind: command, name: {name}, command: 'cat shot.png', stdout_as: {name}.png}}]\n"
            f"    validators: [{{kind: ocr_contains, evidence: {name}.png, text: Order}}]\n")
    rc, out, err = _check(tmp_path, cli_env, "p.yaml", plan)
    assert rc == 0 and not err, err


def test_a_bad_pattern_or_json_path_gets_a_fix(tmp_path, cli_env):
    plan = ("steps:\n  - id: s\n    do: x\n    validators:\n"
            "      - {kind: regex_match, evidence: a.txt, pattern: 'a(('}\n"
            "      - {kind: json_path_eq, evidence: a.json, path: '$..[', expected: 1}\n")
    rc, out, _ = _check(tmp_path, cli_env, "p.yaml", plan, "--json")
    fixes = [e["fix"] for e in json.loads(out)[str(tmp_path / "p.yaml")]["errors"]]
    assert fixes == ["write a Python regular expression (the `re` module's syntax)",
                     "write a JSON path such as $.items[0].name"], fixes


def test_a_plan_of_no_step_is_a_plan_error_not_an_exit_0_run(tmp_path, cli_env):
    """`steps: []` checked ok and ran as '0 PASS ... exit 0', as good as all PASS, even under --strict."""
    (tmp_path / "empty.yaml").write_text("version: 1\nname: empty\nsteps: []\n")
    for args in (["check", "empty.yaml"], ["run", "empty.yaml", "--agent", "true", "--strict"]):
        rc, out, err = run_cli(args, cwd=tmp_path, env=cli_env)
        assert rc == 2 and "empty.yaml:3:" in err and "at least one step" in err, (args, out, err)
    assert not (tmp_path / "runs").exists()


def test_a_plan_that_is_not_utf8_names_the_byte_and_the_fix(tmp_path, cli_env):
    (tmp_path / "bad.yaml").write_bytes(b"\xff\xfe bad bytes\n")
    rc, out, err = run_cli(["run", "bad.yaml", "--agent", "true"], cwd=tmp_path, env=cli_env)
    assert rc == 2 and err.count("\n") == 1, err
    assert "bad.yaml: cannot read plan: it is not UTF-8 text" in err and "save the plan as UTF-8" in err, err


def test_aria_contains_on_a_dom_capture_and_dom_contains_on_an_aria_one_are_plan_errors(tmp_path, cli_env):
    """aria_contains on a dom capture searched the raw HTML (a <title>, display:none text, attributes: PASS), and
    dom_contains on an aria snapshot matched its role words ('textbox'), as the black-box screens test showed."""
    plan = {"name": "kinds", "actor": {"kind": "browser"}, "steps": [{
        "id": "s", "do": "x", "capture": [{"kind": "dom", "name": "page"}, {"kind": "aria", "name": "ax"}],
        "validators": [{"kind": "aria_contains", "evidence": "page", "text": "Order confirmed"},
                       {"kind": "dom_contains", "evidence": "ax", "text": "textbox"},
                       {"kind": "aria_contains", "evidence": "ax", "text": "fine"},
                       {"kind": "dom_contains", "evidence": "page", "text": "fine"}]}]}
    (tmp_path / "p.yaml").write_text(json.dumps(plan))
    rc, out, err = run_cli(["check", "p.yaml", "--json"], cwd=tmp_path, env=cli_env)
    assert rc == 2, out + err
    messages = [e["message"] for e in json.loads(out)["p.yaml"]["errors"]]
    assert any("evidence 'page' is a dom capture, and aria_contains reads an aria capture" in m for m in messages)
    assert any("evidence 'ax' is an aria capture, and dom_contains reads a dom capture" in m for m in messages)
    assert len(messages) == 2, messages  # the matching pairs are fine


def test_the_grader_refuses_a_screen_capture_of_the_wrong_kind_even_if_a_plan_got_past_check():
    from types import SimpleNamespace

    import pytest as _pytest

    from referee.errors import EvidenceError
    from referee.validators.screens import _text_evidence

    class View:
        def entry(self, ref):
            return SimpleNamespace(captured_by="runner", kind="dom")

        def read_bytes(self, ref):
            return b"<html><title>Order confirmed</title></html>"

    with _pytest.raises(EvidenceError, match="is a dom capture, not an accessibility snapshot"):
        _text_evidence(View(), "page", "an accessibility snapshot", "aria")
    with _pytest.raises(EvidenceError, match="is a dom capture, not HTML; name an aria capture"):
        _text_evidence(View(), "page", "HTML", "aria")  # the article fits the kind: never "a aria"
    assert "Order confirmed" in _text_evidence(View(), "page", "HTML", "dom")
