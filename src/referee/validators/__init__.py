"""Validator checkers: pure checks over persisted evidence, one per validator kind.

What a validator takes and which captures it asks the runner for are plan data
(`referee.plan.validators`); the grader looks up the checker of each typed validator here.
"""

from referee.validators.base import (  # noqa: F401
    CaptureRequest,
    EvidenceView,
    Outcome,
    ValidatorKind,
    ValidatorParams,
    ValidatorSpec,
    validators,
)

_BUILTIN = ("http", "text", "files", "command", "rows", "ocr", "screens")
_loaded = False


def load_builtin() -> None:
    """Import the built-in validator modules so their checkers register."""
    global _loaded
    if _loaded:
        return
    import importlib

    for mod in _BUILTIN:
        try:
            importlib.import_module(f"referee.validators.{mod}")
        except ModuleNotFoundError as exc:
            if exc.name != f"referee.validators.{mod}":
                raise
    _loaded = True


def checker(kind: str) -> ValidatorKind:
    """The checker of validator kind `kind`: a built-in one, or a plugin's (entry point group `referee.validators`).

    >>> checker("http_status_eq").kind
    'http_status_eq'
    """
    load_builtin()
    return validators.get(kind)
