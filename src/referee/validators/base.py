"""The validator contract: parameters, the captures a validator needs, and a pure check over evidence."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from referee.registry import Registry

Status = Literal["PASS", "FAIL", "ERROR"]


class ValidatorParams(BaseModel):
    """Parameters every validator takes; kinds subclass this and add their own."""

    model_config = ConfigDict(extra="forbid")

    kind: str
    name: str | None = None
    require_change: bool = False


@dataclass(frozen=True)
class CaptureRequest:
    """A capture the runner must take for a validator (the seed's `url:` shorthand and friends).

    `name` is what the check later asks the EvidenceView for.
    """

    kind: str
    name: str
    params: dict[str, Any] = field(default_factory=dict)


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
        """The runner's capture record behind `ref`, parsed (a `referee.rundir` model: HttpRecord,
        CommandRecord, ...), or None when `ref` is no record (a screenshot, an agent's file)."""
        ...

    def cached(self, namespace: str, key: str, compute) -> Any:
        """A per-run-directory cache (e.g. OCR by image SHA-256); `compute()` runs only on a miss."""
        ...


class ValidatorKind:
    """Base class of a validator kind. Subclasses set `Params` and implement `check`.

    `check` must be pure: it reads only through `ev`, never the network, the clock or the actors.
    """

    kind: ClassVar[str] = ""
    Params: ClassVar[type[ValidatorParams]] = ValidatorParams
    summary: ClassVar[str] = ""

    def captures(self, params: ValidatorParams, index: int) -> list[CaptureRequest]:
        """Captures the runner takes for this validator; `index` makes implicit names unique."""
        return []

    def evidence_refs(self, params: ValidatorParams, index: int) -> list[str]:
        """The evidence names/paths `check` will read (for lint and reports)."""
        ev = getattr(params, "evidence", None)
        if ev is None:
            return [c.name for c in self.captures(params, index)]
        return list(ev) if isinstance(ev, list) else [ev]

    def check(self, params: ValidatorParams, ev: EvidenceView, index: int) -> Outcome:
        raise NotImplementedError


# an entry point names a ValidatorKind subclass (or a factory of one); registered kinds are one shared instance
validators: Registry[ValidatorKind] = Registry("validator kind", "referee.validators", item=ValidatorKind,
                                               name_attr="kind")


def register(kind: str):
    """Class decorator: register a ValidatorKind subclass under `kind`.

    >>> @register("always_fails_demo")
    ... class AlwaysFails(ValidatorKind):
    ...     def check(self, params, ev, index): return Outcome.fail("never holds")
    >>> validators.get("always_fails_demo").kind
    'always_fails_demo'
    """

    def deco(cls):
        cls.kind = kind
        validators.add(kind, cls)
        return cls

    return deco
