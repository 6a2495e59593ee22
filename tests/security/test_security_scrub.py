"""Issue 29: everything the agent writes that referee shows is scrubbed of the runner's secret values. An
agent that learns a secret some other way (here the test hands it a file) writes it into its claim note,
its claim's evidence names, stdout, stderr, a file's name and a file's bytes: no output of the run holds it,
nor does the console, nor `referee grade` and `referee report` afterwards.
"""

from __future__ import annotations

import shlex
import sys

import pytest

from tests.conftest import APP_SCRIPT
from tests.security.isolation_modes import MODES, leaky_cmd, outputs_holding

TOKEN = "tok-SCRUB-7e21b0c4d9"


@pytest.mark.parametrize("mode", MODES)
def test_a_secret_the_agent_learned_out_of_band_appears_in_no_output(sec, mode):
    oob = sec.base / "told.txt"
    oob.write_text(TOKEN)
    oob.chmod(0o644)
    db = sec.base / "app.db"
    start = f"{shlex.quote(sys.executable)} {shlex.quote(str(APP_SCRIPT))} --port {{port}} --db {shlex.quote(str(db))}"
    plan = {"name": "scrub",
            "app": {"start": start, "url": "http://127.0.0.1:{port}", "ready": "/health", "ready_timeout_s": 20},
            "actor": {"isolation": mode},
            "steps": [{"id": "leak", "do": f"LEAK {oob}",
                       "capture": [{"kind": "http", "name": "status", "url": "/api/status/200?token=${API_TOKEN}"}],
                       "validators": [{"kind": "http_status_eq", "evidence": "status", "expected": 200},
                                      {"kind": "text_contains", "evidence": "loot.txt", "text": "loot"}]}]}
    env = {**sec.env, "API_TOKEN": TOKEN}
    r = sec.run(plan, agent=leaky_cmd(sec.base), env=env)
    assert not r.hung, r.hang_message()
    assert r.run_dir is not None, r.explain()
    step = r.step("leak")
    # the claim is still recorded, with the secret's name in its place
    claims = (r.run_dir / "claims.json").read_text()
    assert "the token is ${API_TOKEN}" in claims, claims[:2000]
    assert "ev-${API_TOKEN}.png" in claims, claims[:2000]
    # a file that holds the secret is not evidence (removed, as a file holding the signing key is): citing it ERRORs
    assert step["verdict"] == "ERROR", r.explain()
    console = r.stdout + r.stderr
    for args in (("grade", r.run_dir), ("report", r.run_dir)):
        rc, out, err, _dt = sec.cli(*args, env=env)
        assert rc in (0, 1), f"{args[0]}: rc={rc} {err[-2000:]}"
        console += out + err
    hits = outputs_holding(r.run_dir, console, [TOKEN])
    assert not hits, f"the secret the agent wrote was stored or shown: {hits}"
