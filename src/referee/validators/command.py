"""command_exit_code: a command the runner ran after the step exited with `expected`."""

from __future__ import annotations

from pydantic import model_validator

from referee.rundir import CommandRecord
from referee.validators.base import CaptureRequest, Outcome, ValidatorKind, ValidatorParams, register
from referee.validators.common import capture_record, implicit_name, short


@register("command_exit_code")
class CommandExitCode(ValidatorKind):
    summary = "a command (run by the runner after the step) exits with `expected` (default 0)"

    class Params(ValidatorParams):
        command: str | None = None
        evidence: str | None = None
        expected: int = 0
        timeout_s: float = 60.0

        @model_validator(mode="after")
        def _one_source(self):
            if (self.command is None) == (self.evidence is None):
                raise ValueError("give exactly one of `command` (the runner runs it) or `evidence` (a capture name)")
            return self

    def captures(self, params, index):
        if params.command is None:
            return []
        return [CaptureRequest("command", implicit_name(params.kind, index),
                               {"command": params.command, "timeout_s": params.timeout_s})]

    def check(self, params, ev, index):
        ref = self.evidence_refs(params, index)[0]
        rec = capture_record(ev, ref, CommandRecord, "a command capture")
        code = rec.exit_code
        if rec.timed_out:
            return Outcome.fail(f"`{rec.command}` timed out")
        if code == params.expected:
            return Outcome.hold(f"exit code {code} == {params.expected}", matched=str(code))
        tail = short((rec.stderr or rec.stdout or "").strip()[-200:], 100)
        return Outcome.fail(f"exit code {code}, expected {params.expected}" + (f" ({tail})" if tail else ""))
