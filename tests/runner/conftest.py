"""Fixtures for the runner's acceptance tests (helpers live in runner_helpers.py)."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.runner.runner_helpers import Run, do_run, write_plan


@pytest.fixture(scope="session")
def _agent_reachable_base():
    """A base folder other users can enter (pytest's own is 0700): as root the runner isolates the agent
    as another user, which must reach the test's scripts, working folder and run directories."""
    base = Path(tempfile.mkdtemp(prefix="referee-tests-"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def tmp_path(request, _agent_reachable_base):
    """Like pytest's tmp_path, but reachable by the agent's account and writable by it (the agent's
    workspace); sticky, so the agent cannot rename or replace the runner's folders in it."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", request.node.name)[:40]
    path = Path(tempfile.mkdtemp(prefix=name + "-", dir=_agent_reachable_base))
    os.chmod(path, 0o1777)
    return path


@pytest.fixture
def run_plan(tmp_path, cli_env):
    """run_plan(plan, agent=None, name="plan", extra=[], timeout=120, env=None, process=False) -> Run.

    Writes `plan` to tmp_path/<name>.yaml, runs `referee run` from tmp_path with --out tmp_path/out.
    """
    counter = {"n": 0}

    def _run(plan, *, agent: str | None = None, name: str = "plan", extra=(), timeout: float = 120,
             env: dict | None = None, process: bool = False) -> Run:
        counter["n"] += 1
        path = write_plan(tmp_path / f"{name}.yaml", plan)
        out = tmp_path / f"out{counter['n']}"
        return do_run(path, out=out, cwd=tmp_path, env=env if env is not None else cli_env, agent=agent,
                      extra=list(extra), timeout=timeout, process=process)

    return _run
