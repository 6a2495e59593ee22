"""command_exit_code: a command the runner ran after the step exited with `expected`."""

from __future__ import annotations

from referee.plan.validators import CommandExitCodeSpec
from referee.rundir.schema import CommandRecord
from referee.validators.base import Outcome, ValidatorKind, register
from referee.validators.common import capture_record, short


@register("command_exit_code")
class CommandExitCode(CommandExitCodeSpec, ValidatorKind):
    def check(self, params: CommandExitCodeSpec.Params, ev, index: int) -> Outcome:
        ref = self.evidence_refs(params, index)[0]
        rec = capture_record(ev, ref, CommandRecord, "a command capture")
        code = rec.exit_code
        if rec.timed_out:
            return Outcome.fail(f"`{short(rec.command, 80)}` timed out")
        if code == params.expected:
            return Outcome.hold(f"exit code {code} == {params.expected}", matched=str(code))
        tail = short((rec.stderr or rec.stdout or "").strip()[-200:], 100)
        # the command as the record shows it (a secret variable as its ${NAME}): which run gave this code
        return Outcome.fail(f"exit code {code}, expected {params.expected}, from `{short(rec.command, 80)}`"
                            + (f" ({tail})" if tail else ""))
