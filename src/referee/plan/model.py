"""Plan v1 as pydantic models (extra="forbid"); validator and capture parameters are typed per kind."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AppSpec(_Model):
    """The app the runner starts before the plan and stops after it."""

    start: str | None = None
    url: str | None = None
    ready: str | None = None
    ready_timeout_s: float = 30.0
    cwd: str | None = None
    env: dict[str, str] = Field(default_factory=dict)


class ActorSpec(_Model):
    """Who performs each step's `do:`."""

    kind: Literal["command", "python", "browser"] = "command"
    command: str | None = None
    target: str | None = None  # python actor: "module:ClassName"
    timeout_s: float = 120.0
    env: dict[str, str] = Field(default_factory=dict)  # passed to the agent explicitly; nothing else leaks
    headless: bool = True
    # how the agent's processes are kept from the run directory and the runner (docs/security-isolation.md):
    # auto picks the strongest of user/bwrap that can run this agent, else none with a loud warning
    isolation: Literal["auto", "user", "bwrap", "none"] = "auto"


class Step(_Model):
    id: str
    do: str = ""
    capture: list[dict[str, Any]] = Field(default_factory=list)
    validators: list[dict[str, Any]] = Field(default_factory=list)
    script: list[dict[str, Any]] = Field(default_factory=list)
    timeout_s: float | None = None

    @field_validator("id")
    @classmethod
    def _id_is_a_name(cls, v: str) -> str:
        import re

        if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", v):
            raise ValueError("a step id may hold letters, digits, '_', '-' and '.' and must not start with '.' or '-'")
        return v


class Plan(_Model):
    version: Literal[1] = 1
    name: str = ""
    app: AppSpec | None = None
    actor: ActorSpec | None = None
    controls: list[str] = Field(default_factory=list)
    # `${NAME}` variables that are not secret: shown with their values in evidence and reports (the
    # others are shown as `${NAME}`; see referee.plan.envvars)
    public_env: list[str] = Field(default_factory=list, description=(
        "`${NAME}` variables that are not secret: shown with their values (others are shown as `${NAME}`)"))
    steps: list[Step]

    @field_validator("public_env")
    @classmethod
    def _names(cls, v: list[str]) -> list[str]:
        from referee.plan.envvars import NAME

        bad = [n for n in v if not NAME.fullmatch(n)]
        if bad:
            raise ValueError(f"{bad[0]!r} is not a variable name (letters, digits and '_', not first a digit)")
        return v
