"""Policy comparison from cached evidence: each policy is a method that replays a record, no backend, no model call.

Replaying a record under a policy is `referee.audit.decide.decision.decide` (the one place that decides, which
`referee audit` and `referee replay` call too) on the record's task, claim, cached extraction runs and grounding.
A memo keeps each record's decision per policy file while the record is in hand, for methods asked twice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from referee.evaluation.baselines import Method, claim_gate

Gate = Callable[[str | None, str], str]


def shipped_policies() -> tuple[str, ...]:
    """Names of the policies the auditor ships (causal, final-state, low-load, unanimous).

    >>> "causal" in shipped_policies()
    True
    """
    from referee.audit.decide import SHIPPED

    return tuple(SHIPPED)


class _RecordMemo:
    """Per-record memo shared by the policy methods: the decision of the record in hand under each policy file."""

    def __init__(self) -> None:
        self.rec = None
        self.values: dict = {}

    def get(self, rec, key, fn):
        if self.rec is not rec:  # holding `rec` keeps its identity unique until the next record replaces it
            self.rec, self.values = rec, {}
        if key not in self.values:
            self.values[key] = fn()
        return self.values[key]


def replay_disposition(rec, loaded, memo: _RecordMemo | None = None) -> str:
    """The disposition of one audit record under another policy, from its cached evidence only (`decide`).

    >>> from referee.audit.decide.policyfile import load_policy
    >>> from referee.audit.records import AuditRecord
    >>> ev = {"action": {"value": "yes", "support": [1]}, "final_supports_goal": {"value": "unknown"}}
    >>> rec = AuditRecord(run_id="r", task="Do a thing", task_class="other", claim={"label": "success"},
    ...     evidence=[ev], run_states=["unknown"], trace_state="unknown", disposition="review",
    ...     policy={"name": "causal", "sha256": "x"}, backend={"name": "rules"}, view_sha256="v")
    >>> replay_disposition(rec, load_policy("causal")), replay_disposition(rec, load_policy("low-load"))
    ('review', 'pass')
    """
    from referee.audit.decide.decision import decide

    memo = memo or _RecordMemo()
    return memo.get(rec, loaded.sha256, lambda: decide(rec.task, rec.claim.label, rec.evidence, rec.grounding,
                                                       loaded.policy).disposition)


def policy_method(name_or_path: str, memo: _RecordMemo | None = None) -> Method:
    """A method that replays every record under one policy (a shipped name or a YAML path).

    Methods built with the same `memo` share per-record work; use one memo per evaluation pass.
    """
    from referee.audit.decide.policyfile import load_policy

    memo = memo or _RecordMemo()
    loaded = load_policy(name_or_path)
    label = loaded.policy.name
    if name_or_path not in shipped_policies():
        label += f" ({Path(name_or_path).name})"
    return Method(f"policy:{label}", "policy", lambda rec: replay_disposition(rec, loaded, memo),
                  (loaded.policy.description or "").strip() or f"replayed under {name_or_path}")


def policy_methods(names: Sequence[str] = ()) -> list[Method]:
    """Replay methods for the named policies (one shared memo); none named -> every shipped policy."""
    memo = _RecordMemo()
    return [policy_method(n, memo) for n in (names or shipped_policies())]


def gate_for_records(audit: Path | None) -> Gate:
    """The claim gate the judges share with the auditor: the disposition table of the records' policy.

    Falls back to DESIGN.md's default table when there are no records or their policy cannot be loaded.
    """
    if audit is None:
        return claim_gate
    from referee.errors import RefereeError
    from referee.evaluation.dataset import iter_records

    name = None
    for _, rec in iter_records(audit):
        name = rec.policy.name
        break
    if name is None:
        return claim_gate
    try:
        from referee.audit.decide.disposition import dispose
        from referee.audit.decide.policyfile import load_policy_model

        policy = load_policy_model(name)
    except (ImportError, RefereeError):
        return claim_gate

    def gate(claim, state):
        return dispose(claim or "unclear", state, policy)

    return gate
