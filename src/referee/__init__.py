"""referee: an independent grader for AI agents. The agent that does the work never decides whether it was correct."""

import os as _os
import sys as _sys

if _sys.argv[:1] == ["-m"]:
    # `python -m referee` is importing this package to find its __main__, with the working directory first on
    # sys.path; the runner's working directory is where its agent works, so an agent's `collections.py` there
    # would be imported, as the runner's user, by the very next import (Python's `-P`, done here, before any)
    _sys.path[:] = [p for p in _sys.path if p and _os.path.normpath(p) != _os.getcwd()]

from referee.errors import RefereeError  # noqa: E402

__version__ = "0.1.0"

__all__ = ["RefereeError", "Registry", "__version__", "Actor", "StepContext", "Claim", "run", "RunOptions", "grade",
           "load_plan", "audit_runs", "AuditOptions", "LLMOptions", "AuditEvents", "NoEvents", "AuditResult", "Trace",
           "AuditRecord", "Auditor", "audit_trace", "audit_files", "read_traces", "load_policy", "replay",
           "replay_file"]

# the auditor's public names: name -> (module, attribute), imported on first use
_AUDIT = {
    "audit_runs": ("referee.audit.run.session", "audit_runs"),
    "AuditOptions": ("referee.audit.run.options", "AuditOptions"),
    "LLMOptions": ("referee.audit.run.options", "LLMOptions"),
    "AuditEvents": ("referee.audit.run.options", "AuditEvents"),
    "NoEvents": ("referee.audit.run.options", "NoEvents"),
    "AuditResult": ("referee.audit.run.options", "AuditResult"),
    "Trace": ("referee.audit.trace", "Trace"),
    "AuditRecord": ("referee.audit.records", "AuditRecord"),
    "Auditor": ("referee.audit.run.pipeline", "Auditor"),
    "audit_trace": ("referee.audit.run.pipeline", "audit_trace"),
    "audit_files": ("referee.audit.run.pipeline", "audit_files"),
    "read_traces": ("referee.audit.ingest.readers", "read_traces"),
    "load_policy": ("referee.audit.decide.policyfile", "load_policy"),
    "replay": ("referee.audit.present.replay", "replay_record"),
    "replay_file": ("referee.audit.present.replay", "replay_file"),
}


def __getattr__(name: str):
    # lazy, so `import referee` stays cheap and the walls between halves hold
    if name == "Registry":  # difflib, inspect and entry points: not for `referee --help`
        from referee.core.registry import Registry

        return Registry
    if name in ("Actor", "StepContext", "Claim"):
        from referee.runner.actors import python as _py

        return getattr(_py, name)
    if name == "grade":
        from referee.grader import grade

        return grade
    if name == "run":
        from referee.api import run

        return run
    if name == "RunOptions":
        from referee.rundir.schema import RunOptions

        return RunOptions
    if name == "load_plan":
        from referee.plan import load_plan

        return load_plan
    if name in _AUDIT:
        import importlib

        module, attr = _AUDIT[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(name)
