"""Isolation modes as pytest params for the security tests: `user` and `bwrap`, each skipped (saying why)
where this host cannot isolate so; and the command line of the leaky agent (`agents/leaky.py`)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from tests.security.sec_helpers import AGENT_PY


def mode_param(mode: str):
    """A pytest param for an isolation mode, skipped where it cannot work here."""
    from referee.runner.isolation import bwrap_problem

    why = None
    if mode == "user" and os.geteuid() != 0:
        why = "user isolation needs the runner to be root"
    elif mode == "bwrap":
        why = bwrap_problem()
    return pytest.param(mode, id=mode, marks=[pytest.mark.skipif(why is not None, reason=why or "")])


MODES = [mode_param("user"), mode_param("bwrap")]


def leaky_cmd(base: Path) -> str:
    """The leaky agent's command line (a system interpreter the agent's account can run)."""
    return " ".join(shlex.quote(x) for x in (AGENT_PY, str(base / "agents" / "leaky.py")))


def outputs_holding(run_dir: Path, console: str, needles: list[str]) -> dict[str, list[str]]:
    """{needle: [the run's files (all of them) whose bytes or name hold it, and 'console']}."""
    from tests.security.sec_helpers import files_containing

    hits = files_containing(run_dir, needles)
    for n in needles:
        hits.setdefault(n, []).extend(f"name: {p.relative_to(run_dir)}" for p in run_dir.rglob(f"*{n}*"))
        if n in console:
            hits[n].append("console")
    return {n: where for n, where in hits.items() if where}
