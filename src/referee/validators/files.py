"""file_exists: the runner copied the named file into the evidence after the step."""

from __future__ import annotations

from referee.rundir import FileRecord
from referee.validators.base import CaptureRequest, Outcome, ValidatorKind, ValidatorParams, register
from referee.validators.common import capture_record, implicit_name


@register("file_exists")
class FileExists(ValidatorKind):
    summary = "a file exists after the step (the runner copies it into the evidence)"

    class Params(ValidatorParams):
        path: str
        min_size: int = 0

    def captures(self, params, index):
        return [CaptureRequest("file", implicit_name(params.kind, index), {"path": params.path})]

    def evidence_refs(self, params, index):
        return [implicit_name(params.kind, index)]

    def check(self, params, ev, index):
        rec = capture_record(ev, implicit_name(params.kind, index), FileRecord, "a file capture")
        path = rec.resolved or params.path
        if not rec.exists:
            return Outcome.fail(f"{path} does not exist after the step")
        size = rec.size
        if size < params.min_size:
            return Outcome.fail(f"{path} has {size} bytes, fewer than {params.min_size}")
        if rec.copy_:
            ev.path(rec.copy_)  # the copy must still hash to what was captured
        return Outcome.hold(f"{path} exists ({size} bytes)", matched=params.path)
