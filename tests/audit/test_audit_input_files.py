"""`referee audit`, `replay`, `lint` and `check` given a FIFO: a one-line error naming it, never a hang."""

from __future__ import annotations

import os

import pytest

from tests.conftest import base_cli_env, run_cli
from tests.runner.runner_helpers import assert_one_line_error

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs")

HANG = 60


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "traces.jsonl"
    os.mkfifo(path)
    return path


def test_audit_of_a_fifo_is_a_one_line_error(fifo, tmp_path):
    rc, out, err = run_cli(["audit", fifo, "--out", tmp_path / "a.jsonl", "--no-progress"], env=base_cli_env(),
                           timeout=HANG)
    line = assert_one_line_error(rc, out, err)
    assert str(fifo) in line and "not a regular file" in line, line


def test_audit_of_a_folder_holding_a_fifo_reads_the_rest(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    os.mkfifo(folder / "traces.jsonl")
    (folder / "good.jsonl").write_text('{"run_id": "r1", "task": "Say hi.", "steps": [], "report": "Done."}\n')
    rc, out, err = run_cli(["audit", folder, "--out", tmp_path / "a.jsonl", "--no-progress"],
                           env=base_cli_env(), timeout=HANG)
    assert rc == 0, out + err
    assert len((tmp_path / "a.jsonl").read_text().splitlines()) == 1


@pytest.mark.parametrize("cmd", [["replay"], ["check"], ["lint"], ["audit", "--format", "openai-chat"]])
def test_other_commands_given_a_fifo_say_so_in_one_line(fifo, tmp_path, cmd):
    args = [*cmd, fifo] + (["--out", tmp_path / "a.jsonl", "--no-progress"] if cmd[0] == "audit" else [])
    rc, out, err = run_cli(args, env=base_cli_env(), timeout=HANG)
    line = assert_one_line_error(rc, out, err)
    assert str(fifo) in line and "not a regular file" in line, line


def test_lint_with_a_fifo_control_says_so_in_one_line(tmp_path):
    plan = tmp_path / "p.yaml"
    plan.write_text("steps:\n  - id: s\n    do: x\n    validators: [{kind: text_contains, evidence: x, text: hi}]\n")
    os.mkfifo(tmp_path / "control.png")
    rc, out, err = run_cli(["lint", plan, "--control", tmp_path / "control.png"], env=base_cli_env(), timeout=HANG)
    line = assert_one_line_error(rc, out, err)
    assert "control.png" in line and "not a regular file" in line, line


def test_audit_whose_out_file_is_a_fifo_says_so_in_one_line(fifo, tmp_path):
    good = tmp_path / "good.jsonl"
    good.write_text('{"run_id": "r1", "task": "Say hi.", "steps": [], "report": "Done."}\n')
    rc, out, err = run_cli(["audit", good, "--out", fifo, "--no-progress"], env=base_cli_env(), timeout=HANG)
    line = assert_one_line_error(rc, out, err)
    assert str(fifo) in line and "not a regular file" in line, line
