"""The wall `plan/` imports nothing of `runner/` (DESIGN.md): capture parameter specs and the browser
`script:` schema are plan data, so loading, checking, linting and grading a plan load no runner code."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "referee"


def _imports(path: Path) -> set[str]:
    """Every module a file under src/referee imports, lazily or not."""
    package = ".".join(path.relative_to(SRC.parent).with_suffix("").parts[:-1])
    return imports_of(path.read_text(encoding="utf-8"), package)


def imports_of(source: str, package: str) -> set[str]:
    """Every module `source` (a module of `package`) imports, relative imports resolved."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return out


def test_no_module_under_plan_imports_the_runner():
    files = sorted((SRC / "plan").rglob("*.py"))
    assert {f.name for f in files} >= {"__init__.py", "loader.py", "model.py", "captures.py", "script.py"}
    bad = {f"{f.name} imports {m}" for f in files for m in _imports(f)
           if m == "referee.runner" or m.startswith("referee.runner.")}
    assert bad == set()


def test_lint_and_the_run_dir_reader_import_no_runner_either():
    for rel in ("lint.py", "rundir.py", "audit/readers/referee_run.py", "grader/evidence.py", "grader/grade.py"):
        mods = _imports(SRC / rel)
        assert not [m for m in mods if m.startswith(("referee.runner", "referee.demo", "referee.cli"))], rel


def test_the_import_check_sees_every_form_of_import():
    src = "def f():\n    from ..runner.captures import base\n    import referee.runner.app\n    from . import model\n"
    found = imports_of(src, "referee.plan")
    assert {"referee.runner.captures", "referee.runner.captures.base", "referee.runner.app",
            "referee.plan.model"} <= found


PROBE = r"""
import json, sys
import referee.plan
from referee.plan import load_plan_text
from referee.plan.script import parse_script
from referee.lint import lint_plan
plan = load_plan_text('''
steps:
  - id: a
    do: things
    script:
      - goto: /
      - click: {role: button, name: Send}
    capture:
      - {kind: http, name: reply, url: "http://127.0.0.1:1/x"}
      - {kind: sql, name: rows, url: "sqlite:///x.db", table: t, where: {id: 1}}
      - {kind: screenshot, name: shot}
      - {kind: command, name: home, command: "true", stdout_as: home.png}
    validators:
      - {kind: http_status_eq, url: "http://127.0.0.1:1/y", expected: 200}
      - {kind: ddb_row_present, table: t, key: {pk: a}}
      - {kind: file_exists, path: out.txt}
      - {kind: aria_contains, text: hi}
''', "p.yaml")
caps = {c.params.name: type(c.params).__name__ for c in plan.captures["a"]}
parse_script(plan.plan.steps[0].script)
report = lint_plan(plan)
print(json.dumps({"caps": caps, "script_ok": report.ok,
                  "mods": sorted(m for m in sys.modules if m.startswith("referee.runner")),
                  "net": sorted(m for m in sys.modules
                                if m.split(".")[0] in ("httpx", "sqlalchemy", "boto3", "playwright"))}))
"""


def test_loading_and_linting_a_plan_with_every_capture_kind_loads_no_runner_module():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    assert data["mods"] == [] and data["net"] == []
    assert data["caps"] == {"reply": "HttpParams", "rows": "SqlParams", "shot": "ScreenshotParams",
                            "home": "CommandParams", "_v0_http_status_eq": "HttpParams",
                            "_v1_ddb_row_present": "DdbParams", "_v2_file_exists": "FileParams",
                            "_aria": "AriaParams"}
    assert data["script_ok"] is True


def test_importing_referee_plan_loads_no_runner_module():
    probe = "import sys, referee.plan, referee.plan.captures, referee.plan.script\n" \
            "print([m for m in sys.modules if m.startswith('referee.runner')])"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
