"""The auditor's deciding stage, pure: task class, votes, policy and its files, disposition, and `decide` itself."""

from referee.core.lazy import lazy_exports

__all__ = ["decide", "load_policy", "LoadedPolicy", "SHIPPED", "vote", "dispose"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "decide": "decision",
    "load_policy": "policyfile",
    "LoadedPolicy": "policyfile",
    "SHIPPED": "policyfile",
    "vote": "votes",
    "dispose": "disposition",
})
