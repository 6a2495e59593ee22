"""The validator contract: a pure check over persisted evidence, and the registry of checkers.

A validator kind's parameters and the captures it asks for are plan data (`referee.plan.validators`);
this package holds only the code that checks evidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal, Protocol, TypeVar

from referee.core.registry import Registry
from referee.plan.validators import (
    BUILTIN_SPECS,
    POINTS_AT,
    CaptureRequest,
    ValidatorParams,
    ValidatorSpec,
    validator_specs,
)

Status = Literal["PASS", "FAIL", "ERROR"]
K = TypeVar("K", bound="type[ValidatorKind]")


@dataclass(frozen=True)
class Outcome:
    """A validator's result with its reason; `matched` says what text made it hold, for lint and reports."""

    status: Status
    reason: str
    matched: str | None = None

    @staticmethod
    def hold(reason: str, matched: str | None = None) -> "Outcome":
        return Outcome("PASS", reason, matched)

    @staticmethod
    def fail(reason: str) -> "Outcome":
        return Outcome("FAIL", reason)

    @staticmethod
    def error(reason: str) -> "Outcome":
        return Outcome("ERROR", reason)


class EvidenceView(Protocol):
    """Read-only access to one step's persisted evidence in one phase; hashes are verified on read.

    Every method raises EvidenceError for missing, unlisted, modified or escaping files, which the
    grader turns into ERROR.
    """

    phase: Literal["before", "after"]
    step_id: str

    def path(self, ref: str) -> Path:
        """The verified file for a capture name, or for a path the agent saved in its folder."""
        ...

    def read_bytes(self, ref: str) -> bytes: ...

    def read_text(self, ref: str) -> str: ...

    def read_json(self, ref: str) -> Any: ...

    def record(self, ref: str) -> Any:
        """The runner's capture record behind `ref`, parsed (a `referee.rundir.schema` model: HttpRecord,
        CommandRecord, ...), or None when `ref` is no record (a screenshot, an agent's file)."""
        ...

    def cached(self, namespace: str, key: str, compute) -> Any:
        """A per-run-directory cache (e.g. OCR by image SHA-256); `compute()` runs only on a miss."""
        ...


class ValidatorKind(ValidatorSpec):
    """Base class of a validator kind: a ValidatorSpec (`Params`, `summary`, the captures it asks for,
    plan data in `referee.plan.validators`) with a `check`. A built-in kind's checker subclasses its
    spec and adds only `check`; a plugin's class is both, and serves as both.

    `check` must be pure: it reads only through `ev`, never the network, the clock or the actors.
    """

    is_checker = True

    def check(self, params: Any, ev: EvidenceView, index: int) -> Outcome:
        raise NotImplementedError


# an entry point names a ValidatorKind subclass (or a factory of one); registered kinds are one shared instance
validators: Registry[ValidatorKind] = Registry("validator kind", "referee.validators", item=ValidatorKind,
                                               name_attr="kind", points_at=POINTS_AT)


def register(kind: str) -> Callable[[K], K]:
    """Class decorator: register a ValidatorKind subclass under `kind` as the checker of that kind.

    A built-in kind's checker must subclass its plan spec (`referee.plan.validators.BUILTIN_SPECS`);
    any other kind registered here becomes a plan spec too, so plans can name it.

    >>> @register("always_fails_demo")
    ... class AlwaysFails(ValidatorKind):
    ...     def check(self, params, ev, index): return Outcome.fail("never holds")
    >>> validators.get("always_fails_demo").kind
    'always_fails_demo'
    >>> from referee.plan.validators import validator_specs
    >>> "always_fails_demo" in validator_specs
    True
    """

    def deco(cls: K) -> K:
        builtin = BUILTIN_SPECS.get(kind)
        if builtin is None:
            cls.kind = kind
            validator_specs.add(kind, cls)
        elif not issubclass(cls, builtin):
            raise TypeError(f"the checker of built-in validator kind '{kind}' must subclass its spec "
                            f"{builtin.__module__}.{builtin.__qualname__}")
        validators.add(kind, cls)
        return cls

    return deco


__all__ = ["Status", "Outcome", "EvidenceView", "ValidatorKind", "validators", "register", "ValidatorParams",
           "ValidatorSpec", "CaptureRequest"]
