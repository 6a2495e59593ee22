"""The command capture: the runner runs a command after the step and keeps exit code, stdout, stderr.

A `${NAME}` in the command is the shell's to expand, from the command's environment, as in `app.start` and
`actor.command`: the value is never pasted into the command's text, where a `;`, a quote or a `$(` in it
would be shell syntax. Each value is still scrubbed from what the runner writes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from referee.core.fsutil import atomic_write_bytes, atomic_write_text
from referee.rundir.schema import CommandRecord, dump_record, record_file
from referee.runner.agentproc import launch_line
from referee.runner.captures.base import CaptureKind, register, searchable
from referee.runner.envsubst import references
from referee.runner.homes import remove_home
from referee.runner.isolation import ENV_ALLOW
from referee.runner.procs import run_bounded

MAX_TEXT = 1 << 20  # the last 1 MB of stdout and of stderr is kept in the record
MAX_STDOUT_FILE = 64 << 20  # the first 64 MiB of stdout is kept as a `stdout_as` file (a screenshot)


def _as_agent(sandbox: Any, env: dict[str, str], home: Path) -> tuple[list[str], dict[str, str], Any, str]:
    """How a command runs as the run's agent: the launcher line, its environment (the agent's allow-list of the
    runner's, with `home`, a scratch home: never the agent's own), the tracker of its processes, and who that is."""
    prefix, tracker = launch_line(sandbox, sandbox.wrap([], home))
    who = f"user {sandbox.user}" if sandbox.mode == "user" else sandbox.mode
    mine = sandbox.env({k: env[k] for k in ENV_ALLOW if k in env}, home)
    # git refuses a repository another user owns ("dubious ownership"), which a workspace of the runner's is to the
    # agent's account; that guard keeps a repository's hooks from running as someone else, and here they run as
    # the agent, who could have written them: nothing to guard (command-line config, which git honours for it)
    mine.update(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="safe.directory", GIT_CONFIG_VALUE_0="*")
    return prefix, mine, tracker, who


def _variables(command: str, ctx: Any) -> dict[str, str]:
    """The set variables `command` names, from the runner's environment, for its shell to expand; each secret one
    (not in `public_env`) is scrubbed from what the runner writes from now on."""
    source = ctx.env or os.environ
    found = {}
    for name, _ in references(command):
        value = source.get(name)
        if value is None:
            continue  # unset: the shell's `${NAME:-default}` takes the default (the loader refused one without)
        found[name] = value
        if name not in ctx.public:
            ctx.secrets.add(value, "${" + name + "}")
    return found


@register("command")
class CommandCapture(CaptureKind):
    def take(self, params, ctx):
        record = CommandRecord(command=ctx.shown(params.command), ran_as="runner")
        prefix: list[str] = []
        variables = _variables(params.command, ctx)
        env, tracker, home = ctx.env or None, None, None  # the runner's environment: the variables are in it
        box = ctx.sandbox if params.run_as == "agent" else None
        if box is not None and box.mode != "none":  # it runs what the agent wrote: with the agent's rights, no more
            home = box.scratch_home()
            prefix, env, tracker, record.ran_as = _as_agent(box, ctx.env or dict(os.environ), home)
            env.update(variables)  # only those it names, beside the agent's allow-list
        try:
            ran = run_bounded(params.command, timeout_s=params.timeout_s, cwd=ctx.cwd, env=env,
                              keep=MAX_STDOUT_FILE if params.stdout_as else MAX_TEXT,
                              stdout_head=bool(params.stdout_as), prefix=prefix,
                              on_start=tracker.started if tracker else None)
        finally:  # a daemon it started (setsid, a double fork) ends with it, as the agent's do with its step
            if tracker is not None:
                tracker.kill_all()
                tracker.close()
            if home is not None:
                remove_home(home)  # through handles, and its record with it
        record.exit_code, record.timed_out, record.stdout_bytes = ran.exit_code, ran.timed_out, ran.stdout_bytes
        stderr = ran.stderr[-MAX_TEXT:]
        record.stderr = ctx.scrub(searchable(stderr, cut=ran.stderr_bytes > len(stderr))[0])
        files = []
        if params.stdout_as:
            raw = ctx.out_dir / params.stdout_as
            atomic_write_bytes(raw, ran.stdout)
            files.append(raw)
            record.stdout_file = params.stdout_as
        else:
            text, exact = searchable(ran.stdout, cut=ran.stdout_bytes > len(ran.stdout))
            # the text is what validators search; the exact bytes stay beside it when they are not UTF-8
            record.stdout, record.stdout_base64 = ctx.scrub(text), exact
        meta = ctx.out_dir / record_file(params.name, "command")
        atomic_write_text(meta, dump_record(record))
        # with stdout_as the saved file is what validators read by the capture's name (OCR of a screen)
        return files + [meta]
