"""The walls of DESIGN.md, checked on the code itself: static imports, and what a real grade loads."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import run_cli

SRC = Path(__file__).resolve().parents[2] / "src" / "referee"

NETWORK_MODULES = ("httpx", "requests", "urllib.request", "http.client", "sqlalchemy", "boto3", "botocore",
                   "playwright", "socket")


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at any depth (lazy imports inside functions count too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def files_under(*parts: str) -> list[Path]:
    return sorted((SRC.joinpath(*parts)).rglob("*.py"))


def offending(files: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    bad = []
    for f in files:
        for mod in imported_modules(f):
            if any(mod == fb or mod.startswith(fb + ".") for fb in forbidden):
                bad.append(f"{f.name} imports {mod}")
    return bad


def test_the_library_never_imports_the_cli():
    # referee/__main__.py is `python -m referee`: the CLI's own entry point, which imports the CLI and nothing else
    lib = [f for f in SRC.rglob("*.py") if "cli" not in f.relative_to(SRC).parts and f != SRC / "__main__.py"]
    assert lib, "no library files found"
    # a file without the word `cli` cannot import referee.cli (`import referee.cli`, `from referee import cli`, ...):
    # only those with it are parsed (6 of ~220, not 2 MB of source)
    may = [f for f in lib if re.search(r"\bcli\b", f.read_text(encoding="utf-8"))]
    assert offending(may, ("referee.cli",)) == []
    assert imported_modules(SRC / "__main__.py") <= {"sys", "referee.cli.main", "referee.cli.main.main"}


def test_python_dash_m_referee_is_the_command_line():
    got = subprocess.run([sys.executable, "-m", "referee", "audit", "--help"], capture_output=True, text=True,
                         timeout=60)
    assert got.returncode == 0, got.stderr
    assert "Usage:" in got.stdout and "--out" in got.stdout


def test_grader_and_validators_never_import_actors_launcher_captures_or_network():
    files = files_under("grader") + files_under("validators")
    assert len(files) >= 5
    forbidden = ("referee.runner", "referee.demo") + NETWORK_MODULES
    assert offending(files, forbidden) == []


def test_the_checker_sees_a_forbidden_import(tmp_path):
    # the wall check itself must be able to fail
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    import httpx\n    from referee.runner.app import App\n")
    found = offending([bad], ("referee.runner",) + NETWORK_MODULES)
    assert "bad.py imports httpx" in found and "bad.py imports referee.runner.app" in found


def test_grading_a_real_run_loads_no_runner_and_no_network_module(tmp_path):
    """Run a real plan, then grade it in a fresh interpreter and list what got imported."""
    agent = tmp_path / "agent.py"
    agent.write_text("import os, json\n"
                     "open(os.path.join(os.environ['REFEREE_AGENT_DIR'], 'out.txt'), 'w').write('hello')\n"
                     "json.dump({'pass': True}, open(os.environ['REFEREE_CLAIM_FILE'], 'w'))\n")
    (tmp_path / "plan.yaml").write_text(
        "steps:\n  - id: a\n    do: x\n    capture:\n      - {kind: command, name: echo, command: 'echo hi'}\n"
        "    validators:\n      - {kind: text_contains, evidence: out.txt, text: hello}\n"
        "      - {kind: command_exit_code, evidence: echo}\n")
    # the run in this process (what it imports is not the question); the grade below in a fresh interpreter
    code, _out, err = run_cli(["run", "plan.yaml", "--agent", f"{sys.executable} agent.py", "--out", "runs"],
                              cwd=tmp_path)
    assert code == 0, err
    run_dir = next(p for p in (tmp_path / "runs" / "plan").iterdir() if p.is_dir() and not p.is_symlink())
    probe = ("import json, sys\nfrom referee.grader import grade\nr = grade(sys.argv[1])\n"
             "print(json.dumps({'summary': r.summary, 'modules': sorted(sys.modules)}))\n")
    out = subprocess.run([sys.executable, "-c", probe, str(run_dir)], capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    assert data["summary"]["PASS"] == 1
    loaded = data["modules"]
    assert [m for m in loaded if m.startswith("referee.runner") or m.startswith("referee.cli")] == []
    assert [m for m in loaded if m.split(".")[0] in ("httpx", "sqlalchemy", "boto3", "playwright")] == []
