"""Plan loading and `referee check`: the seed shorthand loads, malformed plans give one-line errors.

Every user error: exit code 2, exactly one stderr line starting `referee: error:`, naming the file
(and, where there is one, the YAML line and column and the step id), never a traceback.
"""

from __future__ import annotations

import re
import sys
import textwrap

import pytest

from tests.runner.runner_helpers import assert_one_line_error, write_plan

SEED_MAPPING = """\
version: 1
name: chat-smoke
steps:
  - id: send_message
    do: |
      Open the chat for conv X, type "hello", tap send.
    capture:
      - {kind: http, name: last_reply, url: "http://127.0.0.1:9/api/conversations/X/last_reply"}
    validators:
      - kind: http_status_eq
        url: "http://127.0.0.1:9/api/conversations/X/last_reply"
        expected: 200
      - kind: text_contains
        evidence: [notes/reply.txt]
        text: hello
"""

SEED_BARE_LIST = """\
- id: send_message
  do: |
    Open the chat for conv X, type "hello", tap send.
  validators:
    - kind: http_status_eq
      url: "http://127.0.0.1:9/api/conversations/X/last_reply"
      expected: 200
- id: look
  do: Look around.
"""


@pytest.mark.parametrize("text", [SEED_MAPPING, SEED_BARE_LIST], ids=["mapping", "bare-list"])
def test_check_accepts_the_seed_format(tmp_path, referee_cli, text):
    write_plan(tmp_path / "plan.yaml", text)
    rc, out, err = referee_cli("check", "plan.yaml", cwd=tmp_path)
    assert rc == 0, err
    assert "Traceback" not in err


def test_check_validates_only_it_starts_nothing_and_writes_no_run(tmp_path, referee_cli):
    marker = tmp_path / "app-was-started"
    agent_marker = tmp_path / "agent-was-started"
    plan = {
        "name": "nostart",
        "app": {"start": f"{sys.executable} -c \"open('{marker}', 'w').write('x')\" {{port}}",
                "url": "http://127.0.0.1:{port}", "ready": "/health", "ready_timeout_s": 3},
        "actor": {"kind": "command", "command": f"{sys.executable} -c \"open('{agent_marker}', 'w').write('x')\""},
        "steps": [{"id": "s1", "do": "x",
                   "validators": [{"kind": "http_status_eq", "url": "/health", "expected": 200}]}],
    }
    write_plan(tmp_path / "plan.yaml", plan)
    rc, out, err = referee_cli("check", "plan.yaml", cwd=tmp_path, timeout=30)
    assert rc == 0, err
    assert not marker.exists(), "`referee check` started the app"
    assert not agent_marker.exists(), "`referee check` ran the agent"
    assert not (tmp_path / "runs").exists(), "`referee check` wrote a run directory"


TYPO_PLAN = """\
name: typo
steps:
  - id: first
    do: nothing
    validators:
      - kind: text_contains
        evidence: a.txt
        text: hi
  - id: second
    do: nothing
    validators:
      - kind: http_staus_eq
        url: "http://127.0.0.1:9/health"
        expected: 200
"""


def test_unknown_validator_kind_names_file_line_column_step_and_suggests(tmp_path, referee_cli):
    write_plan(tmp_path / "plan.yaml", TYPO_PLAN)
    rc, out, err = referee_cli("check", "plan.yaml", cwd=tmp_path)
    line = assert_one_line_error(rc, out, err)
    # line 12; column 9 (the validator mapping / its `kind` key) or 15 (the value)
    assert re.search(r"plan\.yaml:12:(9|15)\b", line), line
    assert "second" in line, f"the step id is not named: {line}"
    assert "http_staus_eq" in line and "did you mean 'http_status_eq'" in line, line
    assert re.search(r"known (\w+ )?kinds", line), line
    assert "http_body_contains" in line and "sql_row_present" in line, line


def test_run_refuses_a_malformed_plan_before_starting_anything(tmp_path, referee_cli):
    write_plan(tmp_path / "plan.yaml", TYPO_PLAN)
    rc, out, err = referee_cli("run", "plan.yaml", "--agent", "true", "--out", "out", cwd=tmp_path)
    line = assert_one_line_error(rc, out, err)
    assert "plan.yaml:12:" in line, line
    assert not any((tmp_path / "out").glob("*/*")), "a run directory was created for a plan that does not load"


BAD_PLANS = {
    "yaml-syntax": ("steps:\n  - id: a\n    do: [unclosed\n", ["plan.yaml:"]),
    "empty-file": ("", ["plan.yaml"]),
    "scalar-document": ("just some words\n", ["plan.yaml"]),
    "no-steps": ("name: nothing\n", ["plan.yaml", "steps"]),
    "unknown-top-level-key": ("name: x\nstepz:\n  - id: a\n", ["plan.yaml:2:", "stepz"]),
    "step-without-id": ("steps:\n  - do: something\n    validators: []\n", ["plan.yaml:2:", "id"]),
    "unknown-step-key": ("steps:\n  - id: a\n    vaildators: []\n", ["plan.yaml:3:", "vaildators", "'a'"]),
    "bad-step-id": ("steps:\n  - id: ../escape\n", ["plan.yaml:2:", "id"]),
    "duplicate-step-id": ("steps:\n  - {id: a, do: x}\n  - {id: b, do: x}\n  - {id: a, do: x}\n",
                          ["plan.yaml:4:", "duplicate", "'a'"]),
    "version-2": ("version: 2\nsteps:\n  - id: a\n    do: x\n", ["plan.yaml:1:", "version"]),
    "unknown-actor-kind": ("actor: {kind: robot}\nsteps:\n  - id: a\n    do: x\n", ["plan.yaml:1:", "kind", "command"]),
    "validator-missing-param": (
        "steps:\n  - id: a\n    validators:\n      - kind: text_contains\n        evidence: x.txt\n    do: x\n",
        ["plan.yaml:4:", "'a'", "text"]),
    "validator-bad-type": (
        "steps:\n  - id: a\n    validators:\n      - kind: http_status_eq\n        url: http://127.0.0.1:9/\n"
        "        expected: two hundred\n    do: x\n",
        ["plan.yaml:", "'a'", "expected"]),
    "validator-unknown-param": (
        "steps:\n  - id: a\n    validators:\n      - kind: text_contains\n        evidence: x.txt\n        text: hi\n"
        "        colour: red\n    do: x\n",
        ["plan.yaml:", "'a'", "colour"]),
    "validator-without-kind": (
        "steps:\n  - id: a\n    validators:\n      - text: hi\n    do: x\n", ["plan.yaml:4:", "'a'", "kind"]),
    "validators-not-a-list": (
        "steps:\n  - id: a\n    validators: {kind: file_exists, path: x}\n", ["plan.yaml:3:", "'a'"]),
    "unknown-capture-kind": (
        "steps:\n  - id: a\n    capture:\n      - {kind: htp, name: c, url: 'http://127.0.0.1:9/'}\n    do: x\n",
        ["plan.yaml:4:", "'a'", "htp", "did you mean 'http'"]),
}


@pytest.mark.parametrize("name", sorted(BAD_PLANS))
def test_malformed_plan_gives_one_line_error(tmp_path, referee_cli, name):
    text, must_contain = BAD_PLANS[name]
    write_plan(tmp_path / "plan.yaml", text)
    rc, out, err = referee_cli("check", "plan.yaml", cwd=tmp_path)
    line = assert_one_line_error(rc, out, err)
    for needle in must_contain:
        if needle.startswith("'") and needle.endswith("'"):  # a step id: quoted or not
            assert needle.strip("'") in line, f"{needle} not in: {line}"
        else:
            assert needle.lower() in line.lower(), f"{needle!r} not in: {line}"


def test_missing_plan_file(tmp_path, referee_cli):
    rc, out, err = referee_cli("check", "no-such-plan.yaml", cwd=tmp_path)
    line = assert_one_line_error(rc, out, err)
    assert "no-such-plan.yaml" in line


def test_run_with_missing_plan_file(tmp_path, referee_cli):
    rc, out, err = referee_cli("run", "no-such-plan.yaml", "--agent", "true", "--out", "out", cwd=tmp_path)
    line = assert_one_line_error(rc, out, err)
    assert "no-such-plan.yaml" in line


def test_plan_that_is_a_directory(tmp_path, referee_cli):
    (tmp_path / "adir.yaml").mkdir()
    rc, out, err = referee_cli("check", "adir.yaml", cwd=tmp_path)
    assert_one_line_error(rc, out, err)


def test_error_column_points_into_the_right_step(tmp_path, referee_cli):
    text = textwrap.dedent("""\
        steps:
          - id: alpha
            validators: [{kind: file_exists, path: a.txt}]
            do: x
          - id: beta
            validators:
              - {kind: file_exists, path: b.txt}
              - {kind: regex_mach, evidence: x.txt, pattern: "a+"}
            do: x
        """)
    write_plan(tmp_path / "plan.yaml", text)
    rc, out, err = referee_cli("check", "plan.yaml", cwd=tmp_path)
    line = assert_one_line_error(rc, out, err)
    assert re.search(r"plan\.yaml:8:\d+", line), line
    assert "beta" in line and "alpha" not in line.replace("alphabet", ""), line
    assert "did you mean 'regex_match'" in line, line


def test_relative_url_without_an_app_url_is_a_plan_error(tmp_path, referee_cli):
    """Assumption (not spelled out in the contract): a relative `url:` can only be joined to
    `app.url`; with no app it can never be captured, so `check` should say so rather than let
    every run of the plan end in ERROR."""
    text = ("steps:\n  - id: a\n    do: x\n    validators:\n"
            "      - kind: http_status_eq\n        url: /health\n        expected: 200\n")
    write_plan(tmp_path / "plan.yaml", text)
    rc, out, err = referee_cli("check", "plan.yaml", cwd=tmp_path)
    line = assert_one_line_error(rc, out, err)
    assert "plan.yaml:" in line and "a" in line and "app" in line.lower(), line


def test_invalid_regex_is_caught_by_check(tmp_path, referee_cli):
    text = ("steps:\n  - id: a\n    do: x\n    validators:\n"
            "      - kind: regex_match\n        evidence: x.txt\n        pattern: '(unclosed'\n")
    write_plan(tmp_path / "plan.yaml", text)
    rc, out, err = referee_cli("check", "plan.yaml", cwd=tmp_path)
    line = assert_one_line_error(rc, out, err)
    assert "plan.yaml:" in line and "pattern" in line, line


def test_json_path_syntax_is_caught_by_check(tmp_path, referee_cli):
    text = ("steps:\n  - id: a\n    do: x\n    validators:\n      - kind: json_path_eq\n        evidence: x.json\n"
            "        path: '$.a[[b'\n        expected: 1\n")
    write_plan(tmp_path / "plan.yaml", text)
    rc, out, err = referee_cli("check", "plan.yaml", cwd=tmp_path)
    line = assert_one_line_error(rc, out, err)
    assert "plan.yaml:" in line and "path" in line, line
