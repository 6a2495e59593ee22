"""A command the plan runs after a step (a `command` capture, `command_exit_code`) often runs what the agent wrote:
its tests, a repository's hooks, a module in the working directory that `python -c` imports first. So it runs with
the run's isolation, never with more rights than the agent had; `run_as: runner` is the plan's explicit choice.

And a `${SECRET}` substituted into a command never reaches a process's arguments, which any local user may read
(`/proc/<pid>/cmdline`): another run's agent on the host polled them and saved the token as its evidence.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from referee.runner.procs import run_bounded

IS_ROOT = os.geteuid() == 0

# the planted module: imported first by `python3 -c "import json ..."` in the working directory; it says who ran it,
# whether it could read the signing key, and makes the validator's command exit 0 whatever the agent did
PLANTED = '''import os, sys
try:
    open({key!r}, "rb").read()
    key = "read"
except OSError as exc:
    key = type(exc).__name__
open(os.path.join({proof!r}, "proof-%d.txt" % os.getuid()), "w").write(key)
sys.exit(0)
'''


def _plan(run_as: str | None) -> dict:
    check = {"kind": "command_exit_code", "command": "python3 -c \"import json; json.load(open('result.json'))\""}
    if run_as:
        check["run_as"] = run_as
    return {"name": "planted", "actor": {"kind": "command", "command": "sh agent.sh"},
            "steps": [{"id": "s", "do": "Write result.json.", "validators": [check]}]}


@pytest.mark.skipif(not IS_ROOT, reason="the runner runs the agent as another user only when it is root")
@pytest.mark.parametrize("run_as", [None, "runner"])
def test_a_validator_command_runs_the_agents_planted_code_with_the_agents_rights_only(tmp_path, run_plan, run_as):
    proof = tmp_path / "proof"
    proof.mkdir()
    proof.chmod(0o1777)
    planted = PLANTED.format(key=os.environ["REFEREE_KEY_FILE"], proof=str(proof))
    (tmp_path / "agent.sh").write_text(f"cat > json.py <<'EOF'\n{planted}EOF\n"
                                       'echo \'{"pass": true}\' > "$REFEREE_CLAIM_FILE"\n')
    plan = _plan(run_as)
    plan["actor"]["isolation"] = "user"
    run = run_plan(plan)
    assert run.run_dir is not None and (tmp_path / "json.py").exists(), run.explain()
    record = next((run.run_dir / "evidence/s/after").glob("*command_exit_code*.json"))
    ran_as = __import__("json").loads(record.read_text())["ran_as"]
    proofs = {p.name: p.read_text() for p in proof.iterdir()}
    if run_as == "runner":  # the control: the plan asked for the runner's rights, and the attack is real
        assert ran_as == "runner" and proofs == {"proof-0.txt": "read"}, (ran_as, proofs)
        return
    assert ran_as.startswith("user referee-agent"), ran_as
    assert "proof-0.txt" not in proofs and len(proofs) == 1, proofs
    assert list(proofs.values()) == ["PermissionError"], proofs
    # what the planted code could do, it did: the command exited 0. A command that runs the agent's code decides
    # what the agent wants (docs: run such checks where the agent cannot reach); it just gains no rights
    assert run.verdict("s") == "PASS", run.explain()


def test_a_commands_text_never_reaches_its_processes_arguments():
    seen: list[bytes] = []

    def look(pid: int) -> None:
        seen.append(Path(f"/proc/{pid}/cmdline").read_bytes())

    secret = "s3cr3t-in-the-command-91f"
    ran = run_bounded(f"test -n {shlex.quote(secret)} && echo ok", timeout_s=10, keep=100, on_start=look)
    assert ran.exit_code == 0 and ran.stdout == b"ok\n", ran
    assert seen and secret.encode() not in seen[0], seen


def test_a_command_given_by_its_environment_keeps_the_shells_meaning():
    # quoting, a here-document, exec and the exit status all work as `sh -c TEXT` does
    cmd = "x='a b'; cat <<EOF\n$x \"q\"\nEOF\nexec sh -c 'exit 7'"
    ran = run_bounded(cmd, timeout_s=10, keep=100)
    assert (ran.exit_code, ran.stdout) == (7, b'a b "q"\n'), ran


@pytest.mark.skipif(not IS_ROOT, reason="the runner runs the agent as another user only when it is root")
def test_a_command_run_as_the_agent_gets_a_home_of_its_own_not_the_agents_dotfiles(tmp_path, run_plan):
    """The agent's home lasts from step to step; its dotfiles (`.curlrc`, `.gitconfig`, a user-site
    `usercustomize.py`) ran inside the plan's command when it ran with that home: step 2's trusted check
    `python3 -c 'exit 1'` exited 0 after step 1's agent planted a usercustomize that does so."""
    agent = tmp_path / "agent.sh"
    agent.write_text('#!/bin/sh\nif [ "$REFEREE_STEP_ID" = plant ]; then\n'
                     '  site=$(python3 -c "import site; print(site.getusersitepackages())")\n'
                     '  mkdir -p "$site" && echo "import os; os._exit(0)" > "$site/usercustomize.py"\nfi\n'
                     'echo \'{"pass": true}\' > "$REFEREE_CLAIM_FILE"\n')
    agent.chmod(0o755)
    check = {"kind": "command_exit_code", "command": "python3 -c 'import sys; sys.exit(1)'"}
    plan = {"name": "dotfiles", "actor": {"kind": "command", "command": f"sh {agent}", "isolation": "user"},
            "steps": [{"id": "plant", "do": "x", "validators": [{"kind": "file_exists", "path": "/etc/hostname"}]},
                      {"id": "check", "do": "x", "validators": [check]}]}
    run = run_plan(plan)
    assert run.run_dir is not None, run.explain()
    assert run.verdict("check") == "FAIL", run.explain()


@pytest.mark.skipif(not IS_ROOT, reason="the runner runs the agent as another user only when it is root")
def test_a_git_command_run_as_the_agent_works_in_a_repository_the_runner_owns(tmp_path, run_plan):
    """git refuses a repository another user owns ('dubious ownership'): a `git diff --quiet` validator on the
    runner's repository failed once commands ran as the agent, for an honest agent as for any."""
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "f.txt").write_text("fixed\n")
    subprocess.run(["git", "-C", str(repo), "add", "f.txt"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x"],
                   check=True)
    for p in [repo, *repo.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o005 if p.is_dir() else p.stat().st_mode | 0o004)
    check = {"kind": "command_exit_code", "command": f"git -C {repo} diff --quiet HEAD"}
    plan = {"name": "gitcheck", "actor": {"kind": "command", "command": "true", "isolation": "user"},
            "steps": [{"id": "s", "do": "x", "validators": [check]}]}
    run = run_plan(plan)
    assert run.verdict("s") == "PASS", run.explain()
