"""`referee run` in-process for the issue 34 tests: the CLI's `main`, its printed output, the run directory it made."""

from __future__ import annotations

import contextlib
import io
import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from referee.cli.main import main


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str
    run_dir: Path | None

    @property
    def results(self) -> dict:
        assert self.run_dir is not None, f"no run directory\nstdout: {self.out}\nstderr: {self.err}"
        return json.loads((self.run_dir / "results.json").read_text())

    def step(self, sid: str) -> dict:
        return next(s for s in self.results["steps"] if s["id"] == sid)

    def junit_text(self, sid: str) -> str:
        """Every message and text of the step's testcase in junit.xml, as a CI server reads them."""
        assert self.run_dir is not None
        case = next(c for c in ET.parse(self.run_dir / "junit.xml").iter("testcase") if c.get("name") == sid)
        return " ".join([*(e.get("message") or "" for e in case.iter()), *(e.text or "" for e in case.iter())])

    def junit_properties(self) -> dict[str, str]:
        assert self.run_dir is not None
        return {p.get("name", ""): p.get("value", "") for p in ET.parse(self.run_dir / "junit.xml").iter("property")}


def referee(cwd: Path, *args, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Any referee command in-process from `cwd`, plain wide console output (no colour, no cut cells):
    (exit code, stdout, stderr). Usable from a module-scoped fixture (no capsys)."""
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        mp.chdir(cwd)
        mp.setenv("NO_COLOR", "1")
        mp.setenv("COLUMNS", "1000")
        for k, v in (env or {}).items():
            mp.setenv(k, v)
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def run_in_process(cwd: Path, plan: Path, out: Path, *extra: str, env: dict[str, str] | None = None) -> Ran:
    """`referee run PLAN --out OUT ...` in-process, from `cwd` (with `env` added); the newest run directory."""
    code, so, se = referee(cwd, "run", plan, "--out", out, *extra, env=env)
    dirs = sorted(p for p in out.glob("*/*") if p.is_dir() and not p.is_symlink())
    return Ran(code, so, se, dirs[-1] if dirs else None)


def home(base: Path) -> Path:
    """A folder under the agent-reachable base, writable by the agent's account (sticky, as tmp_path is here)."""
    import os
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="issue34-", dir=base))
    os.chmod(path, 0o1777)
    return path
