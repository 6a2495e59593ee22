"""Plan v1 as pydantic models (extra="forbid"); validator and capture parameters are typed per kind."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PositiveInt, ValidationInfo, field_validator

from referee.core.timeouts import MAX_TIMEOUT_S, check_seconds
from referee.errors import PlanValueError

NAME_MAX = 100
NAME_RE = re.compile(rf"[A-Za-z0-9_][A-Za-z0-9_.-]{{0,{NAME_MAX - 1}}}")
NAME_RULE = (f"letters, digits, '_', '-' and '.', at most {NAME_MAX} characters, not starting with '.' or '-' "
             "(a name, not a path)")


def check_name(v: str, what: str, info: ValidationInfo | None = None) -> str:
    """A step id, capture name, `stdout_as` or plan name: it becomes one file or folder name in a run
    directory, so it is a bounded name, never a path.

    A frozen plan (the copy a run directory holds, `context={"frozen": True}`) was checked when it ran;
    grading only looks names up, so it needs no more than a relative path without `..`, and run
    directories written before this rule still grade.

    >>> check_name("add_milk", "a step id")
    'add_milk'
    >>> check_name("../x", "a capture name")
    Traceback (most recent call last):
    ...
    ValueError: a capture name must be letters, digits, '_', '-' and '.', ... (a name, not a path); got '../x'
    """
    if info is not None and (info.context or {}).get("frozen"):
        parts = v.split("/")
        if not v or v.startswith("/") or "\\" in v or ".." in parts or v[1:2] == ":":
            raise ValueError(f"{what} must be a relative path inside the run directory, without '..' ({v!r})")
        return v
    if not NAME_RE.fullmatch(v):
        shown = v if len(v) <= 40 else v[:37] + "..."
        raise ValueError(f"{what} must be {NAME_RULE}; got {shown!r}")
    return v


def one_of(a: str, a_given: bool, b: str, b_given: bool, fix: str) -> None:
    """Two fields of a plan entry of which it takes exactly one: say which mistake it is, and `fix`.

    >>> one_of("url", True, "evidence", True, "give one")
    Traceback (most recent call last):
    ...
    referee.errors.PlanValueError: `url` and `evidence` are both given, and one would be ignored
    """
    if a_given and b_given:
        raise PlanValueError(f"`{a}` and `{b}` are both given, and one would be ignored", fix)
    if not (a_given or b_given):
        raise PlanValueError(f"neither `{a}` nor `{b}` is given", fix)


def _seconds(v: float, info: ValidationInfo) -> float:
    # a frozen plan (a run directory's copy) ran already: grading never waits on its timeouts
    return v if (info.context or {}).get("frozen") else check_seconds(v)


# who runs a command capture: "agent", with the run's isolation (the agent's account under `user`, a sandbox under
# `bwrap`), since the command often runs what the agent wrote; "runner", the runner's own user and environment, for a
# command that needs them and runs nothing of the agent's
RunAs = Literal["agent", "runner"]

Seconds = Annotated[float, AfterValidator(_seconds),
                    Field(json_schema_extra={"exclusiveMinimum": 0, "maximum": MAX_TIMEOUT_S})]
"""The type of every `timeout_s`-like field of a plan (`check_seconds`)."""


def name_from(stem: str) -> str:
    """A plan name made from a file stem that is not one (`my plan (v2)` -> `my_plan_v2`).

    >>> name_from("my plan (v2)"), name_from("smoke"), name_from("...")
    ('my_plan_v2', 'smoke', 'plan')
    """
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", stem).strip("_.-")[:NAME_MAX].rstrip(".-")
    return name or "plan"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AppSpec(_Model):
    """The app the runner starts before the plan and stops after it."""

    start: str | None = None
    url: str | None = None
    ready: str | None = None
    ready_timeout_s: Seconds = 30.0
    cwd: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    # run once per run before the app starts (in `cwd`, with `env`); its output is the run's build.log, and a
    # failed build makes every step ERROR: nothing is started
    build: str | None = Field(default=None, min_length=1)
    build_timeout_s: Seconds = 600.0


class AgentLimits(_Model):
    """Resource limits on each of the agent's processes (setrlimit before it starts; docs/security-isolation.md).
    Left out: no limit. The runner sets them as hard limits, so the agent cannot raise them again.

    >>> AgentLimits(memory_mb=512).memory_mb, AgentLimits().cpu_s
    (512, None)
    """

    memory_mb: PositiveInt | None = None  # data memory (heap, anonymous mappings) of each process: RLIMIT_DATA
    cpu_s: PositiveInt | None = None  # CPU seconds of each process: SIGXCPU, then SIGKILL a second later
    file_mb: PositiveInt | None = None  # the largest file a process may write: SIGXFSZ past it
    processes: PositiveInt | None = None  # processes of the agent's account at once (user isolation only)


class EvidenceBudget(_Model):
    """How much of what the agent leaves the runner reads to hash (docs/runner.md, "Hashing budget"). A file past
    a budget, or one mostly holes (`truncate -s 512M`) while `sparse: refuse`, is not taken: listed in the step
    record with the reason, and a validator citing it is ERROR.

    >>> EvidenceBudget().max_step_mb, EvidenceBudget(max_run_mb=10).max_run_mb, EvidenceBudget().sparse
    (1024, 10, 'refuse')
    """

    max_step_mb: PositiveInt = 1024  # MiB of the agent's files hashed after one step
    max_run_mb: PositiveInt = 4096  # MiB of them hashed in the whole run
    sparse: Literal["refuse", "take"] = "refuse"  # take: hash sparse files too (within the budgets)


class ActorSpec(_Model):
    """Who performs each step's `do:`."""

    kind: Literal["command", "python", "browser"] = "command"
    command: str | None = None
    target: str | None = None  # python actor: "module:ClassName"
    timeout_s: Seconds = 120.0
    env: dict[str, str] = Field(default_factory=dict)  # passed to the agent explicitly; nothing else leaks
    headless: bool = True
    # how the agent's processes are kept from the run directory and the runner (docs/security-isolation.md):
    # auto picks the strongest of user/bwrap that can run this agent, else none with a loud warning
    isolation: Literal["auto", "user", "bwrap", "none"] = "auto"
    limits: AgentLimits = Field(default_factory=AgentLimits)


class Step(_Model):
    id: str
    do: str = ""
    capture: list[dict[str, Any]] = Field(default_factory=list)
    validators: list[dict[str, Any]] = Field(default_factory=list)
    script: list[dict[str, Any]] = Field(default_factory=list)
    timeout_s: Seconds | None = None

    @field_validator("id")
    @classmethod
    def _id_is_a_name(cls, v: str, info: ValidationInfo) -> str:
        return check_name(v, "a step id", info)


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
    evidence: EvidenceBudget = Field(default_factory=EvidenceBudget)
    steps: list[Step]

    @field_validator("name")
    @classmethod
    def _name_is_a_name(cls, v: str, info: ValidationInfo) -> str:
        if info.context and info.context.get("frozen"):
            return v  # the run directory already exists; grading never makes a path of it
        return check_name(v, "a plan name", info)

    @field_validator("steps")
    @classmethod
    def _some_step(cls, v: list[Step], info: ValidationInfo) -> list[Step]:
        # a plan of no step checks nothing, yet its run would be "0 PASS", exit 0: as good as all PASS
        if not v and not (info.context and info.context.get("frozen")):
            raise PlanValueError("a plan needs at least one step (this one would check nothing and exit 0)",
                                 "add a step with a validator, or remove the plan")
        return v

    @field_validator("public_env")
    @classmethod
    def _names(cls, v: list[str]) -> list[str]:
        from referee.plan.envvars import NAME

        bad = [n for n in v if not NAME.fullmatch(n)]
        if bad:
            raise ValueError(f"{bad[0]!r} is not a variable name (letters, digits and '_', not first a digit)")
        return v
