"""Issue 29, hole 1: root removes what an agent wrote through handles, and sweeps only homes it made and recorded.

The attack: an agent account plants a fake "stale" agent home in the temp folder, full of files; when a
root runner sweeps it, the agent renames a sub-folder and puts a link to any folder in its place, and a
path-based removal then unlinks every file in the link's target. The race is made deterministic here:
the swap happens at the runner's first unlink (after it listed the folder), or in the hook
`fstree.before_removal` (between listing a folder and removing its entries).
"""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from referee.core import fstree

HOME_PREFIX = "referee-agent-home-"  # runner.HOME_PREFIX

IS_ROOT = os.geteuid() == 0


def _victim(base: Path) -> Path:
    """A root-only folder of files outside the tree being removed."""
    victim = base / "victim"
    victim.mkdir(mode=0o700)
    for i in range(20):
        (victim / f"precious-{i}.txt").write_text("keep me")
    return victim


def _tree(base: Path) -> Path:
    tree = base / "tree"
    (tree / "sub" / "deeper").mkdir(parents=True)
    for i in range(30):
        (tree / f"f{i}").write_text("x")
        (tree / "sub" / f"g{i}").write_text("x")
    (tree / "sub" / "deeper" / "h").write_text("x")
    return tree


def test_a_folder_swapped_for_a_link_after_the_listing_costs_only_the_link(tmp_path, monkeypatch):
    """At the runner's first unlink (the folder is listed by then) `sub` becomes a link to the victim folder."""
    victim, tree = _victim(tmp_path), _tree(tmp_path)
    real_unlink, swapped = os.unlink, []

    def unlink_then_swap(path, *a, **kw):
        if not swapped:
            swapped.append(True)
            os.rename(tree / "sub", tmp_path / "sub-moved")
            os.symlink(victim, tree / "sub")
        return real_unlink(path, *a, **kw)

    monkeypatch.setattr(os, "unlink", unlink_then_swap)
    fstree.remove_tree(tree)
    monkeypatch.undo()
    assert swapped, "the swap never happened: the test proves nothing"
    assert sorted(p.name for p in victim.iterdir()) == sorted(f"precious-{i}.txt" for i in range(20))
    assert not tree.exists() and (tmp_path / "sub-moved" / "g0").exists()


@pytest.mark.parametrize("where", ["top", "sub"])
def test_the_hook_between_listing_and_removal_swaps_in_a_link_and_nothing_outside_is_touched(tmp_path, monkeypatch,
                                                                                              where):
    victim, tree = _victim(tmp_path), _tree(tmp_path)
    swapped: list[str] = []

    def swap(fd: int, names: list[str]) -> None:
        target = "sub" if where == "top" else "deeper"
        if target in names and not swapped:
            os.rename(target, f"{target}-gone", src_dir_fd=fd, dst_dir_fd=fd)
            os.symlink(victim, target, dir_fd=fd)
            swapped.append(target)

    monkeypatch.setattr(fstree, "before_removal", swap, raising=False)
    fstree.remove_tree(tree)
    assert swapped == ["sub" if where == "top" else "deeper"]
    assert len(list(victim.iterdir())) == 20 and not tree.exists()


def test_a_recorded_folder_replaced_by_another_is_left_alone(tmp_path):
    tree = _tree(tmp_path)
    st = tree.stat()
    os.rename(tree, tmp_path / "elsewhere")
    (tree / "other").mkdir(parents=True)
    with pytest.raises(OSError):
        fstree.remove_tree(tree, expect=(st.st_dev, st.st_ino))
    assert (tree / "other").is_dir()


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _agent_account() -> tuple[int, int]:
    from referee.runner.isolation import ensure_agent_user

    return ensure_agent_user()


@pytest.mark.skipif(not IS_ROOT, reason="the sweep of agent homes runs as root (agent accounts are root's to make)")
def test_a_stale_home_the_agent_planted_is_not_swept(tmp_path):
    """A folder named like a dead runner's agent home, owned by the agent account, with a link in it to a
    root-only folder: a run (which sweeps homes when it makes its own) leaves it and the folder it links to."""
    from referee.runner import homes


    uid, gid = _agent_account()
    victim = _victim(tmp_path)
    planted = Path(tempfile.mkdtemp(prefix=f"{HOME_PREFIX}{_dead_pid()}-"))
    try:
        for i in range(10):
            (planted / f"bait-{i}").write_text("x")
        (planted / "sub").mkdir()
        (planted / "sub" / "link").symlink_to(victim)
        for p in (planted, planted / "sub"):
            os.chown(p, uid, gid)
        home = homes.make_home(uid, gid)  # what a run does as it starts (user mode), sweep first
        homes.remove_home(home)
        assert planted.is_dir() and len(list(planted.iterdir())) == 11, "the runner swept a home it never made"
        assert len(list(victim.iterdir())) == 20
    finally:
        fstree.remove_tree(planted)


@pytest.mark.skipif(not IS_ROOT, reason="the sweep of agent homes runs as root (agent accounts are root's to make)")
def test_a_stale_home_is_not_swept_by_a_real_run(tmp_path, cli_env):
    """The same through `referee run` (user isolation): the run starts, sweeps, and leaves the planted home."""
    uid, gid = _agent_account()
    planted = Path(tempfile.mkdtemp(prefix=f"{HOME_PREFIX}{_dead_pid()}-"))
    try:
        (planted / "bait").write_text("x")
        os.chown(planted, uid, gid)
        tmp_path.chmod(0o755)
        plan = tmp_path / "p.yaml"
        plan.write_text(json.dumps({"name": "sweep", "actor": {"kind": "command", "command": "true"},
                                    "steps": [{"id": "s", "do": "x",
                                               "validators": [{"kind": "command_exit_code", "command": "true"}]}]}))
        proc = subprocess.run([sys.executable, "-m", "referee.cli.main", "run", str(plan), "--out",
                               str(tmp_path / "out")], cwd=tmp_path, env=cli_env, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode in (0, 1), proc.stdout + proc.stderr
        assert (planted / "bait").exists(), "a run swept a home no runner recorded"
    finally:
        fstree.remove_tree(planted)


def test_a_home_is_swept_once_its_runner_is_gone_and_only_then(tmp_path):
    """A home made (and recorded) by a runner that died is removed by the next sweep; one whose runner lives is
    not; a recorded home whose folder was replaced is left alone and its record dropped."""
    from referee.runner import homes

    reg = tmp_path / "registry"
    reg.mkdir()
    code = ("import sys; from pathlib import Path; from referee.runner import homes\n"
            "for _ in range(2):\n"
            " h = homes.make_home(where=Path(sys.argv[1])); (h / 'tmp' / 'f').write_text('x'); print(h)")
    mine = homes.make_home(where=reg)  # this process lives: its home stays
    made = [Path(line) for line in subprocess.run([sys.executable, "-c", code, str(reg)], capture_output=True,
                                                  text=True, check=True).stdout.split()]
    try:
        os.rename(made[1], tmp_path / "moved-away")
        made[1].mkdir()  # another folder where the second home was
        (made[1] / "not-a-home").write_text("x")
        removed = homes.sweep(where=reg)
        assert removed == [str(made[0])] and not made[0].exists()
        assert (made[1] / "not-a-home").exists() and mine.is_dir()
        records = os.listdir(reg / f"{homes.REGISTRY_PREFIX}{os.geteuid()}")
        assert len(records) == 1  # this process's own
    finally:
        homes.remove_home(mine, where=reg)
        fstree.remove_tree(made[1])
        fstree.remove_tree(tmp_path / "moved-away")
    assert not mine.exists()


def test_a_registry_folder_someone_else_made_is_not_used(tmp_path):
    from referee.runner import homes

    if not IS_ROOT:
        pytest.skip("another owner for the folder needs root")
    reg = tmp_path / f"{homes.REGISTRY_PREFIX}{os.geteuid()}"
    reg.mkdir(mode=0o700)
    nobody = pwd.getpwnam("nobody")
    os.chown(reg, nobody.pw_uid, nobody.pw_gid)
    assert homes.registry(tmp_path) is None
    os.rmdir(reg)
    reg.symlink_to(tmp_path)
    assert homes.registry(tmp_path) is None
