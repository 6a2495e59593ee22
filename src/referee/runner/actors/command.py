"""The command actor: runs the agent's command per step (DESIGN.md protocol), isolated, in a clean environment."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import referee
from referee.runner.actors.base import ActorKind, ActorResult, StepRun, actors
from referee.runner.agentproc import AgentOutput, run_agent
from referee.runner.envsubst import expand, references
from referee.runner.isolation import (
    ENV_ALLOW,
    Sandbox,
    bwrap_problem,
    is_root,
    open_sandbox,
    user_cannot_run,
    user_unfit,
)


def agent_env(run: StepRun, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The agent's environment: an allow-list of the runner's, the REFEREE_* protocol, and the plan's `env` (its
    `${NAME}` filled from the runner's environment).

    >>> from referee.plan.model import Step
    >>> e = agent_env(StepRun(Step(id="s"), "p", None, Path("/a"), Path("/a/c.json"), 5))
    >>> e["REFEREE_STEP_ID"], "AWS_SECRET_ACCESS_KEY" in e
    ('s', False)
    """
    env = {k: os.environ[k] for k in ENV_ALLOW if k in os.environ}
    env.update({k: expand(v, os.environ) for k, v in run.env.items()})
    env.update(extra or {})
    env.update({
        "REFEREE_STEP_ID": run.step.id,
        "REFEREE_STEP_DO": run.step.do,
        "REFEREE_PLAN": run.plan_name,
        "REFEREE_APP_URL": run.app_url or "",
        "REFEREE_AGENT_DIR": str(run.agent_dir),
        "REFEREE_CLAIM_FILE": str(run.claim_file),
    })
    if run.cdp_url:
        env["REFEREE_CDP_URL"] = run.cdp_url
    return env


def step_payload(run: StepRun) -> bytes:
    """The step as JSON, the agent's stdin."""
    return json.dumps({"id": run.step.id, "do": run.step.do, "plan": run.plan_name, "app_url": run.app_url,
                       "agent_dir": str(run.agent_dir), "claim_file": str(run.claim_file),
                       "script": run.step.script}).encode()


def _text_tail(data: bytes, n: int = 4000) -> str:
    return data[-n:].decode("utf-8", errors="replace")


def as_result(out: AgentOutput) -> ActorResult:
    return ActorResult(exit_code=out.exit_code, timed_out=out.timed_out, error=out.error,
                       stdout_tail=_text_tail(out.stdout), stderr_tail=_text_tail(out.stderr), started=out.started,
                       killed=out.killed, stdout=out.stdout, stderr=out.stderr, stdout_bytes=out.stdout_bytes,
                       stderr_bytes=out.stderr_bytes)


def run_agent_command(command: str, run: StepRun, *, sandbox: Sandbox, cwd: Path | None = None,
                      extra_env: dict[str, str] | None = None) -> ActorResult:
    """Run one step of an agent command in `sandbox`; every process it starts ends with the step.

    The step goes to stdin as JSON. Exit code and output are recorded; none of it decides a verdict. A `${NAME}`
    the command names is given to it in its environment, where its shell expands it: the value is never pasted
    into the command line.
    """
    named = {n: os.environ[n] for n, _ in references(command) if n in os.environ and n not in run.env}
    env = agent_env(run, {**named, **(extra_env or {})})
    out = run_agent(["/bin/sh", "-c", command], sandbox=sandbox, agent_dir=run.agent_dir, cwd=cwd or Path.cwd(),
                    env=env, stdin=step_payload(run), timeout_s=run.timeout_s)
    return as_result(out)


_SHELL_WORDS = frozenset({"cd", "exec", "env", "export", "set", "if", "for", "while", "case", "{", "(", "!", ".",
                          "source", "eval", "time", "nice", "nohup", "command", "builtin", "test", "[", "true"})


def missing_program(command: str, env_path: str | None, cwd: Path) -> str | None:
    """The program a plain agent command line starts, when it cannot be found; None when it is found, or when the
    line starts with something the shell resolves itself (a builtin, a variable, an assignment, a construct).

    >>> missing_program("no-such-agent-xyz --fast", "/usr/bin:/bin", Path("/"))
    'no-such-agent-xyz'
    >>> missing_program("sh -c x", None, Path("/")), missing_program("cd /x && ./go", None, Path("/"))
    (None, None)
    """
    import shlex
    import shutil

    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if not words or words[0] in _SHELL_WORDS or any(c in words[0] for c in "=$`*?;&|<>(){}~"):
        return None
    prog = words[0]
    if "/" in prog:
        return None if (cwd / prog).exists() else prog
    return None if shutil.which(prog, path=env_path) else prog


def check_isolation(spec) -> None:
    """Before any run directory exists: a mode the plan names explicitly must be possible on this host."""
    from referee.errors import PlanError

    if spec.isolation == "user" and not is_root():
        raise PlanError("actor.isolation: user needs the runner to run as root",
                        fix="run referee as root, or use isolation: bwrap (or auto)")
    if spec.isolation == "user" and spec.command:
        path = spec.env.get("PATH") or os.environ.get("PATH")
        if problems := user_cannot_run(spec.command, path, Path.cwd()):
            raise user_unfit(problems)
    if spec.isolation == "bwrap" and (problem := bwrap_problem()):
        raise PlanError(f"actor.isolation: bwrap cannot work here: {problem}",
                        fix="install bubblewrap (apt-get install bubblewrap), or use isolation: auto")


def sandbox_for(spec, *, run_dir: Path, cwd: Path, command: str | list[str],
                extra_read: tuple[str, ...] = ()) -> Sandbox:
    """The run's sandbox for an agent `command` (its program and files, and `extra_read`, must be reachable
    by the agent)."""
    extra: tuple[str, ...] = tuple(extra_read)
    words = command if isinstance(command, list) else [command]
    if any(sys.executable in w for w in words):  # `{python} -m ...`: the agent also imports referee
        extra += (str(Path(referee.__file__).parent),)
    path = spec.env.get("PATH") or os.environ.get("PATH")
    return open_sandbox(spec.isolation, run_dir=run_dir, cwd=cwd, command=command, env_path=path, extra_read=extra,
                        limits=spec.limits)


class CommandActor(ActorKind):
    """Runs `actor.command` (or `--agent`) once per step."""

    kind = "command"

    @classmethod
    def preflight(cls, spec) -> None:
        check_isolation(spec)
        if spec.command and (missing := missing_program(spec.command, spec.env.get("PATH") or os.environ.get("PATH"),
                                                        Path.cwd())):
            from referee.errors import PlanError

            # found now, before the app starts and a run directory exists, not as N steps that could not start
            raise PlanError(f"the agent program {missing!r} of the agent command is not found "
                            f"({'no such file' if '/' in missing else 'not on PATH'})",
                            fix="check --agent or actor.command (the program's path, or install it)")

    def setup(self, spec, *, app_url, run_dir):
        if not spec.command:
            from referee.errors import PlanError

            raise PlanError("the command actor needs a command",
                            fix="pass --agent CMD or set actor.command in the plan")
        self.command = spec.command
        self.cwd = Path.cwd()
        self.sandbox = sandbox_for(spec, run_dir=Path(run_dir), cwd=self.cwd, command=spec.command)

    def perform(self, run: StepRun) -> ActorResult:
        return run_agent_command(self.command, run, sandbox=self.sandbox, cwd=self.cwd)

    def teardown(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()


actors.add("command", CommandActor)
