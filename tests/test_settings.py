"""Defaults for `referee run` from `[tool.referee]` in pyproject.toml or a referee.toml (issue 34, defaults):
found upward from the working folder to the repository root, the command line wins, and a bad file or an
unknown key is one line naming the file, the line, the key and the nearest known one."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from referee.cli.main import main
from referee.core.settings import Defaults, find_defaults, load_defaults
from tests.conftest import base_cli_env, run_cli

PLAN = """name: daily
steps:
  - id: a
    do: say where you are
    validators: [{kind: command_exit_code, command: "true"}]
"""
AGENT = "import os, sys; open(sys.argv[1], 'a').write(os.environ['REFEREE_STEP_ID'] + chr(10))"


def _cli(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("files, start, found", [
    ({"referee.toml": "out = 'r'\n"}, ".", "referee.toml"),
    ({"pyproject.toml": "[tool.referee]\nout = 'r'\n"}, "sub/deeper", "pyproject.toml"),
    # a pyproject.toml without [tool.referee] is passed over, as pytest passes over one without its table
    ({"pyproject.toml": "[project]\nname = 'x'\n", "../referee.toml": "out = 'r'\n"}, "sub", "../referee.toml"),
    ({"sub/referee.toml": "jobs = 2\n", "pyproject.toml": "[tool.referee]\n"}, "sub", "sub/referee.toml"),
    # the search stops at the repository root
    ({".git/HEAD": "", "../referee.toml": "out = 'r'\n"}, "sub", None),
])
def test_the_defaults_file_is_found_upward_to_the_repository_root(tmp_path, files, start, found):
    root = tmp_path / "top" / "repo"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / start).mkdir(parents=True, exist_ok=True)
    got = find_defaults(root / start)
    assert (None if got is None else os.path.normpath(got[0])) == \
        (None if found is None else os.path.normpath(root / found))


def test_keys_are_read_with_their_types(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.referee]\nout = 'nightly'\nagent = 'python a.py'\n"
                                             "retries = 2\njobs = 4\n")
    assert load_defaults(tmp_path) == Defaults(tmp_path / "pyproject.toml", str(tmp_path / "nightly"),
                                               "python a.py", 2, 4)


@pytest.mark.parametrize("name, text, says", [
    ("referee.toml", "out = 'r'\nretires = 2\n",
     "referee.toml:2: unknown key 'retires' in the file's top level; did you mean 'retries'?"),
    ("pyproject.toml", "[tool.referee]\njob = 3\n", "pyproject.toml:2: unknown key 'job' in [tool.referee]; "
     "did you mean 'jobs'?"),
    ("referee.toml", "jobs = 'four'\n", "referee.toml:1: 'jobs' in the file's top level: Input should be a valid "
     "integer; give a whole number of at least 1"),
    ("referee.toml", "retries = 101\n", "referee.toml:1: 'retries' in the file's top level: Input should be less "
     "than or equal to 100"),
    ("referee.toml", "out = [\n", "referee.toml: not valid TOML"),
])
def test_a_bad_defaults_file_is_a_one_line_error_naming_file_line_and_key(tmp_path, capsys, monkeypatch,
                                                                          name, text, says):
    (tmp_path / name).write_text(text)
    (tmp_path / "p.yaml").write_text(PLAN)
    monkeypatch.chdir(tmp_path)
    code, out, err = _cli(capsys, "run", "p.yaml", "--agent", "true")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("referee: error: ") and says in lines[0], lines[0]
    assert not (tmp_path / "runs").exists()  # nothing ran


def test_run_takes_out_agent_and_retries_from_the_file_and_the_flag_wins(tmp_path):
    tmp_path.chmod(0o1777)  # the agent may run as another user: it writes its log here
    (tmp_path / "calls.log").touch()
    (tmp_path / "calls.log").chmod(0o666)
    (tmp_path / "agent.py").write_text(AGENT)
    agent = f"{shlex.quote(sys.executable)} {shlex.quote(str(tmp_path / 'agent.py'))} " \
            f"{shlex.quote(str(tmp_path / 'calls.log'))}"
    (tmp_path / "pyproject.toml").write_text(f"[tool.referee]\nout = 'nightly-runs'\nagent = {agent!r}\n"
                                             "retries = 1\n")
    (tmp_path / "p.yaml").write_text(PLAN)
    code, out, err = run_cli(["run", "p.yaml"], cwd=tmp_path, env=base_cli_env())
    assert code == 0, err
    assert (tmp_path / "calls.log").read_text() == "a\n"  # the file's agent did the step
    (run,) = [d for d in (tmp_path / "nightly-runs" / "daily").iterdir() if d.is_dir() and not d.is_symlink()]
    assert json.loads((run / "manifest.json").read_text())["options"]["retries"] == 1
    # the command line wins over the file
    code, out, err = run_cli(["run", "p.yaml", "--out", "other", "--agent", "true", "--retries", "0"],
                             cwd=tmp_path, env=base_cli_env())
    assert code == 0, err
    assert (tmp_path / "other" / "daily").is_dir() and (tmp_path / "calls.log").read_text() == "a\n"
    (run,) = [d for d in (tmp_path / "other" / "daily").iterdir() if d.is_dir() and not d.is_symlink()]
    assert json.loads((run / "manifest.json").read_text())["options"] is None


def test_a_nested_working_folder_finds_the_file_above(tmp_path, capsys, monkeypatch):
    (tmp_path / "referee.toml").write_text("out = 'from-above'\n")
    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "p.yaml").write_text(PLAN)
    monkeypatch.chdir(tmp_path / "plans")
    code, out, err = _cli(capsys, "run", "p.yaml", "--agent", "true")
    assert code == 0, err
    # a relative `out` is relative to the file's folder: a run from a subfolder lands where the others are
    assert (tmp_path / "from-above" / "daily" / "latest").is_symlink() and not Path("from-above").exists()


def test_a_plan_that_names_its_own_agent_keeps_it_over_the_files(tmp_path, capsys, monkeypatch):
    (tmp_path / "referee.toml").write_text("agent = 'false'\n")  # would exit 1: the step's agent column says so
    (tmp_path / "own.yaml").write_text(PLAN.replace("name: daily", "name: own\nactor: {command: 'true'}"))
    (tmp_path / "p.yaml").write_text(PLAN)
    monkeypatch.chdir(tmp_path)
    code, out, err = _cli(capsys, "run", "own.yaml", "p.yaml", "--json")
    assert code == 0, err
    agents = {r["plan"]: r["steps"][0]["agent"]["exit_code"] for r in json.loads(out)["runs"]}
    assert agents == {"own": 0, "daily": 1}
