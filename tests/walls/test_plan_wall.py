"""The walls `plan/` imports nothing of `runner/` and nothing of `validators/` (DESIGN.md layers): capture
and validator parameter specs and the browser `script:` schema are plan data, so loading, checking, linting
and grading a plan load no runner code, and loading one loads no validator's check."""

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


def _plan_imports_of(*packages: str) -> set[str]:
    files = sorted((SRC / "plan").rglob("*.py"))
    assert {f.name for f in files} >= {"__init__.py", "loader.py", "model.py", "captures.py", "script.py",
                                       "validators.py"}
    return {f"{f.name} imports {m}" for f in files for m in _imports(f)
            if any(m == p or m.startswith(p + ".") for p in packages)}


def test_no_module_under_plan_imports_the_runner():
    assert _plan_imports_of("referee.runner") == set()


def test_no_module_under_plan_imports_the_validators():
    assert _plan_imports_of("referee.validators") == set()


def test_lint_and_the_run_dir_reader_import_no_runner_either():
    for rel in ("lint.py", "rundir/schema.py", "audit/ingest/readers/referee_run.py", "grader/evidence.py",
                "grader/grade.py"):
        mods = _imports(SRC / rel)
        assert not [m for m in mods if m.startswith(("referee.runner", "referee.demo", "referee.cli"))], rel


def test_the_import_check_sees_every_form_of_import():
    src = ("def f():\n    from ..runner.captures import base\n    import referee.runner.app\n    from . import model\n"
           "    from .. import validators\n")
    found = imports_of(src, "referee.plan")
    assert {"referee.runner.captures", "referee.runner.captures.base", "referee.runner.app",
            "referee.plan.model", "referee.validators"} <= found


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


LOAD_ONLY = r"""
import json, sys
from referee.plan import load_plan_text
from referee.plan.validators import validator_specs
plan = load_plan_text(sys.stdin.read(), "p.yaml")
print(json.dumps({"caps": [c.params.name for c in plan.captures["a"]],
                  "refs": [tv.spec.evidence_refs(tv.params, tv.index) for tv in plan.validators["a"]],
                  "kinds": validator_specs.names(),
                  "mods": sorted(m for m in sys.modules if m.startswith(("referee.validators", "referee.runner")))}))
"""

EVERY_VALIDATOR = """
app: {url: "http://127.0.0.1:1"}
steps:
  - id: a
    do: x
    validators:
      - {kind: http_status_eq, url: /x, expected: 200}
      - {kind: http_body_contains, evidence: reply, text: hi}
      - {kind: json_path_eq, url: /j, path: "$.a", expected: 1}
      - {kind: text_contains, evidence: [a.txt, b.txt], text: x}
      - {kind: regex_match, evidence: a.txt, pattern: "x+"}
      - {kind: file_exists, path: out.txt}
      - {kind: command_exit_code, command: "true"}
      - {kind: sql_row_present, url: "sqlite:///x.db", table: t, where: {id: 1}}
      - {kind: ddb_row_present, table: t, key: {pk: a}}
      - {kind: ocr_contains, text: hi, require_change: true}
      - {kind: ocr_not_contains, evidence: shot.png, text: error}
      - {kind: aria_contains, text: hi, role: button}
      - {kind: dom_contains, text: hi}
"""


def test_loading_a_plan_with_every_validator_kind_loads_no_validator_check():
    out = subprocess.run([sys.executable, "-c", LOAD_ONLY], input=EVERY_VALIDATOR, capture_output=True, text=True,
                         check=True)
    data = json.loads(out.stdout)
    assert data["mods"] == []
    assert set(data["kinds"]) >= {"http_status_eq", "http_body_contains", "json_path_eq", "text_contains",
                                  "regex_match", "file_exists", "command_exit_code", "sql_row_present",
                                  "ddb_row_present", "ocr_contains", "ocr_not_contains", "aria_contains",
                                  "dom_contains"}
    # the implicit captures each spec asks for, and the evidence each check will read
    assert data["caps"] == ["_v0_http_status_eq", "_v2_json_path_eq", "_v5_file_exists", "_v6_command_exit_code",
                            "_v7_sql_row_present", "_v8_ddb_row_present", "_screen", "_aria", "_dom"]
    assert data["refs"] == [["_v0_http_status_eq"], ["reply"], ["_v2_json_path_eq"], ["a.txt", "b.txt"], ["a.txt"],
                            ["_v5_file_exists"], ["_v6_command_exit_code"], ["_v7_sql_row_present"],
                            ["_v8_ddb_row_present"], ["_screen"], ["shot.png"], ["_aria"], ["_dom"]]


def test_every_built_in_checker_is_its_kinds_spec_and_adds_only_check():
    from referee.plan.validators import BUILTIN_SPECS, validator_specs
    from referee.validators import checker

    assert sorted(BUILTIN_SPECS) == [n for n in validator_specs.names() if n in BUILTIN_SPECS]
    for kind, spec_cls in BUILTIN_SPECS.items():
        check = checker(kind)
        assert isinstance(check, spec_cls) and check.kind == kind
        assert check.Params is validator_specs.get(kind).Params
        own = {n for n in vars(type(check)) if not n.startswith("__")}
        assert own <= {"check", "_find"}, (kind, own)
