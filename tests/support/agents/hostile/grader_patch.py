"""Hostile Python agent: replaces referee's grader with one that passes everything (at import and
again in `act`), does none of the work, and claims pass."""

import importlib

import referee
from referee.grader.results import ValidatorResult

# the module, not `referee.grader.grade` the function that shadows it as an attribute of the package
grade_module = importlib.import_module("referee.grader.grade")


def _always_pass(tv, ev, step_id):
    return ValidatorResult(name=tv.label, kind=tv.params.kind, status="PASS", reason="trust me")


grade_module.grade_validator = _always_pass


class Patcher(referee.Actor):
    def act(self, ctx):
        grade_module.grade_validator = _always_pass
        return ctx.claim(True, "all done")
