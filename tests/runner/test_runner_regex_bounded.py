"""A `regex_match` pattern that backtracks without end (a plan is a hostile input) makes its validator ERROR after
a bounded time, in `referee run` and in `referee grade`; it hung both for good (found by a black-box tester)."""

from __future__ import annotations

import json

from referee.runner.captures import http as http_capture
from referee.validators import text as text_validators
from tests.conftest import FORCE_PROCESS, run_cli
from tests.support.incli import process_needed

REDOS = {"kind": "regex_match", "evidence": "redos.txt", "pattern": "^(a+)+$"}
PLAIN = {"kind": "regex_match", "evidence": "redos.txt", "pattern": "a{3}!"}


def _in_this_process(env: dict) -> bool:
    """Whether `run_plan` and `run_cli` run the CLI in this process, where a value set here reaches it."""
    return not FORCE_PROCESS and process_needed(env) is None


def test_a_catastrophic_pattern_is_an_error_not_a_hang(tmp_path, run_plan, cli_env, monkeypatch):
    # the side meant to expire is the search: its bound (10 s) down to 2 s, still ~20 times what the plain
    # pattern's search (one `python -I -S` start) takes on a busy machine. With the CLI in a child
    # (REFEREE_TESTS_CLI=process) the bound stays 10 s and the test only takes longer
    if _in_this_process(cli_env):
        monkeypatch.setattr(text_validators, "REGEX_TIMEOUT_S", 2.0)
    agent = tmp_path / "agent.sh"
    agent.write_text('#!/bin/sh\nprintf "%05000d!" 0 | tr 0 a > "$REFEREE_AGENT_DIR/redos.txt"\n')
    agent.chmod(0o755)
    tmp_path.chmod(0o755)
    # the reasons below say the bound stopped the search (one never stopped holds the run to the test's timeout)
    run = run_plan({"name": "redos", "actor": {"kind": "command", "command": str(agent)},
                    "steps": [{"id": "s", "do": "write it", "validators": [REDOS, PLAIN]}]}, timeout=120)
    step = run.step("s")
    assert run.verdict("s") == "ERROR", run.explain()
    reasons = [v["reason"] for v in step["validators"]]
    assert "did not finish" in reasons[0] and "the grader could not look" in reasons[0], reasons
    assert f"in {text_validators.REGEX_TIMEOUT_S:g} s" in reasons[0], reasons
    assert reasons[1].startswith("matches /a{3}!/: 'aaa!'"), reasons
    rc, out, err = run_cli(["grade", str(run.run_dir), "--json"], cwd=tmp_path, env=cli_env, timeout=90)
    assert rc == 1, err
    again = json.loads(out)
    assert "ERROR" in json.dumps(again), out[:500]


APP = r'''
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
BODY = b"A" * int(sys.argv[2]) + b"NEEDLE_AT_END"
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"ok" if self.path == "/health" else BODY
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
'''


def test_text_past_the_kept_part_of_a_cut_body_is_an_error_not_a_fail(tmp_path, run_plan, cli_env, monkeypatch):
    """The runner keeps the first 32 MiB of a body: text that may lie past it cannot be looked for, so
    http_body_contains is ERROR there, saying why, not a FAIL (a black-box tester's case)."""
    import sys

    # the cut, not its size, is the point: with the CLI in this process the runner keeps 1 MiB (not 32 MiB,
    # which it then writes, hashes and reads back as a record); the body is 1 MiB longer than what is kept
    if _in_this_process(cli_env):
        monkeypatch.setattr(http_capture, "MAX_BODY", 1 << 20)
    size = http_capture.MAX_BODY + (1 << 20)
    app = tmp_path / "app.py"
    app.write_text(APP)
    run = run_plan({"name": "huge", "app": {"start": f"{sys.executable} {app} {{port}} {size}",
                                            "url": "http://127.0.0.1:{port}", "ready": "/health"},
                    "steps": [{"id": "s", "do": "look", "validators": [
                        {"kind": "http_body_contains", "url": "/huge", "text": "NEEDLE_AT_END"},
                        {"kind": "http_body_contains", "url": "/huge", "text": "AAAA"}]}]}, agent="true", timeout=120)
    reasons = [v["reason"] for v in run.step("s")["validators"]]
    assert run.verdict("s") == "ERROR", run.explain()
    assert "the body was cut at the runner's limit" in reasons[0] and "may lie past it" in reasons[0], reasons
    assert f"({http_capture.MAX_BODY} characters kept)" in reasons[0], reasons
    assert reasons[1].startswith("body contains 'AAAA'"), reasons
