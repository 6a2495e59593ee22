"""The CLI loads a command's module only when that command runs, and `referee audit` never loads the runner."""

from __future__ import annotations

import importlib
import subprocess
import sys

from referee.cli.main import LAZY_COMMANDS


def test_every_command_is_where_the_lazy_table_says():
    modules = sorted(set(LAZY_COMMANDS.values()))
    found = {}
    for modname in modules:
        for cmd in importlib.import_module(f"referee.cli.{modname}").COMMANDS:
            found[cmd.name] = modname
    assert found == LAZY_COMMANDS


def test_an_audit_imports_neither_the_runner_nor_the_plan(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    code = ("import sys\nfrom referee.cli.main import main\n"
            f"rc = main(['audit', {str(empty)!r}, '--out', {str(tmp_path / 'a.jsonl')!r}, '--no-progress'])\n"
            "print(rc, sorted(m for m in sys.modules if m.startswith(('referee.plan', 'referee.runner', "
            "'referee.cli.runner_cmds', 'referee.cli.eval_cmds', 'referee.evaluation'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "0 []"


def test_an_unknown_command_is_told_the_nearest_of_all_commands():
    done = subprocess.run([sys.executable, "-m", "referee.cli.main", "replya"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip() == ("referee: error: No such command 'replya'. Did you mean 'replay'?; "
                                   "see `referee --help`")
