"""The run directory's on-disk records (manifest, claims), shared by the runner that writes and the grader that reads."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from referee.errors import EvidenceError, UsageError

Phase = Literal["before", "after"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FileEntry(_Model):
    """One evidence file: who captured it, when, and its SHA-256 at capture time."""

    path: str
    step: str
    phase: Phase
    captured_by: Literal["runner", "agent"]
    capture: str | None = None
    kind: str
    sha256: str
    size: int
    time: str
    primary: bool = True
    error: str | None = None  # the capture failed; this file records why


class StepRecord(_Model):
    status: Literal["started", "done"] = "started"
    started: str | None = None
    finished: str | None = None
    actor_exit: int | None = None
    actor_timed_out: bool = False
    actor_error: str | None = None


class Manifest(_Model):
    manifest_version: Literal[1] = 1
    plan: str
    actor: str | None = None
    error: str | None = None  # why the run stopped early (app would not start, agent missing, ...)
    started: str | None = None
    finished: str | None = None
    steps: dict[str, StepRecord] = Field(default_factory=dict)
    files: list[FileEntry] = Field(default_factory=list)


def utcnow() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def read_manifest(run_dir: Path) -> Manifest:
    """Load manifest.json; a missing or corrupt one is an EvidenceError naming the file."""
    path = Path(run_dir) / "manifest.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError("no manifest.json: not a referee run directory", file=str(run_dir),
                            fix="pass the folder `referee run` printed") from None
    except (OSError, ValueError) as exc:
        raise EvidenceError(f"manifest.json is unreadable: {exc}", file=str(path)) from None
    try:
        return Manifest.model_validate(data)
    except Exception as exc:
        raise EvidenceError(f"manifest.json does not validate: {str(exc).splitlines()[0]}", file=str(path)) from None


def read_claims(run_dir: Path) -> dict[str, Any]:
    """Load claims.json; missing or corrupt -> no claims (a claim never decides a verdict anyway)."""
    try:
        data = json.loads((Path(run_dir) / "claims.json").read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}
