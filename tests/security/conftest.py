"""Fixtures for the security acceptance tests (issue 9: agents that fight the grader).

Every test here is marked `security` (select with `pytest tests/security` or `-m security`). The
threat model: the plan, the runner and its user are trusted; the agent and everything it writes
are not. The hostile agent (`agents/hostile.py`) is a real program run by the real CLI; it lives in
a folder any user can read, because an isolated agent runs as another user.

Fixtures:

- ``sec``: a `Sec` workspace (base folder, --out folder, hostile agent command, `run(plan)`);
  processes the test named with `sec.token` are killed afterwards, and the folder removed.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from tests.security.sec_helpers import cli, cli_env, hostile_cmd, hung, kill_token, make_base, remove_tree, run_dirs

HERE = Path(__file__).resolve().parent


def pytest_configure(config):
    config.addinivalue_line("markers", "security: issue 9, agents that fight the grader (tests/security)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.security)
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(120))


@dataclass
class RunOutcome:
    rc: int | None
    stdout: str
    stderr: str
    seconds: float
    run_dir: Path | None
    args: list = field(default_factory=list)

    @property
    def hung(self) -> bool:
        return self.rc is None

    def hang_message(self) -> str:
        return hung(self.rc, self.args, self.seconds, self.stdout, self.stderr)

    @property
    def results(self) -> dict:
        import json

        assert self.run_dir is not None and (self.run_dir / "results.json").exists(), self.explain()
        return json.loads((self.run_dir / "results.json").read_text())

    def step(self, sid: str) -> dict:
        for s in self.results["steps"]:
            if s["id"] == sid:
                return s
        raise AssertionError(f"no step {sid!r}: {self.explain()}")

    def verdict(self, sid: str) -> str:
        return self.step(sid)["verdict"]

    def explain(self) -> str:
        body = ""
        if self.run_dir is not None and (self.run_dir / "results.json").exists():
            body = (self.run_dir / "results.json").read_text()[:4000]
        return (f"rc={self.rc} ({self.seconds:.1f} s) run_dir={self.run_dir}\nstdout: {self.stdout[-2000:]}\n"
                f"stderr: {self.stderr[-2000:]}\nresults: {body}")


class Sec:
    """One test's workspace: a world-readable base folder with the agents, and the CLI."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.out = base / "out"
        self.token = "refsec-" + uuid.uuid4().hex[:12]
        self.env = cli_env()
        self._n = 0

    @property
    def agent(self) -> str:
        return hostile_cmd(self.base, self.out)

    def write_plan(self, plan, name: str = "plan") -> Path:
        path = self.base / f"{name}.yaml"
        path.write_text(plan if isinstance(plan, str) else yaml.safe_dump(plan, sort_keys=False, width=1000))
        path.chmod(0o644)
        return path

    def run(self, plan, *, agent: str | None = "default", env: dict | None = None, timeout: float = 60,
            extra=(), name: str = "plan", process: bool = False) -> RunOutcome:
        """`referee run PLAN --out OUT [--agent hostile]`; the newest run directory comes back."""
        self._n += 1
        path = self.write_plan(plan, name=f"{name}{self._n}")
        args = ["run", path, "--out", self.out]
        if agent == "default":
            agent = self.agent
        if agent is not None:
            args += ["--agent", agent]
        args += list(extra)
        before = set(run_dirs(self.out))
        rc, so, se, dt = cli(args, cwd=self.base, env=env if env is not None else self.env, timeout=timeout,
                             process=process)
        new = [d for d in run_dirs(self.out) if d not in before]
        newest = max(new, key=lambda p: p.name) if new else None
        return RunOutcome(rc, so, se, dt, newest, args)

    def cli(self, *args, timeout: float = 60, env: dict | None = None, preexec=None, process: bool = False):
        return cli(list(args), cwd=self.base, env=env if env is not None else self.env, timeout=timeout,
                   preexec=preexec, process=process)


@pytest.fixture
def sec():
    base = make_base()
    s = Sec(base)
    try:
        yield s
    finally:
        kill_token(s.token)
        remove_tree(base)
