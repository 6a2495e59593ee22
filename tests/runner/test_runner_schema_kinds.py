"""`referee schema plan` checks real plans the way an editor would; `referee kinds` lists everything a plan can name."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

import referee

DEMO = Path(referee.__file__).parent / "demo"
REFEREE = [sys.executable, "-c", "import sys; from referee.cli.main import main; sys.exit(main())"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*REFEREE, *args], capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def validator():
    r = _cli("schema", "plan")
    assert r.returncode == 0, r.stderr
    schema = json.loads(r.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("plan", ["todo-api.yaml", "todo-browser.yaml"])
def test_shipped_plans_are_valid_against_the_schema(validator, plan):
    errors = list(validator.iter_errors(yaml.safe_load((DEMO / plan).read_text())))
    assert errors == []


@pytest.mark.parametrize("mistake", [
    {"validators": [{"kind": "http_status_eq", "url": "/x", "expect": 200}]},      # misspelt parameter
    {"validators": [{"kind": "http_status_equals", "url": "/x", "expected": 200}]},  # unknown kind
    {"capture": [{"kind": "http", "name": "x"}]},                                   # http capture without url
    {"timeout_s": "soon"},
])
def test_plan_mistakes_are_caught_by_the_schema(validator, mistake):
    plan = {"name": "p", "steps": [{"id": "s1", "do": "x", **mistake}]}
    assert list(validator.iter_errors(plan)), mistake
    # and the plan loader refuses the same plan: the schema and `check` agree
    from referee.errors import PlanError
    from referee.plan.loader import load_plan_text

    with pytest.raises(PlanError):
        load_plan_text(yaml.safe_dump(plan), "p.yaml")


@pytest.mark.parametrize("script", [[{"clik": "Send"}], [{"fill": {"label": "Title"}}], [{"goto": ""}]])
def test_script_mistakes_are_caught_by_the_schema(validator, script):
    plan = {"name": "p", "actor": {"kind": "browser"}, "steps": [{"id": "s1", "do": "x", "script": script}]}
    assert list(validator.iter_errors(plan)), script
    from referee.plan.script import parse_script

    with pytest.raises(ValueError):
        parse_script(script)


def test_schema_output_file(tmp_path):
    out = tmp_path / "plan.schema.json"
    r = _cli("schema", "plan", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["title"] == "referee plan v1"
    again = tmp_path / "again.json"  # --out, as audit and run spell it
    r = _cli("schema", "plan", "--out", str(again))
    assert r.returncode == 0 and again.read_bytes() == out.read_bytes(), r.stderr


def test_kinds_lists_actors_script_actions_and_plan_fields():
    r = _cli("kinds", "--json")
    assert r.returncode == 0, r.stderr
    table = json.loads(r.stdout)
    assert {"command", "python", "browser"} <= set(table["actors"])
    assert {"goto", "click", "fill", "press", "select", "wait_for"} <= set(table["script actions"])
    assert "value" in table["script actions"]["fill"]["params"]
    assert any(p.startswith("ready_timeout_s") for p in table["plan fields"]["app"]["params"])
    assert any(p.startswith("kind=") for p in table["plan fields"]["actor"]["params"])
    human = _cli("kinds").stdout
    assert "script actions:" in human and "plan fields:" in human


def test_every_cli_option_has_help_text():
    import click

    from referee.cli.main import cli

    missing = []

    def walk(cmd: click.Command, path: str) -> None:
        for p in cmd.params:
            if isinstance(p, click.Option) and not p.help and p.name not in ("help", "version"):
                missing.append(f"{path} {p.opts[0]}")
        if isinstance(cmd, click.Group):  # the top group loads its commands when asked (cli.main.LazyGroup)
            ctx = click.Context(cmd)
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), f"{path} {name}")

    walk(cli, "referee")
    assert missing == []
