"""Typed validators: each declares what the runner must capture and checks persisted evidence only."""

from referee.validators.base import (  # noqa: F401
    CaptureRequest,
    EvidenceView,
    Outcome,
    ValidatorKind,
    ValidatorParams,
    validators,
)


def load_builtin() -> None:
    """Import the built-in validator modules so their kinds register."""
    import importlib

    for mod in ("http", "text", "files", "command", "rows", "ocr", "screens"):
        try:
            importlib.import_module(f"referee.validators.{mod}")
        except ModuleNotFoundError as exc:
            if exc.name != f"referee.validators.{mod}":
                raise
