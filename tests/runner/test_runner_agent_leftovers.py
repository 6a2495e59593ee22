"""What an agent leaves behind never crashes the run: names that are not UTF-8, folders nested deeper than
Python recurses, in its folder, in place of its output and in its HOME.

Each agent is a shell script run by `referee run` (isolated as the suite's runner allows); the run must
finish, name what it refused (escaped), take the rest, and perform the steps after.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.conftest import base_cli_env, run_cli
from tests.runner.runner_helpers import find_run_dirs

DEEP = 1100  # folders: more than Python 3.11's os.walk or shutil.rmtree can recurse


def _sh(tmp_path: Path, body: str) -> str:
    path = tmp_path / "agent.sh"
    path.write_text("#!/bin/sh\n" + body + 'echo \'{"pass": true}\' > "$REFEREE_CLAIM_FILE"\n')
    path.chmod(0o755)
    return f"sh {shlex.quote(str(path))}"


def _nest(var: str, name: str) -> str:
    """Shell: make DEEP folders named `name` below "$var" (one `mkdir -p` of a relative path, 2 * DEEP characters:
    within PATH_MAX, and one process instead of one per folder)."""
    return f'( cd "{var}" && mkdir -p {"/".join([name] * DEEP)} ) || exit 9\n'


@pytest.fixture
def rm_deep(tmp_path):
    yield
    # shutil.rmtree (the session's cleanup) recurses once per level: remove what the tests leave here
    subprocess.run(["rm", "-rf", str(tmp_path / "out1")], check=False)


def _ok(sid: str, **extra) -> dict:
    return {"id": sid, "do": "x", "validators": [{"kind": "command_exit_code", "command": "true"}], **extra}


def test_names_that_are_not_utf8_are_refused_by_name_and_the_other_files_taken(run_plan, tmp_path):
    agent = _sh(tmp_path, 'cd "$REFEREE_AGENT_DIR" && printf ok > ok.txt && printf x > "$(printf \'bad\\377.txt\')" '
                          '&& mkdir "$(printf \'dir\\376\')" && printf y > "$(printf \'dir\\376\')/inner.txt"\n')
    steps = [{"id": "s1", "do": "x", "validators": [{"kind": "text_contains", "evidence": "ok.txt", "text": "ok"}]},
             _ok("s2")]
    run = run_plan({"name": "names", "steps": steps}, agent=agent)
    assert run.rc == 0, run.explain()
    assert run.verdicts() == {"s1": "PASS", "s2": "PASS"}
    why = run.manifest["steps"]["s1"]["actor_error"]
    # escaped as the bytes they were, so the reader sees which file it was
    assert r"agent/s1/bad\xff.txt: its name is not UTF-8; not taken as evidence" in why, why
    assert r"agent/s1/dir\xfe/inner.txt: its name is not UTF-8" in why, why
    paths = {f["path"] for f in run.manifest["files"]}
    assert "agent/s1/ok.txt" in paths and not any("bad" in p or "inner" in p for p in paths), paths
    for name in ("junit.xml", "report.html"):
        assert (run.run_dir / name).is_file(), name
    # and the run directory grades again the same way
    rc, out, err = run_cli(["grade", str(run.run_dir)], env=base_cli_env(), timeout=60)
    assert rc == 0, err


def test_a_deep_tree_in_the_agents_folder_is_taken_down_to_a_depth_and_the_rest_named(run_plan, tmp_path, rm_deep):
    near = "agent/s1/" + "a/" * 10 + "near.txt"  # 10 deep: taken
    agent = _sh(tmp_path, 'if [ "$REFEREE_STEP_ID" = s1 ]; then\n'
                          f'd="$REFEREE_AGENT_DIR/{"a/" * 10}"; mkdir -p "$d" && printf hi > "$d/near.txt"\n'
                          + _nest("$REFEREE_AGENT_DIR", "d") + 'fi\n')
    steps = [_ok("s1", validators=[{"kind": "text_contains", "evidence": near.removeprefix("agent/s1/"),
                                    "text": "hi"}]), _ok("s2")]
    run = run_plan({"name": "deep", "steps": steps}, agent=agent, timeout=180)
    assert run.rc == 0, run.explain()
    assert run.verdicts() == {"s1": "PASS", "s2": "PASS"}
    assert near in {f["path"] for f in run.manifest["files"]}
    why = run.manifest["steps"]["s1"]["actor_error"]
    assert "agent/s1/" + "d/" * 32 + "d: nested deeper than 32 folders; not looked into" in why, why


@pytest.mark.parametrize("where", ["in place of its output", "in its HOME"])
def test_a_deep_tree_where_the_runner_removes_things_is_removed(run_plan, tmp_path, rm_deep, where):
    """The runner replaces whatever stands where it writes stdout.txt, and removes the agent's HOME at the
    end: both used shutil.rmtree, which dies with RecursionError on a tree 1100 deep (even ignore_errors)."""
    if where == "in its HOME":
        make = _nest("$HOME", "h") + f'echo "$HOME" > {shlex.quote(str(tmp_path / "home.txt"))}\n'
    else:  # the folder's top is the runner's to replace; its files below are not looked into past 32
        make = 'mkdir "$REFEREE_AGENT_DIR/stdout.txt"\n' + _nest("$REFEREE_AGENT_DIR/stdout.txt", "d")
    agent = _sh(tmp_path, f'if [ "$REFEREE_STEP_ID" = s1 ]; then\n{make}fi\necho said-$REFEREE_STEP_ID\n')
    run = run_plan({"name": "outs", "steps": [_ok("s1"), _ok("s2")]}, agent=agent, timeout=180)
    assert run.rc == 0 and "internal error" not in run.stderr, run.explain()
    assert run.verdicts() == {"s1": "PASS", "s2": "PASS"}
    assert (run.run_dir / "agent" / "s1" / "stdout.txt").read_text() == "said-s1\n"
    if where == "in its HOME":
        home = Path((tmp_path / "home.txt").read_text().strip())
        assert home.name and not home.exists(), home


def test_what_the_agent_leaves_grades_again_with_the_same_verdicts(run_plan, tmp_path, rm_deep):
    agent = _sh(tmp_path, _nest("$REFEREE_AGENT_DIR", "d") + 'printf x > "$REFEREE_AGENT_DIR/$(printf \'n\\377\')"\n')
    run = run_plan({"name": "again", "steps": [_ok("s1")]}, agent=agent, timeout=180)
    assert run.rc == 0, run.explain()
    for args in (["grade", str(run.run_dir)], ["audit", str(run.run_dir), "--out", str(tmp_path / "audit")]):
        rc, out, err = run_cli(args, env=base_cli_env(), timeout=60)
        assert rc == 0 and "internal error" not in err, (args, err)
    assert json.loads((run.run_dir / "results.json").read_text())["steps"][0]["verdict"] == "PASS"
    assert find_run_dirs(run.out) == [run.run_dir]


def test_doctests():
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module("referee.core.fstree"), optionflags=doctest.ELLIPSIS)
    assert result.attempted and not result.failed
