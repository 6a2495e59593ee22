"""The auditor's deciding stage, pure: task class, votes, policy and its files, disposition, and `decide` itself."""

from referee.core.lazy import lazy_exports

# the policies shipped in policies/, named here so that a caller can tell a name from a path without loading one
SHIPPED = ("causal", "final-state", "low-load", "unanimous", "strict")

__all__ = ["decide", "load_policy", "LoadedPolicy", "SHIPPED", "vote", "dispose"]

__getattr__, __dir__ = lazy_exports(__name__, {
    "decide": "decision",
    "load_policy": "policyfile",
    "LoadedPolicy": "policyfile",
    "vote": "votes",
    "dispose": "disposition",
})
