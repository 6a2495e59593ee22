"""Issue 29: no referee process the runner starts imports from the working directory (the agent's workspace).

An agent leaves `referee/` (a package) and `click.py` in the working directory. The Python actor's host
(`python -m referee.runner.actors.pyhost`), the plans of `referee run -j` and the CLI started with
`python -m referee` must import neither: each would write a marker file if it ran.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

PLANTED = ("referee", "click", "yaml", "pydantic")


@pytest.fixture
def workspace():
    base = Path(tempfile.mkdtemp(prefix="referee-cwd-"))
    base.chmod(0o755)
    ws = base / "ws"
    ws.mkdir()
    ws.chmod(0o1777)  # the agent's account may write it, as a workspace
    yield ws
    shutil.rmtree(base, ignore_errors=True)


def _plant(ws: Path, marker: Path) -> None:
    """What the agent would leave: modules that mark that they ran, then refuse to be imported."""
    payload = f"open({str(marker)!r}, 'a').write(__name__ + ' ')\nraise ImportError('planted')\n"
    (ws / "referee").mkdir()
    (ws / "referee" / "__init__.py").write_text(payload)
    for name in PLANTED[1:]:
        (ws / f"{name}.py").write_text(payload)
    for p in [ws / "referee", *ws.rglob("*.py")]:
        p.chmod(0o777 if p.is_dir() else 0o666)
    marker.touch()
    marker.chmod(0o666)  # whoever imports a planted module may write it, the agent's account too


def _run(args: list[str], ws: Path, env: dict) -> subprocess.CompletedProcess:
    """`referee ARGS` from the workspace, by the `referee` script: `python -m` would import the planted package
    itself (the last test)."""
    script = Path(sys.executable).parent / "referee"
    return subprocess.run([str(script), *args], cwd=ws, env=env, capture_output=True, text=True, timeout=120)


def test_the_python_actors_host_imports_nothing_from_the_working_directory(workspace, cli_env):
    """`python -m referee.runner.actors.pyhost` had the working directory first on sys.path: the planted
    `referee/` replaced referee in the agent's host."""
    marker = workspace.parent / "marker"
    agents = workspace.parent / "agents"
    agents.mkdir()
    agents.chmod(0o755)
    (agents / "my_agent.py").write_text(
        "import referee\n\n\nclass Agent(referee.Actor):\n    def act(self, ctx):\n"
        "        ctx.save('who.txt', referee.__file__)\n        return ctx.claim(True, 'done')\n")
    (agents / "my_agent.py").chmod(0o644)
    plan = agents / "plan.yaml"
    plan.write_text(json.dumps({"name": "pyhost", "actor": {"kind": "python", "target": "my_agent:Agent"},
                                "steps": [{"id": "s", "do": "x",
                                           "validators": [{"kind": "file_exists", "path": "/etc/hostname"}]}]}))
    plan.chmod(0o644)
    _plant(workspace, marker)
    proc = _run(["run", str(plan), "--out", str(workspace.parent / "out")], workspace, cli_env)
    assert marker.read_text() == "", f"planted modules ran: {marker.read_text()}\n{proc.stderr[-2000:]}"
    (who,) = list((workspace.parent / "out").rglob("agent/s/who.txt"))
    assert Path(who.read_text()).parent.parent != workspace, who.read_text()
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_plans_run_at_once_import_nothing_from_the_working_directory(workspace, cli_env):
    marker = workspace.parent / "marker"
    plans = []
    for name in ("a", "b"):
        p = workspace.parent / f"{name}.yaml"
        p.write_text(json.dumps({"name": name, "actor": {"kind": "command", "command": "true"},
                                 "steps": [{"id": "s", "do": "x",
                                            "validators": [{"kind": "file_exists", "path": "/etc/hostname"}]}]}))
        plans.append(str(p))
    _plant(workspace, marker)
    proc = _run(["run", *plans, "-j", "2", "--out", str(workspace.parent / "out")], workspace, cli_env)
    assert marker.read_text() == "", f"planted modules ran: {marker.read_text()}\n{proc.stderr[-2000:]}"
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_python_m_referee_imports_nothing_of_referees_own_from_the_working_directory(workspace, cli_env):
    """`click`, `yaml`, `pydantic` planted in the working directory: `python -m referee` takes it off sys.path
    before its first import. (A planted `referee/` there replaces the package itself before any of its code runs,
    as a planted `types.py` does for any `python -m`: docs/security-isolation.md says to use the `referee` script
    or `python -P -m referee` there; that case is not tested, since nothing referee does can hold it.)"""
    marker = workspace.parent / "marker"
    _plant(workspace, marker)
    shutil.rmtree(workspace / "referee")
    proc = subprocess.run([sys.executable, "-m", "referee", "grade", str(workspace / "no-such-run")], cwd=workspace,
                          env=cli_env, capture_output=True, text=True, timeout=60)
    assert marker.read_text() == "", f"planted modules ran: {marker.read_text()}\n{proc.stderr[-2000:]}"
    assert proc.returncode == 2 and "no-such-run" in proc.stderr, proc.stderr


def test_audit_workers_import_nothing_from_the_working_directory(workspace, cli_env):
    """The process pool's forkserver is `python -c ...`: the working directory came first on its sys.path (it
    never takes the parent's), so a `multiprocessing/` or `referee/` there ran in every worker."""
    marker = workspace.parent / "marker"
    _plant(workspace, marker)
    (workspace / "multiprocessing").mkdir()
    (workspace / "multiprocessing" / "__init__.py").write_text((workspace / "click.py").read_text())
    traces = workspace.parent / "traces.jsonl"
    traces.write_text("".join(json.dumps({
        "trace_version": 1, "run_id": f"r{i}", "task": f"delete item {i}",
        "steps": [{"action": {"name": "delete_item", "args": {"id": i}}, "observation": {"text": f"deleted {i}"}}],
        "report": "Done."}) + "\n" for i in range(400)))
    proc = _run(["audit", str(traces), "--workers", "2", "--out", str(workspace.parent / "audit.jsonl")], workspace,
                cli_env)
    assert "process pool" in proc.stderr, proc.stderr  # the pool ran: the test proves something
    assert marker.read_text() == "", f"planted modules ran: {marker.read_text()}\n{proc.stderr[-2000:]}"
    assert proc.returncode == 0, proc.stdout + proc.stderr
