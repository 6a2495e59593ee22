"""Issue 29, hole 3: the app's log is the runner's. An app that logs request lines (Python's http.server
does) logs a capture URL with its `${VAR}` expanded; with `require_change` the runner takes that capture
before the agent acts, so an agent that reads app.log during its step would learn the secret and write it
into its claim. The log is kept where the agent cannot reach it until the run ends, and is redacted when
it lands in the run directory.
"""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from tests.security.isolation_modes import MODES, leaky_cmd, outputs_holding

TOKEN = "tok-APPLOG-5d0c9e71aa"


@pytest.mark.parametrize("mode", MODES)
def test_an_agent_cannot_read_the_app_log_and_the_secret_lands_in_no_output(sec, mode):
    www = sec.base / "www"
    www.mkdir()
    (www / "index.html").write_text("hello")
    start = (f"{shlex.quote(sys.executable)} -m http.server {{port}} --bind 127.0.0.1 "
             f"--directory {shlex.quote(str(www))}")
    plan = {"name": "applog",
            "app": {"start": start, "url": "http://127.0.0.1:{port}", "ready": "/", "ready_timeout_s": 20},
            "actor": {"isolation": mode},
            "steps": [{"id": "peek", "do": "READ_APP_LOG",
                       "capture": [{"kind": "http", "name": "page", "url": "/index.html?token=${API_TOKEN}"}],
                       "validators": [{"kind": "http_body_contains", "evidence": "page", "text": "bye",
                                       "require_change": True}]}]}
    env = {**sec.env, "API_TOKEN": TOKEN}
    r = sec.run(plan, agent=leaky_cmd(sec.base), env=env)
    assert not r.hung, r.hang_message()
    assert r.run_dir is not None, r.explain()
    claims = json.loads((r.run_dir / "claims.json").read_text())
    note = claims["peek"]["note"]
    assert "app.log unreadable" in note, f"the agent read the app's log during its step: {note[:500]}"
    log = (r.run_dir / "app.log").read_text()
    assert "GET /index.html?token=${API_TOKEN}" in log, f"the request line is not in app.log, redacted: {log[-500:]}"
    console = r.stdout + r.stderr
    for args in (("grade", r.run_dir), ("report", r.run_dir)):
        rc, out, err, _dt = sec.cli(*args, env=env)
        assert rc in (0, 1), f"{args[0]}: rc={rc} {err[-2000:]}"
        console += out + err
    hits = outputs_holding(r.run_dir, console, [TOKEN, TOKEN[::-1]])
    assert not hits, f"the secret from the app's log was written or shown: {hits}"


@pytest.mark.parametrize("chunk", [1, 3, 7, 10, 11, 64, 1 << 20])
def test_the_log_is_redacted_whatever_chunk_a_value_straddles(chunk):
    import io

    from referee.runner.envsubst import Secrets

    secrets = Secrets.of_plan(["API_TOKEN", "PW"], {"API_TOKEN": TOKEN, "PW": "p@ss word!"})
    log = (f"GET /?token={TOKEN} 200\n\xff\n{TOKEN}{TOKEN} p%40ss%20word%21 tail").encode("utf-8", "surrogateescape")
    out = io.BytesIO()
    secrets.scrub_stream(io.BytesIO(log), out, chunk=chunk)
    assert out.getvalue() == "GET /?token=${API_TOKEN} 200\n\xff\n${API_TOKEN}${API_TOKEN} ${PW} tail".encode(), chunk
