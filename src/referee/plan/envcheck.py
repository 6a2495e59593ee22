"""Which `${NAME}` variables a plan uses, and where: each one unset is one plan error, at its first use.

The places a plan takes variables, and what the runner and the grader do with them, are in
docs/runner.md, "Plan variables"; the substitution itself is `referee.plan.envvars`.
"""

from __future__ import annotations

from typing import Any, Literal, Mapping, Protocol

from referee.errors import PlanError
from referee.plan.envvars import references, unset
from referee.plan.model import Plan

Needs = Literal["all", "checks"]
"""The variables a plan's loader requires set: "all" (`check`, `run`), or "checks", those of validator values
only (`lint`, which performs no capture and starts nothing)."""


class Sink(Protocol):
    """Where the errors go: the loader's positions of the plan's file (`referee.plan.loader`)."""

    def error(self, msg: str, loc: tuple, fix: str | None = None) -> PlanError: ...

    def report(self, err: PlanError) -> None: ...


_RUNNER_SETS = {"app": frozenset({"PORT"}),  # what the runner puts in the app's and the agent's environment
                "actor": frozenset({"REFEREE_STEP_ID", "REFEREE_STEP_DO", "REFEREE_PLAN", "REFEREE_APP_URL",
                                    "REFEREE_AGENT_DIR", "REFEREE_CLAIM_FILE", "REFEREE_CDP_URL"})}


class EnvCheck:
    """Collects the `${NAME}` variables a plan uses where it takes them; with an `env`, each one unset there is one
    PlanError at its first use (naming how many other places use it), reported by `finish`.

    `names`: what the runner substitutes and so keeps secret (captures, app, actor); `check_names`: what
    validator values compare with (filled at grade time).

    >>> from referee.plan.loader import load_plan_text
    >>> load_plan_text("app: {start: 'serve --db ${DB}'}\\nsteps: [{id: a, do: x}]\\n", "p.yaml", env={})
    Traceback (most recent call last):
    ...
    referee.errors.PlanError: p.yaml:1:14: environment variable 'DB' is not set (used in `app.start`); ...
    """

    def __init__(self, where: Sink, env: Mapping[str, str] | None, needs: Needs = "all") -> None:
        self.where, self.env, self.needs = where, env, needs
        self.names: set[str] = set()
        self.check_names: set[str] = set()
        self._unset: dict[str, list[tuple[tuple, str]]] = {}  # name -> each (loc, field) using it, in plan order

    def __call__(self, params: Any, loc: tuple, sent: bool = True) -> None:
        """Note the variables of a capture's or a validator's `env_fields` (`sent`: a capture's, which the runner
        substitutes; else a validator's values, filled when graded)."""
        for field in getattr(type(params), "env_fields", ()):
            self.use(getattr(params, field, None), loc + (field,), field, sent=sent)

    def specs(self, plan: Plan) -> None:
        """The app's and the actor's: a command may also name what its own `env:` and the runner set (its shell
        expands it: `PORT` for the app, the REFEREE_* protocol for the agent)."""
        for part, spec, command_fields in (("app", plan.app, ("start", "build")), ("actor", plan.actor, ("command",))):
            if spec is None:
                continue
            own = frozenset(spec.env) | _RUNNER_SETS[part]
            for field in command_fields:
                self.use(getattr(spec, field, None), (part, field), f"{part}.{field}", local=own)
            self.use(spec.env, (part, "env"), f"{part}.env")

    def use(self, value: Any, at: tuple, field: str, *, sent: bool = True, local: frozenset[str] = frozenset()) -> None:
        """Note the variables of `value` (at plan place `at`, shown as `field`); those of a mapping by key."""
        for key, item in (value.items() if isinstance(value, dict) else [(None, value)]):
            names = [name for name, _ in references(item)]
            (self.names if sent else self.check_names).update(names)
            if self.env is None or (sent and self.needs == "checks"):
                continue
            for name in dict.fromkeys(unset(item, self.env)):
                if name not in local:
                    self._unset.setdefault(name, []).append((at if key is None else at + (key,), field))

    def finish(self) -> None:
        """One error per unset variable, at its first use (raised, or in collect-all mode each noted)."""
        for name, uses in self._unset.items():
            loc, field = uses[0]
            more = len(uses) - 1
            also = f", and {more} more place{'s' if more > 1 else ''}" if more else ""
            self.where.report(self.where.error(
                f"environment variable '{name}' is not set (used in `{field}`{also})", loc,
                fix=f"set {name} before running, or give a default: ${{{name}:-value}}"))
