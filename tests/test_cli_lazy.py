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


# what an audit of an empty input must not load: the readers, the rules and the claim cues, the view, the JSON stack,
# the worker pool and the LLM client, the record and policy models and pydantic itself (each loads with the first
# record, or the first pool, that needs it)
NOT_FOR_AN_EMPTY_AUDIT = ("referee.audit.ingest.readers", "referee.audit.extract", "referee.audit.claim",
                          "referee.audit.view", "referee.core.jsonio", "referee.audit.run.parallel",
                          "referee.audit.run.workerside", "referee.audit.run.pipeline", "referee.core.llm",
                          "referee.rundir", "referee.audit.present.ci", "rich", "referee.audit.records",
                          "referee.audit.decide.policy", "pydantic")


def _audit_loads(tmp_path, traces: str, *flags: str) -> tuple[list[str], str]:
    """The modules of NOT_FOR_AN_EMPTY_AUDIT that `referee audit TRACES` loads, in a fresh interpreter, and what
    it said on stderr."""
    code = ("import sys\nfrom referee.cli.main import main\n"
            f"rc = main(['audit', {traces!r}, '--out', {str(tmp_path / 'a.jsonl')!r}, *{list(flags)!r}])\n"
            f"print(rc, sorted(m for m in sys.modules if m.startswith({NOT_FOR_AN_EMPTY_AUDIT!r})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rc, loaded = done.stdout.strip().splitlines()[-1].split(" ", 1)
    assert rc == "0", done.stdout
    return eval(loaded), done.stderr  # a list of module names, as printed


def test_an_audit_of_an_empty_file_loads_no_reader_rule_view_json_stack_or_pool(tmp_path):
    blank = tmp_path / "e.jsonl"
    blank.write_text("\n")  # what `echo > e.jsonl` makes
    assert _audit_loads(tmp_path, str(blank)) == ([], "")


def test_an_empty_audit_still_checks_a_policy_file_of_the_users(tmp_path, capsys):
    from referee.cli.main import main

    blank, bad = tmp_path / "e.jsonl", tmp_path / "mine.yaml"
    blank.write_text("\n")
    bad.write_text("policy_version: 1\nname: mine\nrequired: {delete: [nonsense]}\n")
    assert main(["audit", str(blank), "--out", str(tmp_path / "a.jsonl"), "--policy", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "mine.yaml" in err and "Traceback" not in err, err


def test_an_audit_with_one_record_loads_what_it_needs_and_still_no_pool(tmp_path):
    one = tmp_path / "t.jsonl"
    one.write_text('{"trace_version": 1, "run_id": "r", "task": "Delete note N1", "steps": [], "report": "Done."}\n')
    loaded, said = _audit_loads(tmp_path, str(one))
    assert "referee.audit.ingest.readers" in loaded and "referee.audit.extract.rules" in loaded
    assert "auditing on" not in said  # one record is less than a chunk: no pool was started to audit it
