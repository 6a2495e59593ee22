"""file_exists: the runner copied the named file into the evidence after the step."""

from __future__ import annotations

from referee.plan.validators import FileExistsSpec, implicit_name
from referee.rundir.schema import FileRecord
from referee.validators.base import Outcome, ValidatorKind, register
from referee.validators.common import capture_record


@register("file_exists")
class FileExists(FileExistsSpec, ValidatorKind):
    def check(self, params: FileExistsSpec.Params, ev, index: int) -> Outcome:
        rec = capture_record(ev, implicit_name(params.kind, index), FileRecord, "a file capture")
        path = rec.resolved or params.path
        if not rec.exists and rec.not_regular:
            return Outcome.fail(f"{path} is not a regular file ({rec.not_regular}) after the step")
        if not rec.exists:
            return Outcome.fail(f"{path} does not exist after the step")
        size = rec.size
        if size < params.min_size:
            return Outcome.fail(f"{path} has {size} bytes, fewer than {params.min_size}")
        if rec.copy_:
            ev.path(rec.copy_)  # the copy must still hash to what was captured
        return Outcome.hold(f"{path} exists ({size} bytes)", matched=params.path)
