"""The auditor: report-isolated, evidence-first, replayable judgment of finished agent runs."""

from referee.core.lazy import lazy_exports

__all__ = ["audit_runs", "AuditOptions", "LLMOptions", "AuditEvents", "NoEvents", "CallbackEvents", "AuditResult",
           "Auditor", "audit_trace", "audit_files", "Trace", "AuditRecord", "read_traces", "load_policy", "decide"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "audit_runs": "run.session",
    "AuditOptions": "run.options",
    "LLMOptions": "run.options",
    "AuditEvents": "run.options",
    "NoEvents": "run.options",
    "CallbackEvents": "run.options",
    "AuditResult": "run.options",
    "Auditor": "run.pipeline",
    "audit_trace": "run.pipeline",
    "audit_files": "run.pipeline",
    "Trace": "trace",
    "AuditRecord": "records",
    "read_traces": "ingest.readers",
    "load_policy": "decide.policyfile",
    "decide": "decide.decision",
})
