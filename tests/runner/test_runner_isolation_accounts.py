"""Runs at once on one host each have an agent account of their own: one run's agent cannot write another run's
`agent/<step>/` (each is its account's while its step runs), and one run's sweep of its account's processes cannot
kill another run's agent. Both were possible with one shared account (found by a black-box tester)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.conftest import run_cli
from tests.runner.runner_helpers import find_run_dirs, write_plan

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="user isolation needs the runner to be root")


def _script(path, text: str) -> str:
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(0o755)
    return str(path)


def _manifest(out, plan: str) -> dict:
    (run_dir,) = [d for d in find_run_dirs(out) if d.parent.name == plan]
    return json.loads((run_dir / "manifest.json").read_text())


def test_an_agent_cannot_write_the_agent_folder_of_another_run_going_on(tmp_path, cli_env):
    tmp_path.chmod(0o755)
    out = tmp_path / "runs"
    shared = tmp_path / "shared"  # where the attacker says it is done: both agents' accounts may write it
    shared.mkdir(mode=0o1777)
    shared.chmod(0o1777)
    done = shared / "attacked"
    # the attacker tries to write each agent folder of the victim's run while the victim's step goes on (up to
    # 40 rounds, 0.2 s apart, until it has tried 3 times), then says it is done; the victim acts until then
    writer = _script(tmp_path / "writer.sh", f"n=0; for i in $(seq 40); do for d in {out}/victim/*/agent/*/; do "
                                             '[ -d "$d" ] || continue; n=$((n+1)); echo "tried $d"; '
                                             'echo GOOD > "$d/proof.txt" 2>/dev/null && echo "wrote $d"; done; '
                                             f'[ $n -ge 3 ] && break; sleep 0.2; done; touch {done}\n')
    victim_agent = _script(tmp_path / "victim.sh", f"i=0; while [ ! -e {done} ] && [ $i -lt 300 ]; do sleep 0.1; "
                                                   "i=$((i+1)); done\n")
    attacker = write_plan(tmp_path / "attacker.yaml", {
        "name": "attacker", "actor": {"kind": "command", "command": writer, "isolation": "user"},
        "steps": [{"id": "a", "do": "write into the other run"}]})
    victim = write_plan(tmp_path / "victim.yaml", {
        "name": "victim", "actor": {"kind": "command", "command": victim_agent, "isolation": "user"},
        "steps": [{"id": "v", "do": "do nothing",
                   "validators": [{"kind": "text_contains", "evidence": "proof.txt", "text": "GOOD"}]}]})
    rc, stdout, stderr = run_cli(["run", str(attacker), str(victim), "-j", "2", "--out", str(out)], cwd=tmp_path,
                                 env=cli_env, timeout=120, process=True)
    a, v = _manifest(out, "attacker"), _manifest(out, "victim")
    assert a["isolation"]["mode"] == v["isolation"]["mode"] == "user", (a["isolation"], v["isolation"])
    assert a["isolation"]["user"] != v["isolation"]["user"], "two runs at once shared one agent account"
    (a_dir,) = [d for d in find_run_dirs(out) if d.parent.name == "attacker"]
    assert "tried " in (a_dir / "agent/a/stdout.txt").read_text(), "the attacker never saw the victim's step"
    (v_dir,) = [d for d in find_run_dirs(out) if d.parent.name == "victim"]
    assert not (v_dir / "agent/v/proof.txt").exists(), "another run's agent wrote this run's evidence"
    results = json.loads((v_dir / "results.json").read_text())
    assert results["steps"][0]["verdict"] == "ERROR", results


def test_a_run_tracked_by_its_account_does_not_kill_the_agent_of_another_run(tmp_path, cli_env):
    """Run A's agent sleeps through its step; run B, made to track by uid (REFEREE_CGROUP=off: its sweep kills
    every process of its account), runs meanwhile."""
    tmp_path.chmod(0o755)
    release = tmp_path / "b-finished"  # made by the test once run B is over: A's agent acts until then (<= 60 s)
    slow = _script(tmp_path / "slow.sh", 'touch "$REFEREE_AGENT_DIR/asleep"; '
                                         f"i=0; while [ ! -e {release} ] && [ $i -lt 600 ]; do sleep 0.1; "
                                         'i=$((i+1)); done; echo GOOD > "$REFEREE_AGENT_DIR/proof.txt"\n')
    plan_a = write_plan(tmp_path / "slow.yaml", {
        "name": "slow", "actor": {"kind": "command", "command": slow, "isolation": "user"},
        "steps": [{"id": "s", "do": "take your time",
                   "validators": [{"kind": "text_contains", "evidence": "proof.txt", "text": "GOOD"}]}]})
    plan_b = write_plan(tmp_path / "quick.yaml", {
        "name": "quick", "actor": {"kind": "command", "command": "true", "isolation": "user"},
        "steps": [{"id": "q", "do": "be quick", "validators": [{"kind": "command_exit_code", "command": "true"}]}]})
    a = subprocess.Popen([sys.executable, "-m", "referee.cli.main", "run", str(plan_a), "--out", str(tmp_path / "ra")],
                         cwd=tmp_path, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not list((tmp_path / "ra").glob("slow/*/agent/s/asleep")) and time.monotonic() < deadline:
            assert a.poll() is None, a.communicate()
            time.sleep(0.05)
        assert list((tmp_path / "ra").glob("slow/*/agent/s/asleep")), "run A's agent never started"
        # A's agent is in its step (and stays there until B is over)
        rc, out, err = run_cli(["run", str(plan_b), "--out", str(tmp_path / "rb")], cwd=tmp_path,
                               env={**cli_env, "REFEREE_CGROUP": "off"}, timeout=60)
        assert rc == 0, out + err
        assert _manifest(tmp_path / "rb", "quick")["isolation"]["tracking"] == "uid"
        release.touch()
        a_out, a_err = a.communicate(timeout=60)
    finally:
        if a.poll() is None:
            a.kill()
    assert a.returncode == 0, a_out + a_err
    step = _manifest(tmp_path / "ra", "slow")["steps"]["s"]
    assert step["actor_exit"] == 0, f"run A's agent was killed by run B's sweep: {step}"
