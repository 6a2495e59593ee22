"""The `referee` command: subcommands from the cli modules, one-line errors, DESIGN.md exit codes."""

from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Any, Iterator

import click

from referee.core.safetext import visible
from referee.core.stopsignals import handling
from referee.errors import RefereeError

EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130


# each command's module, imported when the command is asked for: `referee audit` never loads the runner's
# commands (and what they import), which was a tenth of its start-up
LAZY_COMMANDS = {
    "run": "runner_cmds", "grade": "runner_cmds", "check": "runner_cmds", "kinds": "runner_cmds",
    "demo": "runner_cmds", "lint": "screens_cmds", "report": "screens_cmds", "audit": "audit_cmds",
    "replay": "audit_cmds", "show": "audit_cmds", "readers": "audit_cmds", "eval": "eval_cmds",
    "schema": "schema_cmds", "history": "history_cmds", "prune": "history_cmds",
}


class LazyGroup(click.Group):
    """A group whose commands come from `LAZY_COMMANDS`, each module imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name in LAZY_COMMANDS if self.get_command(ctx, name) is not None)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in LAZY_COMMANDS:
            modname = f"referee.cli.{LAZY_COMMANDS[cmd_name]}"
            try:
                mod = __import__(modname, fromlist=["COMMANDS"])
            except ModuleNotFoundError as exc:  # a half of the tool not built in this checkout
                if exc.name != modname:
                    raise
                return None
            for cmd in mod.COMMANDS:
                self.add_command(cmd)
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: click.Context,
                        args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and name not in LAZY_COMMANDS and not name.startswith("-") and not ctx.resilient_parsing:
            # click suggests among the commands loaded so far: suggest among all of them
            raise click.exceptions.NoSuchCommand(name, possibilities=list(LAZY_COMMANDS), ctx=ctx)
        return super().resolve_command(ctx, args)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="referee")
def cli() -> None:
    """referee: the agent that does the work never decides whether the work was correct."""


RESEND_S = 0.01  # a stop signal that Python dropped is sent again this much later (see stop_signals)


class Stopped(KeyboardInterrupt):
    """A stop signal (SIGTERM, SIGHUP) turned into what Ctrl-C raises, so a command ends as it does on Ctrl-C."""

    def __init__(self, signame: str) -> None:
        super().__init__(signame)
        self.signame = signame


def _stop(signum: int, frame: object) -> None:
    raise Stopped(signal.Signals(signum).name)


@contextmanager
def stop_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP end a command as Ctrl-C does: a job runner's timeout or a closed terminal would
    otherwise kill this process where it stands, and the pool workers it started would outlive it, holding
    its output pipes open (`nohup` is kept: see referee.core.stopsignals).

    A handler runs wherever the main thread is, and where that is a garbage-collection callback or a
    `__del__` (Dask registers one), Python prints "Exception ignored" and drops the Stopped: the signal is
    then sent again, from a thread a moment later, to land in the command's own code (seen once in CI: the
    audit ran to the end, exit 0). Sent from here, it would land in this hook and be dropped again.
    """
    pending: list[threading.Timer] = []

    def dropped(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, Stopped):
            again = threading.Timer(RESEND_S, os.kill, (os.getpid(), signal.Signals[unraisable.exc_value.signame]))
            again.daemon = True
            pending.append(again)
            again.start()
        else:
            before(unraisable)

    before, sys.unraisablehook = sys.unraisablehook, dropped
    try:
        with handling([signal.SIGTERM] + ([signal.SIGHUP] if hasattr(signal, "SIGHUP") else []), _stop):
            try:
                yield
            finally:
                # a command that ended before its dropped stop came again ends as it ended: sent after the old
                # handlers are back, the signal would kill the process (exit -15) with its result unsaid. One
                # already sent lands here, under the stop handler
                for again in pending:
                    again.cancel()
                for again in pending:
                    again.join()
    finally:
        sys.unraisablehook = before


def _interrupted(exc: BaseException | None) -> str:
    name = getattr(exc, "signame", None)
    return f"referee: interrupted ({name})" if name else "referee: interrupted"


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and turn every failure into one line and an exit code (0/1/2/3/130)."""
    try:
        with stop_signals():
            rv = cli.main(args=argv, prog_name="referee", standalone_mode=False)
    except RefereeError as err:
        # one line, whatever an agent put in a file name or a note: newlines and escapes shown, not acted on
        click.echo(f"referee: error: {visible(err, keep_newlines=False)}", err=True)
        return err.exit_code
    except click.exceptions.Abort as err:  # click's form of KeyboardInterrupt (and of Stopped)
        click.echo(_interrupted(err.__cause__), err=True)
        return EXIT_INTERRUPTED
    except click.exceptions.NoArgsIsHelpError as err:
        # `referee` or `referee eval` alone: show the help, as click does in standalone mode
        click.echo(err.ctx.get_help() if err.ctx else err.format_message())
        return 0
    except click.UsageError as err:
        hint = f"; see `{err.ctx.command_path} --help`" if err.ctx else ""
        click.echo(f"referee: error: {err.format_message().rstrip('.')}{hint}", err=True)
        return 2
    except click.ClickException as err:
        click.echo(f"referee: error: {err.format_message()}", err=True)
        return 2
    except KeyboardInterrupt as err:
        click.echo(_interrupted(err), err=True)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
    except Exception as err:  # a bug in referee, not the user's mistake
        if os.environ.get("REFEREE_DEBUG"):
            raise
        if isinstance(err, OSError) and err.filename is not None:
            # a path the user gave that cannot be made, read or written (no such folder, /proc, read-only, full disk)
            click.echo(f"referee: error: {err.filename}: {err.strerror or err}; check the path and that you may "
                       "write there", err=True)
            return 2
        click.echo(f"referee: internal error: {type(err).__name__}: {err} "
                   "(set REFEREE_DEBUG=1 for a traceback, and please report it)", err=True)
        return EXIT_INTERNAL
    return rv if isinstance(rv, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
