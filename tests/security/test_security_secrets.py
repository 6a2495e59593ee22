"""Secrets the runner substitutes into a plan (`${API_TOKEN}` in a URL) are used, and never written:
not in the evidence, results.json, junit.xml, report.html, nor on the console; re-grading and
regenerating the report keep them out too.
"""

from __future__ import annotations

import shlex
import sys

from tests.conftest import APP_SCRIPT
from tests.security.sec_helpers import files_containing

TOKEN = "tok-SECRET-83c1f0e2"


def test_api_token_substituted_into_a_url_appears_in_no_output(sec):
    db = sec.base / "app.db"
    start = f"{shlex.quote(sys.executable)} {shlex.quote(str(APP_SCRIPT))} --port {{port}} --db {shlex.quote(str(db))}"
    plan = {"name": "token-in-url",
            "app": {"start": start, "url": "http://127.0.0.1:{port}", "ready": "/health", "ready_timeout_s": 20},
            "steps": [
                {"id": "uses_token", "do": "Look at the status page.",
                 "capture": [{"kind": "http", "name": "status", "url": "/api/status/200?token=${API_TOKEN}"}],
                 "validators": [{"kind": "http_status_eq", "evidence": "status", "expected": 200}]},
                {"id": "fails_with_token", "do": "Look at the other status page.",
                 "validators": [{"kind": "http_status_eq", "url": "/api/status/404?token=${API_TOKEN}",
                                 "expected": 200},
                                {"kind": "http_body_contains", "url": "/api/status/200?access_token=${API_TOKEN}",
                                 "text": "never-there"}]},
            ]}
    env = dict(sec.env)
    env["API_TOKEN"] = TOKEN
    r = sec.run(plan, env=env)
    assert not r.hung, r.hang_message()
    assert r.verdict("uses_token") == "PASS", r.explain()
    assert r.verdict("fails_with_token") == "FAIL", r.explain()

    def leaks() -> dict:
        return files_containing(sec.out, [TOKEN])

    assert not leaks(), f"the substituted secret was written: {leaks()}"
    assert TOKEN not in r.stdout + r.stderr, "the substituted secret was printed"
    for args in (("grade", r.run_dir), ("report", r.run_dir)):
        rc, out, err, dt = sec.cli(*args, env=env, timeout=60)
        assert rc is not None and rc in (0, 1), f"{args[0]}: rc={rc} {err[-2000:]}"
        assert TOKEN not in out + err, f"`referee {args[0]}` printed the secret"
        assert not leaks(), f"`referee {args[0]}` wrote the secret: {leaks()}"
