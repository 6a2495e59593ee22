"""Captures the runner (never the agent) takes before and after a step, stored as evidence files."""

from referee.runner.captures.base import (  # noqa: F401
    CaptureContext,
    CaptureFailed,
    CaptureKind,
    CaptureParams,
    captures,
    register,
    write_failure,
)


def load_builtin() -> None:
    """Import the built-in capture modules so their kinds register."""
    import importlib

    for mod in ("http", "command", "rows", "files", "screens", "devices"):
        try:
            importlib.import_module(f"referee.runner.captures.{mod}")
        except ModuleNotFoundError as exc:
            if exc.name != f"referee.runner.captures.{mod}":
                raise
