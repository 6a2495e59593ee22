"""The grader: a pure function from a run directory's persisted evidence to verdicts."""

from referee.grader.grade import grade  # noqa: F401
from referee.grader.results import RunResults, StepResult, ValidatorResult  # noqa: F401
