"""Defaults for `referee run` from a file: `[tool.referee]` in `pyproject.toml`, or a `referee.toml`.

Found as pytest finds its configuration: from the working folder upward, in each folder `referee.toml`
first (its keys at the top level), then a `pyproject.toml` that has a `[tool.referee]` table (one
without it is passed over), stopping after the folder that holds `.git` (the repository root) or at
the file system's root. Keys: `out`, `agent`, `retries`, `jobs`; a flag on the command line wins.
A file that does not parse, an unknown key or a value of the wrong type is a UsageError naming the
file, the line and the key (and the nearest known one).
"""

from __future__ import annotations

import difflib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from referee.errors import UsageError

__all__ = ["KEYS", "Defaults", "find_defaults", "load_defaults"]

REFEREE_TOML = "referee.toml"
PYPROJECT = "pyproject.toml"
MAX_BYTES = 1 << 20


class _Keys(BaseModel):
    """What a defaults file may set (each one a `referee run` option)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    out: str | None = Field(None, min_length=1)
    agent: str | None = Field(None, min_length=1)
    retries: int | None = Field(None, ge=0, le=100)
    jobs: int | None = Field(None, ge=1)


KEYS: tuple[str, ...] = tuple(_Keys.model_fields)


@dataclass(frozen=True)
class Defaults:
    """The defaults found (None: not set) and the file they came from (None: no file)."""

    file: Path | None = None
    out: str | None = None
    agent: str | None = None
    retries: int | None = None
    jobs: int | None = None


def find_defaults(start: Path) -> tuple[Path, str] | None:
    """The defaults file that applies in the folder `start`, and its table's name (`tool.referee` in a
    pyproject.toml, "" in a referee.toml), or None."""
    folder = Path(start).absolute()
    for here in (folder, *folder.parents):
        if (here / REFEREE_TOML).is_file():
            return here / REFEREE_TOML, ""
        pyproject = here / PYPROJECT
        if pyproject.is_file() and _has_tool_table(pyproject):
            return pyproject, "tool.referee"
        if (here / ".git").exists():
            break
    return None


def _has_tool_table(path: Path) -> bool:
    """Whether a pyproject.toml has `[tool.referee]`: a cheap look first, the parse (and its errors) later."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")[:MAX_BYTES]
    except OSError:
        return False
    return re.search(r"^\s*\[\s*tool\s*\.\s*referee\s*\]", text, re.M) is not None


def _line_of(text: str, key: str) -> str | None:
    m = re.search(rf"^\s*{re.escape(key)}\s*=", text, re.M)
    return f"{text.count(chr(10), 0, m.start()) + 1}" if m else None


def load_defaults(start: Path | None = None) -> Defaults:
    """The defaults for a `referee run` started in `start` (default: the working folder)."""
    found = find_defaults(Path.cwd() if start is None else start)
    if found is None:
        return Defaults()
    path, table = found
    try:
        raw = path.read_bytes()[:MAX_BYTES]
        text = raw.decode("utf-8")
        doc: Any = tomllib.loads(text)
    except OSError as exc:
        raise UsageError(f"cannot read the defaults file: {exc.strerror or exc}", file=str(path)) from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"not valid TOML: {exc}", file=str(path), fix="fix the file, or remove it") from None
    where = "[tool.referee]" if table else "the file's top level"
    if table:
        doc = doc.get("tool", {}).get("referee")
        if not isinstance(doc, dict):
            return Defaults()
    for key in doc:
        if key not in KEYS:
            near = difflib.get_close_matches(str(key), KEYS, n=1, cutoff=0.5)
            raise UsageError(f"unknown key '{key}' in {where}", file=str(path), place=_line_of(text, str(key)),
                             fix=(f"did you mean '{near[0]}'? " if near else "") + f"known keys: {', '.join(KEYS)}")
    try:
        keys = _Keys.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = str(err["loc"][0]) if err["loc"] else "?"
        raise UsageError(f"'{key}' in {where}: {err['msg']}", file=str(path), place=_line_of(text, key),
                         fix=_hint(key)) from None
    found_keys = keys.model_dump()
    if keys.out is not None:  # relative to the file, as pytest reads its paths: a run from a subfolder lands there too
        found_keys["out"] = str(path.parent / Path(keys.out).expanduser())
    return Defaults(path, **found_keys)


def _hint(key: str) -> str:
    return {"out": "give a folder, e.g. out = \"runs\"", "agent": "give a command, e.g. agent = \"python agent.py\"",
            "retries": "give a whole number from 0 to 100, e.g. retries = 1",
            "jobs": "give a whole number of at least 1, e.g. jobs = 4"}.get(key, f"known keys: {', '.join(KEYS)}")
