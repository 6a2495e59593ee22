"""The auditor's last stage: audit records shown to people, summarised, replayed under another policy, and for CI."""

from referee.core.lazy import lazy_exports

__all__ = ["AuditSummary", "summarize", "render_record", "replay_file", "audit_markdown", "write_audit_junit"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "AuditSummary": "summary",
    "summarize": "summary",
    "render_record": "show",
    "replay_file": "replay",
    "audit_markdown": "ci",
    "write_audit_junit": "ci",
})
