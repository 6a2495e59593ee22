"""`referee schema`: JSON Schemas of referee's files, for editors and CI."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.group("schema", context_settings={"help_option_names": ["-h", "--help"]})
def schema_group() -> None:
    """Print the JSON Schema of a referee file format."""


@schema_group.command("plan")
@click.option("-o", "--output", "--out", "output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the schema to this file instead of stdout.")
def plan_cmd(output: Path | None) -> None:
    """Plan v1, with every installed validator, capture and script action.

    \b
    referee schema plan > plan.schema.json
    then put this first line in a plan for the YAML language server (VS Code's YAML extension):
    # yaml-language-server: $schema=./plan.schema.json
    """
    from referee.plan.schema import plan_schema

    text = json.dumps(plan_schema(), indent=2) + "\n"
    if output is None:
        click.echo(text, nl=False)
        return
    from referee.core.fsutil import atomic_write_text

    atomic_write_text(output, text)
    click.echo(f"wrote {output}", err=True)


COMMANDS = [schema_group]
