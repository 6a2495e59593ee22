"""An agent that takes what the host has: `actor.limits` holds it to the plan's memory, CPU, file size and
process count, under every isolation mode, and it cannot raise them again. Controls without limits show
each attack is real. The limits never decide a verdict: the validators over the evidence do.
"""

from __future__ import annotations

import os
import shutil

import pytest

from tests.conftest import run_cli
from tests.runner.runner_helpers import assert_one_line_error, write_plan
from tests.runner.test_runner_isolation import HOSTILE, IS_ROOT, isolation_of, mode_param

PYTHON = "/usr/bin/python3"  # the system's, which the agent's account can run (the venv's may be out of its reach)
pytestmark = pytest.mark.skipif(not os.access(PYTHON, os.X_OK), reason=f"{PYTHON} is not here")
ALL_MODES = [mode_param(m) for m in ("user", "bwrap")] + [pytest.param("none", id="none")]


def hog(tmp_path) -> str:
    """The hostile agent, copied where the agent's account can read it; its command line."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    bin_dir.chmod(0o755)
    shutil.copyfile(HOSTILE / "hog.py", bin_dir / "hog.py")
    (bin_dir / "hog.py").chmod(0o644)
    return f"{PYTHON} {bin_dir / 'hog.py'}"


def plan(tmp_path, mode: str, limits: dict | None, *steps: dict, timeout_s: float = 60) -> dict:
    actor = {"kind": "command", "command": hog(tmp_path), "isolation": mode, "timeout_s": timeout_s}
    if limits is not None:
        actor["limits"] = limits
    return {"name": "hog", "actor": actor, "steps": list(steps)}


MEMORY = {"id": "memory", "do": "Allocate 300 MB.",
          "validators": [{"kind": "text_contains", "evidence": "out.txt", "text": "allocated"}]}


@pytest.mark.parametrize("mode", ALL_MODES)
def test_a_memory_limit_stops_an_agent_that_allocates_past_it(tmp_path, run_plan, mode):
    run = run_plan(plan(tmp_path, mode, {"memory_mb": 100}, MEMORY))
    assert run.run_dir is not None, run.explain()
    assert isolation_of(run)["limits"] == {"memory_mb": 100}
    assert not (run.run_dir / "agent/memory/out.txt").exists(), "the agent allocated past its limit"
    assert "MemoryError" in (run.run_dir / "agent/memory/stderr.txt").read_text()
    assert run.verdict("memory") == "ERROR", run.explain()  # its evidence file is missing: the grader cannot look
    assert run.step("memory")["claim"]["pass"] is True  # it claimed pass all the same


def test_control_without_a_limit_the_same_agent_allocates(tmp_path, run_plan):
    run = run_plan(plan(tmp_path, "none", None, MEMORY))
    assert run.verdict("memory") == "PASS", run.explain()
    assert isolation_of(run)["limits"] is None


@pytest.mark.parametrize("mode", ALL_MODES)
def test_a_cpu_limit_ends_a_spinning_agent_long_before_its_timeout(tmp_path, run_plan, mode):
    run = run_plan(plan(tmp_path, mode, {"cpu_s": 1},
                        {"id": "cpu", "do": "Think hard.",
                         "validators": [{"kind": "command_exit_code", "command": "true"}]}, timeout_s=60))
    assert run.run_dir is not None, run.explain()
    record = run.manifest["steps"]["cpu"]
    assert not record["actor_timed_out"], record
    assert record["actor_error"] == "the agent reached its CPU limit (actor.limits.cpu_s: 1)", record
    assert run.seconds < 40, f"the step ran {run.seconds:.1f} s: the limit did not end it"
    # the agent's death decides nothing: the runner's own capture holds, so the step passes
    assert run.verdict("cpu") == "PASS", run.explain()


@pytest.mark.parametrize("mode", ALL_MODES)
def test_a_file_size_limit_caps_what_the_agent_writes(tmp_path, run_plan, mode):
    step = {"id": "file", "do": "Write a big file.",
            "validators": [{"kind": "command_exit_code", "command": "true"}]}
    run = run_plan(plan(tmp_path, mode, {"file_mb": 1}, step))
    assert run.run_dir is not None, run.explain()
    big = run.run_dir / "agent/file/big.bin"
    assert big.exists() and big.stat().st_size <= 1 << 20, big.stat().st_size if big.exists() else "missing"
    assert "File too large" in (run.run_dir / "agent/file/stderr.txt").read_text()


@pytest.mark.parametrize("mode", ALL_MODES)
def test_the_agent_cannot_raise_its_limits(tmp_path, run_plan, mode):
    step = {"id": "raise", "do": "Lift your limits.",
            "validators": [{"kind": "text_contains", "evidence": "out.txt", "text": "refused"}]}
    run = run_plan(plan(tmp_path, mode, {"memory_mb": 400}, step))
    assert run.verdict("raise") == "PASS", f"{(run.run_dir / 'agent/raise/out.txt').read_text()}\n{run.explain()}"


def test_control_without_limits_nothing_holds_the_agent_back(tmp_path, run_plan):
    step = {"id": "raise", "do": "Lift your limits.",
            "validators": [{"kind": "text_contains", "evidence": "out.txt", "text": "raised"}]}
    run = run_plan(plan(tmp_path, "none", None, step))
    assert run.verdict("raise") == "PASS", run.explain()


FORK = {"id": "fork", "do": "Start helpers.", "validators": [{"kind": "command_exit_code", "command": "true"}]}


@pytest.mark.skipif(not IS_ROOT, reason="user isolation needs the runner to be root")
def test_a_process_limit_caps_a_fork_storm_under_user_isolation(tmp_path, run_plan):
    run = run_plan(plan(tmp_path, "user", {"processes": 8}, FORK))
    assert run.run_dir is not None, run.explain()
    assert isolation_of(run)["limits"] == {"processes": 8}
    forks = int((run.run_dir / "agent/fork/forks.txt").read_text())
    assert forks < 8, f"the agent started {forks} processes past a limit of 8 (itself included)"
    control = run_plan(plan(tmp_path, "user", None, FORK))
    assert int((control.run_dir / "agent/fork/forks.txt").read_text()) == 40


@pytest.mark.parametrize("mode", [mode_param("bwrap"), pytest.param("none", id="none")])
def test_a_process_limit_is_left_out_where_it_cannot_hold_and_the_record_says_so(tmp_path, run_plan, mode):
    run = run_plan(plan(tmp_path, mode, {"processes": 8, "memory_mb": 500}, FORK))
    iso = isolation_of(run)
    assert iso["limits"] == {"memory_mb": 500}, iso
    assert "actor.limits.processes left out: it holds only under user isolation" in iso["note"], iso


@pytest.mark.parametrize("limits, words", [({"memory_mb": 0}, "greater than 0"),
                                           ({"memory": 100}, "memory"),
                                           ({"cpu_s": "lots"}, "cpu_s")])
def test_bad_limits_are_a_one_line_plan_error(tmp_path, cli_env, limits, words):
    path = write_plan(tmp_path / "bad.yaml", plan(tmp_path, "none", limits, FORK))
    rc, out, err = run_cli(["check", str(path)], cwd=tmp_path, env=cli_env)
    line = assert_one_line_error(rc, out, err)
    assert "bad.yaml" in line and "limits" in line and words in line, line
