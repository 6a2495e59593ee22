"""Fixtures for the runner's acceptance tests (helpers live in runner_helpers.py)."""

from __future__ import annotations

import pytest

from tests.runner.runner_helpers import Run, do_run, write_plan


@pytest.fixture
def run_plan(tmp_path, cli_env):
    """run_plan(plan, agent=None, name="plan", extra=[], timeout=120, env=None) -> Run.

    Writes `plan` to tmp_path/<name>.yaml, runs `referee run` from tmp_path with --out tmp_path/out.
    """
    counter = {"n": 0}

    def _run(plan, *, agent: str | None = None, name: str = "plan", extra=(), timeout: float = 120,
             env: dict | None = None) -> Run:
        counter["n"] += 1
        path = write_plan(tmp_path / f"{name}.yaml", plan)
        out = tmp_path / f"out{counter['n']}"
        return do_run(path, out=out, cwd=tmp_path, env=env if env is not None else cli_env, agent=agent,
                      extra=list(extra), timeout=timeout)

    return _run
