"""Disposition: claim x trace state -> pass | flag | review, read from the policy's table. Pure."""

from __future__ import annotations

from referee.audit.decide.policy import Policy


def dispose(claim: str, trace_state: str, policy: Policy) -> str:
    """Look up the disposition; the default table flags success over not_completed.

    >>> from referee.audit.decide.policyfile import load_policy_model
    >>> p = load_policy_model("causal")
    >>> dispose("success", "not_completed", p), dispose("success", "completed", p), dispose("unclear", "completed", p)
    ('flag', 'pass', 'review')
    >>> dispose("failure_or_incomplete", "unknown", p)
    'pass'
    """
    return policy.disposition[claim][trace_state]  # type: ignore[index]
