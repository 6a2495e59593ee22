"""The agent is isolated: it runs unprivileged, cannot read the runner's secrets from /proc, and
cannot make the runner hash or write files outside the run directory (symlinked agent folder,
a symlink planted where a capture goes, a plan name that is a path). `actor.isolation: none` is
allowed, recorded and shown as 'unisolated'.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.security.sec_helpers import files_containing, sha256, tree_state

DONE = "REAL-WORK-DONE"


def _done() -> list[dict]:
    return [{"kind": "text_contains", "evidence": "result.txt", "text": DONE}]


@pytest.mark.skipif(os.geteuid() != 0, reason="as root the agent must run as another user; as a user, bwrap")
def test_agent_of_a_root_runner_runs_as_an_unprivileged_user(sec):
    r = sec.run({"name": "whoami", "steps": [{"id": "work", "do": f"UID\nSAVE result.txt {DONE}",
                                              "validators": _done()}]})
    assert not r.hung, r.hang_message()
    assert r.verdict("work") == "PASS", "an isolated agent must still be able to work:\n" + r.explain()
    uid_files = [p for p in r.run_dir.rglob("uid.txt") if p.is_file()]
    assert uid_files, "the agent wrote no uid.txt:\n" + r.explain()
    assert int(uid_files[0].read_text()) != 0, "the runner is root and its agent ran as root"


SECRETS = {
    "AWS_SECRET_ACCESS_KEY": "aws-SECRET-wJalrXUtnFEMI-7731",
    "OPENAI_API_KEY": "sk-SECRET-openai-99204d",
    "DATABASE_URL": "postgresql://app:dbpass-SECRET-5521@127.0.0.1:5432/app",
}


def test_agent_cannot_read_the_runners_secrets_from_proc(sec):
    env = dict(sec.env)
    env.update(SECRETS)
    r = sec.run({"name": "environ-thief", "steps": [{"id": "steal", "do": f"STEAL_ENV\nSAVE result.txt {DONE}",
                                                     "validators": _done()}]}, env=env, process=True)
    assert not r.hung, r.hang_message()  # process: the runner's own /proc/PID/environ must hold the secrets
    assert r.verdict("steal") == "PASS", "the agent did not get to act:\n" + r.explain()
    needles = [*SECRETS.values(), "dbpass-SECRET-5521"]
    hits = files_containing(sec.out, needles)
    assert not hits, f"the agent read the runner's secrets and they reached the run directory: {hits}"
    printed = [n for n in needles if n in r.stdout or n in r.stderr]
    assert not printed, f"the runner printed the secrets its agent stole: {printed}"


def test_agent_folder_replaced_by_a_symlink_gets_nothing_outside_hashed_or_written(sec):
    victim = sec.base / "victim"
    victim.mkdir(mode=0o755)
    (victim / "secret.txt").write_text("TOPSECRET-4242 " + DONE)
    os.chmod(victim / "secret.txt", 0o644)
    before = tree_state(victim)
    plan = {"name": "symlink-agent-dir", "steps": [
        {"id": "link", "do": f"SYMLINK_AGENT_DIR {victim}",
         "validators": [{"kind": "text_contains", "evidence": "secret.txt", "text": DONE}]},
        {"id": "after", "do": f"SAVE result.txt {DONE}", "validators": _done()},
    ]}
    r = sec.run(plan)
    assert not r.hung, r.hang_message()
    assert tree_state(victim) == before, "the runner wrote into the folder the agent's symlink pointed at"
    assert r.verdict("link") != "PASS", "a file outside the run directory was graded as evidence:\n" + r.explain()
    manifest = (r.run_dir / "manifest.json").read_text()
    assert sha256(victim / "secret.txt") not in manifest, "a file outside the run directory was hashed as evidence"
    assert r.verdict("after") == "PASS", r.explain()


def test_symlink_planted_where_captures_go_gets_nothing_written_outside(sec):
    victim = sec.base / "victim-captures"
    victim.mkdir(mode=0o777)  # writable by anyone: only the runner's own care keeps it clean
    os.chmod(victim, 0o777)
    before = tree_state(victim)
    plan = {"name": "symlink-capture", "steps": [
        {"id": "plant", "do": f"SYMLINK_CAPTURE evidence/plant/after/sub {victim}\n"
                              f"SYMLINK_CAPTURE evidence/next/after/sub {victim}\n"
                              f"SYMLINK_CAPTURE evidence/next/before/sub {victim}",
         "capture": [{"kind": "command", "name": "sub/reply", "command": "echo captured"},
                     {"kind": "command", "name": "shot", "command": "printf screen", "stdout_as": "sub/shot.png"}]},
        {"id": "next", "do": "Nothing.",
         "capture": [{"kind": "command", "name": "sub/reply", "command": "echo captured"}],
         "validators": [{"kind": "command_exit_code", "evidence": "sub/reply", "expected": 0,
                         "require_change": True}]},
    ]}
    r = sec.run(plan)
    assert not r.hung, r.hang_message()
    assert "Traceback" not in r.stderr, r.stderr
    after = tree_state(victim)
    assert after == before, f"the runner wrote through the agent's symlink: {sorted(set(after) - set(before))}"


@pytest.mark.parametrize("name", ["../name-escape", "ABS/abs-escape", "a/../../dot-escape"])
def test_plan_name_is_a_name_never_a_path(sec, name):
    name = name.replace("ABS", str(sec.base))
    plan = {"name": name, "steps": [{"id": "work", "do": f"SAVE result.txt {DONE}", "validators": _done()}]}
    path = sec.write_plan(plan, name="named")
    before = tree_state(sec.base, skip=(sec.out,))
    rc, out, err, dt = sec.cli("run", path, "--out", sec.out, "--agent", sec.agent, timeout=60)
    assert rc is not None, f"hung ({dt:.0f} s)"
    assert "Traceback" not in err, err
    after = tree_state(sec.base, skip=(sec.out,))
    escaped = sorted(set(after) - set(before))
    assert not escaped, f"plan name {name!r} wrote outside --out: {escaped[:5]}"


def test_isolation_none_is_allowed_recorded_and_shown_as_unisolated(sec):
    plan = {"name": "unisolated", "actor": {"kind": "command", "command": sec.agent, "isolation": "none"},
            "steps": [{"id": "work", "do": f"SAVE result.txt {DONE}", "validators": _done()}]}
    r = sec.run(plan, agent=None)
    assert not r.hung, r.hang_message()
    assert r.rc == 0, "`actor.isolation: none` must be accepted:\n" + r.explain()
    manifest = json.loads((r.run_dir / "manifest.json").read_text())
    assert "none" in json.dumps(manifest).lower() or "unisolated" in json.dumps(manifest).lower(), \
        "the manifest does not record that the agent ran unisolated"
    shown = (r.run_dir / "report.html").read_text().lower() + r.stdout.lower()
    assert "unisolated" in shown, "neither the report nor the console says the run was unisolated"
