"""The one place that decides: claim + evidence + grounding + policy -> run states, trace state, disposition. Pure.

`referee audit` and `referee replay` both call `decide`, so a replayed record is judged exactly
as a fresh one would be under the same policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from referee.audit.decide.disposition import dispose
from referee.audit.decide.policy import Policy, check_run
from referee.audit.decide.taskclass import classify_task
from referee.audit.decide.votes import vote
from referee.audit.records import Finding, Grounding

_SEVERITY = {"pass": 0, "review": 1, "flag": 2}


@dataclass(frozen=True)
class Decision:
    """What the policy made of one run."""

    task_class: str
    run_states: tuple[str, ...]
    trace_state: str
    disposition: str


def stricter(a: str, b: str) -> str:
    """The stricter of two dispositions (pass < review < flag).

    >>> stricter("pass", "review"), stricter("flag", "review")
    ('review', 'flag')
    """
    return a if _SEVERITY[a] >= _SEVERITY[b] else b


def grounding_floor(claim: str, grounding: Grounding | None, policy: Policy) -> str:
    """The mildest disposition grounding allows for this claim (`pass` when it does not apply); never `flag`.

    >>> from referee.audit.decide.policyfile import load_policy_model
    >>> g = Grounding(value="no", atoms=["$9", "X-1"], ungrounded=["$9"], observed=True)
    >>> causal = load_policy_model("causal")
    >>> grounding_floor("success", g, causal), grounding_floor("unclear", g, causal)
    ('review', 'pass')
    """
    spec = policy.grounding
    if not spec.enabled or claim != "success" or grounding is None or grounding.value != "no":
        return "pass"
    floor = spec.all_ungrounded if grounding.observed and set(grounding.ungrounded) >= set(grounding.atoms) \
        else spec.ungrounded
    return "review" if floor == "flag" else floor  # absence is no contradiction: grounding alone never flags


def run_states(evidence: Sequence[Mapping[str, Finding]], task_class: str, policy: Policy) -> tuple[str, ...]:
    """The checker's state of each extraction run (sample)."""
    return tuple(check_run(ev, task_class, policy) for ev in evidence)


def disposition_of(claim: str, trace_state: str, grounding: Grounding | None, policy: Policy) -> str:
    """The disposition table, then grounding (which can only make it stricter).

    >>> from referee.audit.decide.policyfile import load_policy_model
    >>> g = Grounding(value="no", atoms=["$9"], ungrounded=["$9"])
    >>> disposition_of("success", "completed", g, load_policy_model("causal"))
    'review'
    """
    return stricter(dispose(claim, trace_state, policy), grounding_floor(claim, grounding, policy))


def decide(task: str, claim: str, evidence: Sequence[Mapping[str, Finding]], grounding: Grounding | None,
           policy: Policy) -> Decision:
    """Judge one run: task class from the task text, each extraction run checked, k-of-n vote, the
    disposition table, then grounding (which can only make a disposition stricter).

    >>> from referee.audit.decide.policyfile import load_policy_model
    >>> y = Finding(value="yes", support=[0])
    >>> decide("Say hello", "success", [{"action": y, "final_supports_goal": y}], None, load_policy_model("causal"))
    Decision(task_class='other', run_states=('completed',), trace_state='completed', disposition='pass')
    """
    task_class, _ = classify_task(task, policy.task_classes.rule())
    states = run_states(evidence, task_class, policy)
    state = vote(states, policy.votes.threshold)
    return Decision(task_class, states, state, disposition_of(claim, state, grounding, policy))
