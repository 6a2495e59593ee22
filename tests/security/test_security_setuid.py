"""Issue 29, hole 2: no privilege left behind. Under a root runner a bwrap agent was uid 0: it owned what it wrote
and left a setuid copy of a program in its folder and the workspace, a root shell for any local user after the
sandbox was gone. Now the bwrap agent is an unprivileged uid, and after every step (user and bwrap) the runner
takes setuid/setgid bits and file capabilities off everything the agent could write, and says so in the step
record."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

IS_ROOT = os.geteuid() == 0
SETID = stat.S_ISUID | stat.S_ISGID


def mode_param(mode: str):
    from referee.runner.isolation import bwrap_problem

    why = None
    if not IS_ROOT:
        why = "the attack is a root runner's: the agent's files are root's (bwrap) or another account's (user)"
    elif mode == "bwrap":
        why = bwrap_problem()
    return pytest.param(mode, id=mode, marks=[pytest.mark.skipif(why is not None, reason=why or "")])


AGENT = r"""#!/bin/sh
# leave setuid and setgid copies of a program in every place this agent may write
id -u > "$REFEREE_AGENT_DIR/uid.txt"
for d in "$REFEREE_AGENT_DIR" "$PWD" "$HOME"; do
  cp /bin/cat "$d/suid-cat" && chmod 4755 "$d/suid-cat"
  echo "$?" >> "$REFEREE_AGENT_DIR/chmod.txt"
  cp /bin/cat "$d/sgid-cat" && chmod 2755 "$d/sgid-cat"
  mkdir -p "$d/deep/er" && cp /bin/cat "$d/deep/er/suid-cat" && chmod 4755 "$d/deep/er/suid-cat"
done
ls -ln "$REFEREE_AGENT_DIR/suid-cat" > "$REFEREE_AGENT_DIR/ls.txt"
setcap cap_dac_read_search+ep "$PWD/sgid-cat" 2>/dev/null
echo '{"pass": true, "note": "left setuid programs"}' > "$REFEREE_CLAIM_FILE"
"""


@pytest.fixture
def workspace():
    """A workspace the agent's account may write (sticky, like /tmp), under a folder every user may enter."""
    base = Path(tempfile.mkdtemp(prefix="referee-setuid-"))
    base.chmod(0o755)
    ws = base / "ws"
    ws.mkdir()
    ws.chmod(0o1777)
    yield ws
    shutil.rmtree(base, ignore_errors=True)


def _setid_files(root: Path) -> list[str]:
    out = []
    for p in root.rglob("*"):
        st = p.lstat()
        if stat.S_ISREG(st.st_mode) and st.st_mode & SETID:
            out.append(str(p.relative_to(root)))
    return sorted(out)


@pytest.mark.parametrize("mode", [mode_param("user"), mode_param("bwrap")])
def test_no_setuid_or_setgid_file_outlives_the_step(workspace, cli_env, mode):
    script = workspace.parent / "agent.sh"
    script.write_text(AGENT)
    script.chmod(0o755)
    plan = workspace / "plan.yaml"
    plan.write_text(json.dumps({"name": "setuid", "actor": {"kind": "command", "command": f"sh {script}",
                                                            "isolation": mode},
                                "steps": [{"id": "s", "do": "x",
                                           # a command the plan runs after the step runs as the agent: it too
                                           "capture": [{"kind": "command", "name": "cap", "command":
                                                        "cp /bin/cat cap-suid && chmod 4755 cap-suid; echo rc=$?"}],
                                           "validators": [{"kind": "file_exists", "path": "/etc/hostname"}]}]}))
    out = workspace.parent / "out"
    if mode == "bwrap":  # a setuid program already in the workspace: the bwrap agent is its owner on disk
        shutil.copyfile("/bin/cat", workspace / "left-there")
        (workspace / "left-there").chmod(0o4755)
    proc = subprocess.run([sys.executable, "-m", "referee.cli.main", "run", str(plan), "--out", str(out)],
                          cwd=workspace, env=cli_env, capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    from referee.runner.privileges import setid_filter

    (run_dir,) = [p for p in out.glob("*/*") if not p.is_symlink() and (p / "manifest.json").exists()]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["isolation"]["mode"] == mode, manifest["isolation"]
    agent_dir = run_dir / "agent" / "s"
    assert (agent_dir / "suid-cat").exists() and (workspace / "suid-cat").exists(), "the agent did not run"
    assert (agent_dir / "uid.txt").read_text().strip() != "0", "the agent ran as uid 0"
    assert _setid_files(agent_dir) == [] and _setid_files(workspace) == []
    for p in (workspace / "sgid-cat", agent_dir / "suid-cat"):
        assert not _has_caps(p)
    removed = manifest["steps"]["s"]["privileges_removed"]
    if mode == "bwrap":
        assert "$PWD/left-there: setuid removed" in removed, removed
    if mode == "bwrap" and setid_filter() is not None:
        # root on disk: it may not make a setuid file even while the step runs (the seccomp filter)
        assert "rws" not in (agent_dir / "ls.txt").read_text()
        assert (agent_dir / "chmod.txt").read_text().split() == ["1", "1", "1"], "a chmod 4755 was let through"
        assert removed == ["$PWD/left-there: setuid removed"], removed
        assert "rc=1" in (run_dir / "evidence/s/after/cap.json").read_text()
        return
    assert "$PWD/cap-suid: setuid removed" in removed, removed
    assert "rws" in (agent_dir / "ls.txt").read_text(), "the agent could not set the bit: the test proves nothing"
    assert any(line.startswith("agent/s/suid-cat: setuid") for line in removed), removed
    assert any(line.startswith("agent/s/sgid-cat: setgid") for line in removed), removed
    assert any(line.startswith("$PWD/suid-cat: setuid") for line in removed), removed
    assert any(line.startswith("$PWD/deep/er/suid-cat: setuid") for line in removed), removed
    assert any(line.startswith("$HOME/suid-cat: setuid") for line in removed), removed


def _has_caps(p: Path) -> bool:
    try:
        os.getxattr(p, "security.capability", follow_symlinks=False)
        return True
    except OSError:
        return False


@pytest.mark.skipif(not IS_ROOT or shutil.which("setcap") is None, reason="setting a file capability needs root and "
                                                                         "setcap")
def test_file_capabilities_and_setid_bits_are_taken_off_through_handles(tmp_path):
    """strip_tree: a capability and the bits go; a link to an outside setuid file is not followed; a file of
    another owner is left alone when only the agent's are to be stripped."""
    from referee.runner.privileges import strip_tree

    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copyfile("/bin/cat", outside / "keep")
    (outside / "keep").chmod(0o4755)
    tree = tmp_path / "tree"
    (tree / "d").mkdir(parents=True)
    shutil.copyfile("/bin/cat", tree / "d" / "capped")
    (tree / "d" / "capped").chmod(0o755)  # a capability counts on a program: strip_tree looks at those
    subprocess.run(["setcap", "cap_net_raw+ep", str(tree / "d" / "capped")], check=True)
    shutil.copyfile("/bin/cat", tree / "sgid")
    (tree / "sgid").chmod(0o2755)
    (tree / "link").symlink_to(outside / "keep")
    (tree / "dirlink").symlink_to(outside)
    lines = strip_tree(tree, "$PWD")
    assert sorted(lines) == ["$PWD/d/capped: file capabilities removed", "$PWD/sgid: setgid removed"]
    assert not _has_caps(tree / "d" / "capped") and not (tree / "sgid").stat().st_mode & SETID
    assert (outside / "keep").stat().st_mode & stat.S_ISUID, "a link was followed"
    (tree / "sgid").chmod(0o2755)
    assert strip_tree(tree, "$PWD", owner=os.geteuid() + 1) == []
    assert (tree / "sgid").stat().st_mode & stat.S_ISGID
