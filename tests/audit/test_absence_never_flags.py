"""Absence never flags: actions the rules cannot classify make a field `unknown`, never a `no` that flags."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee.audit.claim.reader import RulesClaimReader
from referee.audit.decide.decision import disposition_of
from referee.audit.decide.policyfile import load_policy
from referee.audit.extract.rules import RulesExtractor
from referee.audit.run.pipeline import Auditor
from referee.audit.trace import Trace

DATA = Path(__file__).resolve().parents[1] / "data"
_RULE_CASES: list[dict[str, Any]] = yaml.safe_load((DATA / "rule_cases.yaml").read_text(encoding="utf-8"))
_TRACES = [t for line in (DATA / "traces" / "small.jsonl").read_text(encoding="utf-8").splitlines()
           if line.startswith("{") and "task" in (t := json.loads(line))]  # its malformed lines are for the readers
# every trace of the test data and the rule cases: a task, its steps, a report
TRACES: list[dict[str, Any]] = [
    {"task": t["task"], "steps": t.get("steps", []), "report": t.get("report") or "Done.",
     "initial_observation": t.get("initial_observation")} for t in _TRACES] + [
    {"task": c["task"], "steps": c.get("steps", []), "report": c.get("report") or "Done.",
     "initial_observation": c.get("initial_observation")} for c in _RULE_CASES if c.get("steps")]

# letters no verb of the vocabulary, shell, HTTP or browser name can be spelt from (no vowels, no `s`)
_UNKNOWN = st.text(alphabet="bcdfghjkqvwxz", min_size=3, max_size=10).map(lambda s: "zq" + s)


def _renamed(steps: list[dict[str, Any]], names: list[str]) -> list[dict[str, Any]]:
    """The steps with every action given an unknown name, and its argument keys too (`url`, `query`, `command`
    tell an action's kind as a name does); the values, and every observation, are kept."""
    out = []
    for i, s in enumerate(steps):
        s = dict(s)
        a = s.get("action")
        if isinstance(a, dict):
            args = a.get("args") or {}
            s["action"] = {"name": names[i % len(names)],
                           "args": {f"{names[i % len(names)]}{k}": v for k, v in enumerate(args.values())}
                           if isinstance(args, dict) else args}
        elif isinstance(a, str):
            s["action"] = {"name": names[i % len(names)], "args": {}}
        out.append(s)
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(TRACES), names=st.lists(_UNKNOWN, min_size=1, max_size=6))
def test_renaming_every_action_to_an_unknown_tool_never_flags(case, names):
    trace = Trace(run_id="r", task=case["task"], steps=_renamed(case["steps"], names), report=case["report"],
                  initial_observation=case["initial_observation"])
    policy = load_policy("causal")
    rec = Auditor(policy, RulesExtractor(), RulesClaimReader()).audit(trace)
    ev = rec.evidence[0]
    nos = {f: (fe.note, fe.support) for f, fe in ev.items() if fe.value == "no"}
    # the trace side alone: the checker's state through the disposition table (grounding is the claim side's)
    assert disposition_of(rec.claim.label, rec.trace_state, None, policy.policy) != "flag", (case["task"], nos)
    assert "action" not in nos, (case["task"], nos)


def test_a_trace_of_no_actions_at_all_is_unknown_and_says_so():
    rec = Auditor(load_policy("causal"), RulesExtractor(), RulesClaimReader()).audit(
        Trace(run_id="r", task="Delete the note N-7.", steps=[], report="Note N-7 deleted."))
    assert rec.evidence[0]["action"].value == "unknown"
    assert "no actions at all" in (rec.evidence[0]["action"].note or "")
    assert rec.disposition == "review"


_CONDITIONS = ["If it is over {n}, create a ticket for it.", "Create a ticket for it only if it is over {n}.",
               "Create a ticket for it when it is over {n}.", "Unless it is under {n}, create a ticket for it.",
               "In case it is over {n}, create a ticket for it."]


@settings(max_examples=40, deadline=None)
@given(cond=st.sampled_from(_CONDITIONS), limit=st.integers(0, 1000), value=st.integers(0, 1000),
       tool=st.sampled_from(["get_reading", "read_sensor", "fetch_metrics", "lookup_value"]))
def test_a_conditional_task_with_no_write_and_an_answered_condition_is_not_no(cond, limit, value, tool):
    task = "Look at the latest reading of sensor T-4. " + cond.format(n=limit)
    trace = Trace(run_id="r", task=task, steps=[{"action": {"name": tool, "args": {"sensor": "T-4"}},
                                                 "observation": {"data": {"sensor": "T-4", "value": value}}}],
                  report=f"The reading is {value}; no ticket was needed.")
    rec = Auditor(load_policy("causal"), RulesExtractor(), RulesClaimReader()).audit(trace)
    ev = rec.evidence[0]
    assert ev["action"].value == "yes" and ev["action"].support == [0], ev["action"]
    assert not [f for f, fe in ev.items() if fe.value == "no"], {f: fe.note for f, fe in ev.items()}
    assert rec.disposition != "flag"
