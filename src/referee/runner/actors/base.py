"""The actor contract: perform one step, leave files in the agent folder, return what the agent claimed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from referee.core.registry import Registry, subclass_of


class Claim(BaseModel):
    """What the agent said about a step: recorded beside the verdict, never deciding it."""

    passed: bool | None = Field(default=None, alias="pass")
    note: str = ""
    evidence: list[str] = Field(default_factory=list)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def dump(self) -> dict[str, Any]:
        return {"pass": self.passed, "note": self.note, "evidence": self.evidence}


@dataclass
class StepRun:
    """Everything an actor needs for one step. `agent_dir` is the only folder the agent writes to."""

    step: Any  # referee.plan.model.Step
    plan_name: str
    app_url: str | None
    agent_dir: Path
    claim_file: Path
    timeout_s: float
    env: dict[str, str] = field(default_factory=dict)
    page: Any = None  # the runner's browser page, for the browser actor
    cdp_url: str | None = None


@dataclass(frozen=True)
class ActorResult:
    """What happened when the actor ran: recorded in the manifest, never used for the verdict."""

    exit_code: int | None
    timed_out: bool = False
    error: str | None = None
    stdout_tail: str = ""
    stderr_tail: str = ""
    started: bool = True  # False: the agent could not be started at all (nobody acted: the step is ERROR)
    killed: int = 0  # agent processes alive when the step ended, killed by the runner
    stdout: bytes | None = None  # the last 1 MB of an agent process's output (None: no process ran)
    stderr: bytes | None = None
    stdout_bytes: int | None = None  # the whole output's size
    stderr_bytes: int | None = None


class ActorKind:
    """Base class of an actor kind. `setup`/`teardown` bracket the whole plan."""

    kind: ClassVar[str] = ""
    # where a python agent's module is looked for before the working directory: the plan's folder
    search_path: tuple[str, ...] = ()
    sandbox: Any = None  # referee.runner.isolation.Sandbox of the run, when an agent process runs
    secrets: Any = None  # the run's secret values (`referee.runner.envsubst.Secrets`), set by the runner

    def scrub(self, text: str) -> str:
        """`text` with the run's secret values replaced: for what the actor writes itself (a log)."""
        return self.secrets.scrub(text) if self.secrets is not None else text

    @classmethod
    def preflight(cls, spec: Any) -> None:
        """Raise a RefereeError (e.g. a missing extra) before any run directory or app exists."""

    def setup(self, spec: Any, *, app_url: str | None, run_dir: Path) -> None:  # noqa: B027
        pass

    def perform(self, run: StepRun) -> ActorResult:
        raise NotImplementedError

    def teardown(self) -> None:  # noqa: B027
        pass

    @property
    def page(self) -> Any:
        """The runner-owned browser page, if this actor has one (captures use it)."""
        return None


# holds the classes themselves: the runner makes a fresh actor per run
actors: Registry[type[ActorKind]] = Registry("actor kind", item=subclass_of(ActorKind))
