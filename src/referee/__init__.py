"""referee: an independent grader for AI agents. The agent that does the work never decides whether it was correct."""

from referee.errors import RefereeError
from referee.registry import Registry

__version__ = "0.1.0"

__all__ = ["RefereeError", "Registry", "__version__", "Actor", "StepContext", "Claim", "grade", "load_plan"]


def __getattr__(name: str):
    # lazy, so `import referee` stays cheap and the walls between halves hold
    if name in ("Actor", "StepContext", "Claim"):
        from referee.runner.actors import python as _py

        return getattr(_py, name)
    if name == "grade":
        from referee.grader import grade

        return grade
    if name == "load_plan":
        from referee.plan import load_plan

        return load_plan
    raise AttributeError(name)
