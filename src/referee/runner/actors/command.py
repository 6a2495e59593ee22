"""The command actor: runs the agent's command per step with the DESIGN.md protocol and a clean environment."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from referee.runner.procs import stop_group
from referee.runner.actors.base import ActorKind, ActorResult, StepRun, actors

# Only these reach the agent from the runner's environment: never credentials, tokens or DB URLs.
ENV_ALLOW = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM", "USER", "LOGNAME", "SHELL",
             "PYTHONPATH", "VIRTUAL_ENV", "SYSTEMROOT", "DISPLAY", "XDG_RUNTIME_DIR")


def agent_env(run: StepRun, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The agent's environment: an allow-list of the runner's, the REFEREE_* protocol, and the plan's `env`.

    >>> from referee.plan.model import Step
    >>> e = agent_env(StepRun(Step(id="s"), "p", None, Path("/a"), Path("/a/c.json"), 5))
    >>> e["REFEREE_STEP_ID"], "AWS_SECRET_ACCESS_KEY" in e
    ('s', False)
    """
    env = {k: os.environ[k] for k in ENV_ALLOW if k in os.environ}
    env.update(run.env)
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


OUTPUT_KEEP = 1 << 20  # bytes of stdout and of stderr kept in agent/<step>/
_SHELL_CANNOT = re.compile(r"^(/bin/)?sh: .*(not found|Permission denied|No such file or directory|cannot execute)")


def _tail(data: bytes | None, n: int = 4000) -> str:
    return (data or b"")[-n:].decode("utf-8", errors="replace")


def _could_not_start(code: int | None, stderr: bytes) -> str | None:
    """Why the agent never ran: the shell found no such program, or could not execute it (126/127)."""
    lines = stderr.decode("utf-8", errors="replace").strip().splitlines()
    last = lines[-1] if lines else ""
    if code in (126, 127) and _SHELL_CANNOT.match(last):
        return f"the agent could not be started: {last}"
    return None


def _result(code: int | None, out: bytes, err: bytes, *, timed_out: bool, error: str | None) -> ActorResult:
    why = None if timed_out else _could_not_start(code, err)
    return ActorResult(exit_code=code, timed_out=timed_out, error=why or error, stdout_tail=_tail(out),
                       stderr_tail=_tail(err), started=why is None, stdout=out[-OUTPUT_KEEP:],
                       stderr=err[-OUTPUT_KEEP:], stdout_bytes=len(out), stderr_bytes=len(err))


def run_agent_command(command: str, run: StepRun, *, cwd: Path | None = None,
                      extra_env: dict[str, str] | None = None) -> ActorResult:
    """Run one step of an agent command; kill its whole process group on timeout.

    The step goes to stdin as JSON. Exit code and output are recorded; none of it decides a verdict.
    """
    payload = json.dumps({"id": run.step.id, "do": run.step.do, "plan": run.plan_name, "app_url": run.app_url,
                          "agent_dir": str(run.agent_dir), "claim_file": str(run.claim_file),
                          "script": run.step.script}).encode()
    try:
        proc = subprocess.Popen(command, shell=True, cwd=cwd, env=agent_env(run, extra_env), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        return ActorResult(exit_code=None, started=False, error=f"the agent could not be started: {exc}")
    try:
        out, err = proc.communicate(payload, timeout=run.timeout_s)
        return _result(proc.returncode, out, err, timed_out=False, error=None)
    except subprocess.TimeoutExpired:
        stop_group(proc)
        out, err = proc.communicate()
        return _result(proc.returncode, out, err, timed_out=True, error=f"timed out after {run.timeout_s:g}s")
    except BaseException:
        stop_group(proc)
        raise


class CommandActor(ActorKind):
    """Runs `actor.command` (or `--agent`) once per step."""

    kind = "command"

    def setup(self, spec, *, app_url, run_dir):
        if not spec.command:
            from referee.errors import PlanError

            raise PlanError("the command actor needs a command",
                            fix="pass --agent CMD or set actor.command in the plan")
        self.command = spec.command
        self.cwd = Path.cwd()

    def perform(self, run: StepRun) -> ActorResult:
        return run_agent_command(self.command, run, cwd=self.cwd)


actors.add("command", CommandActor)
