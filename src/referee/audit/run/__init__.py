"""Running an audit: one trace through the stages (pipeline), many on workers, the cache, resume and the output file."""

from referee.core.lazy import lazy_exports

__all__ = ["audit_runs", "AuditOptions", "AuditEvents", "AuditResult", "Auditor", "audit_files", "ParallelAudit"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "audit_runs": "session",
    "AuditOptions": "options",
    "AuditEvents": "options",
    "AuditResult": "options",
    "Auditor": "pipeline",
    "audit_files": "pipeline",
    "ParallelAudit": "parallel",
})
