"""A browser step's `timeout_s` bounds its whole `script:`, not just each action."""

from __future__ import annotations

import json
import sys

import yaml

from tests.conftest import run_cli


def test_the_step_timeout_caps_a_long_wait(tmp_path):
    app = {"start": f"{sys.executable} -m referee.demo.app --port {{port}} --db {tmp_path}/t.db",
           "url": "http://127.0.0.1:{port}", "ready": "/health"}
    plan = {"name": "slow", "app": app,
            "actor": {"kind": "browser"},
            "steps": [{"id": "wait", "do": "wait for something that never comes", "timeout_s": 2,
                       "script": [{"goto": "/"}, {"wait_for": {"text": "never shown", "timeout_s": 60}}],
                       "validators": [{"kind": "aria_contains", "role": "heading", "text": "My todos"}]}]}
    (tmp_path / "slow.yaml").write_text(yaml.safe_dump(plan))
    rc, out, err = run_cli(["run", "slow.yaml", "--out", "out"], cwd=tmp_path, timeout=120)
    assert "Traceback" not in err, err
    run_dir = next(p for p in (tmp_path / "out" / "slow").iterdir() if p.is_dir() and not p.is_symlink())
    rec = json.loads((run_dir / "manifest.json").read_text())["steps"]["wait"]
    assert rec["status"] == "done" and rec["actor_exit"] == 1
    import re

    waited = re.search(r"Timeout ([\d.]+)ms", rec["actor_error"])
    assert "wait_for" in rec["actor_error"] and waited and float(waited.group(1)) <= 2000, rec["actor_error"]
    assert "no claim" not in rec["actor_error"]  # a scripted step has no agent: no opinion, not "no claim"
    # the script failed, but the runner's own evidence still decides: the page did load
    steps = json.loads((run_dir / "results.json").read_text())["steps"]
    assert steps[0]["verdict"] == "PASS" and rc == 0
    # the step's actor ended well before the action's own 60 s ran out (the run's own record, not this test's clock)
    assert rec["agent_s"] < 60, rec
