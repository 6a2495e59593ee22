"""Actors perform a step's `do:`; whatever they say is recorded as a claim and decides nothing."""

from referee.runner.actors.base import ActorKind, Claim, StepRun, actors  # noqa: F401


def load_builtin() -> None:
    import importlib

    for mod in ("command", "python", "browser"):
        try:
            importlib.import_module(f"referee.runner.actors.{mod}")
        except ModuleNotFoundError as exc:
            if exc.name != f"referee.runner.actors.{mod}":
                raise
