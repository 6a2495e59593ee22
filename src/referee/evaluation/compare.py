"""Policy comparison from cached evidence: each policy is a method that replays a record, no backend, no model call.

Replaying a record under a policy re-derives the task class with the policy's rule, re-checks
each cached extraction run, re-votes and re-disposes, reading only the record: the pieces of
`referee.audit.decide.decision` (the one place that decides), memoised here so that several policies share
one classification and one set of run states per record (about twice as fast as copying the record
per policy).
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
    from referee.audit.decide.policyfile import SHIPPED

    return tuple(SHIPPED)


class _RecordMemo:
    """Per-record memo shared by the policy methods: policies with the same task-class rule or the same
    checker settings re-use one classification and one set of run states for the record in hand."""

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
    """The disposition of one audit record under another policy, from its cached evidence only.

    >>> from referee.audit.decide.policyfile import load_policy
    >>> from referee.audit.records import AuditRecord
    >>> ev = {"action": {"value": "yes", "support": [1]}, "final_supports_goal": {"value": "unknown"}}
    >>> rec = AuditRecord(run_id="r", task="Do a thing", task_class="other", claim={"label": "success"},
    ...     evidence=[ev], run_states=["unknown"], trace_state="unknown", disposition="review",
    ...     policy={"name": "causal", "sha256": "x"}, backend={"name": "rules"}, view_sha256="v")
    >>> replay_disposition(rec, load_policy("causal")), replay_disposition(rec, load_policy("low-load"))
    ('review', 'pass')
    """
    from referee.audit.decide.decision import disposition_of, run_states
    from referee.audit.decide.taskclass import classify_task
    from referee.audit.decide.votes import vote

    memo = memo or _RecordMemo()
    policy = loaded.policy
    rule = _rule(loaded)
    task_class = memo.get(rec, ("class", rule), lambda: classify_task(rec.task, rule)[0])
    required = tuple(sorted(policy.required.get(task_class, policy.required["other"])))
    states = memo.get(rec, ("states", task_class, required, policy.checker.unknown_as),
                      lambda: run_states(rec.evidence, task_class, policy))
    return disposition_of(rec.claim.label, vote(states, policy.votes.threshold), rec.grounding, policy)


_RULES: dict[str, object] = {}


def _rule(loaded):
    """The compiled task-class rule of a loaded policy, built once per policy file."""
    key = loaded.sha256
    if key not in _RULES:
        _RULES[key] = loaded.policy.task_classes.rule()
    return _RULES[key]


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
