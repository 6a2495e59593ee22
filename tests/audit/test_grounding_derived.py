"""Derived report values are grounded (issue 32, item 2); ungrounded atoms alone never flag."""

from __future__ import annotations

import json
from datetime import date, timedelta

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from referee.audit.claim.derived import MAX_ANCHORS, MAX_CONTEXT, context_of, derive
from referee.audit.claim.grounding import ground_in
from referee.audit.decide.decision import disposition_of
from referee.audit.decide.disposition import dispose
from referee.audit.decide.policy import GroundingSpec
from referee.audit.decide.policyfile import load_policy_model
from referee.audit.records import AuditRecord, ClaimReading, Grounding
from referee.audit.view.atoms import Haystack

PROP = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
POLICIES = ["causal", "final-state", "low-load", "unanimous", "strict"]


def grounded(report_atoms: list[str], observed: str, task: str = "") -> Grounding:
    return ground_in(ClaimReading(label="success", atoms=report_atoms), Haystack(task + "\n" + observed), task)


# (atom, observed text, task, other report atoms, a part of how it was derived or None, why)
CASES = [
    ("$106", '{"fare": 39, "fee": 67}', "", ["$39", "$67"], "39 + 67", "a sum of two values the report names"),
    ("53", '{"a": 67, "b": 14}', "", ["67", "14"], "67 - 14", "a difference of the report's values"),
    ("4,965", '{"y2020": 737015, "y2010": 732050}', "", ["737,015", "732,050"], "737015 - 732050",
     "a difference written with a thousands separator"),
    ("41 years", '{"born": "1983-05-02", "today": "2024-06-10"}', "", [],
     "years from 1983-05-02 to 2024-06-10", "an age from two dates"),
    ("39 days", '{"from": "2024-05-02", "to": "2024-06-10"}', "", [], "days from 2024-05-02 to 2024-06-10",
     "a duration in days"),
    ("136.7 miles", '{"distance": "220 km"}', "", [], "220 km in miles", "a unit conversion, km to miles"),
    ("1.5 hours", "the call took 90 minutes", "", [], "90 minute in hours", "minutes to hours"),
    ("22.2 kg", "weight: 49 lbs", "", [], "49 lb in kg", "pounds to kilograms"),
    ("37.0 °C", "temperature 98.6 F", "", [], "98.6 °F in °C", "Fahrenheit to Celsius"),
    ("12%", '{"rate": 0.12}', "", [], "0.12 as a percent", "a fraction shown as a percent"),
    ("0.35", "a rate of 35% was applied", "", [], "35% as a fraction", "a percent shown as a fraction"),
    ("14.3", '{"mean": 14.3217}', "", [], "14.3217 rounded", "rounded to the precision shown"),
    ("3 items", '{"items": ["pen", "ink", "pad"]}', "", [], "count of a listed array of 3",
     "a count of listed items may be small"),
    ("7.5", '{"parts": [1.5, 2.25, 3.75]}', "", [], "sum of a listed array", "the sum of a listed array"),
    ("$2,000", "budget 5000", "Split $5000 two ways; how much is each?", ["$5000"], None,
     "a value that follows from nothing shown stays ungrounded"),
    ("ORD-106", '{"a": 39, "b": 67}', "", ["39", "67"], None, "an id is never derived"),
    ("17", '{"a": 20, "b": 3}', "", [], None, "a 2-digit result of context values alone is too easy to find"),
    ("1808", '{"born": 1813, "died": 1803}', "", ["1813"], None, "no mean of two values: that of two years is a year"),
    ("339", '{"a": 24, "b": 215, "c": 41}', "Add 124", ["41"], "124 + 215",
     "an anchor (the task's 124) with a context value, 3 significant digits"),
    ("39", '{"a": 24, "b": 15, "c": 41}', "Add 24", ["41"], None,
     "an anchor with a context value needs 3 significant digits: 2-digit results are too easily reached"),
    ("$338", '{"fee": 10, "fare": 328}', "", ["$328"], None, "a one-significant-digit operand (10) is not used"),
    ("1871", '{"x": 152.3}', "In 2023", [], None, "a sum or difference is exact, never rounded"),
]


@pytest.mark.parametrize("atom,observed,task,others,how,why", CASES, ids=[c[-1] for c in CASES])
def test_derivation_rule_cases(atom, observed, task, others, how, why):
    g = grounded([*others, atom], observed, task)
    if how is None:
        assert atom in g.ungrounded and atom not in g.derived, why
    else:
        assert atom not in g.ungrounded, why
        assert how in g.derived[atom], (why, g.derived)


def test_the_record_says_how_an_age_was_derived():
    g = grounded(["41 years"], '{"born": "1983-05-02", "today": "2024-06-10"}')
    assert g.value == "yes" and g.ungrounded == []
    assert g.derived == {"41 years": "41 years: years from 1983-05-02 to 2024-06-10"}


# --------------------------------------------------------------------------- properties

# 10.01 .. 999.99 with at least 2 significant digits (a one-digit operand such as 20 or 300 is not used)
money = st.integers(min_value=1001, max_value=99_999).filter(lambda c: c % 1000).map(lambda c: c / 100)
OPS = {"sum": lambda a, b: a + b, "difference": lambda a, b: abs(a - b), "product": lambda a, b: a * b,
       "ratio": lambda a, b: a / b}


@PROP
@given(a=money, b=money, op=st.sampled_from(sorted(OPS)), noise=st.lists(money, max_size=30))
def test_a_value_computed_from_two_reported_observed_values_is_grounded(a, b, op, noise):
    assume(a != b)
    y = OPS[op](a, b)
    if abs(y) < 10:  # below 2 significant digits at 2 decimals the rule refuses by design
        y = a + b
    shown = f"{y:.2f}"
    obs = json.dumps({"first": a, "second": b, "other": noise})
    g = grounded([f"{a:.2f}", f"{b:.2f}", shown], obs)
    assert shown not in g.ungrounded, (shown, obs)


@PROP
@given(values=st.lists(money, min_size=2, max_size=40))
def test_the_sum_mean_and_count_of_a_listed_array_are_grounded(values):
    obs = json.dumps({"rows": values})
    for shown in (f"{sum(values):.2f}", f"{sum(values) / len(values):.2f}", f"{len(values)} items"):
        assert shown not in grounded([shown], obs).ungrounded, (shown, obs)


@PROP
@given(born=st.dates(min_value=date(1900, 1, 1), max_value=date(2000, 1, 1)),
       days=st.integers(min_value=3700, max_value=30000))
def test_an_age_or_duration_from_two_observed_dates_is_grounded(born, days):
    today = born + timedelta(days=days)
    age = today.year - born.year - ((today.month, today.day) < (born.month, born.day))
    obs = json.dumps({"birth_date": born.isoformat(), "as_of": today.isoformat()})
    assert f"{age} years" not in grounded([f"{age} years"], obs).ungrounded
    assert f"{days} days" not in grounded([f"{days} days"], obs).ungrounded


CONVERSIONS = [("km", "miles", 1 / 1.609344), ("miles", "km", 1.609344), ("kg", "lbs", 1 / 0.45359237),
               ("lbs", "kg", 0.45359237), ("minutes", "hours", 1 / 60), ("hours", "minutes", 60.0)]


@PROP
@given(v=st.integers(min_value=100, max_value=99_999), conv=st.sampled_from(CONVERSIONS))
def test_a_converted_unit_is_grounded(v, conv):
    src, dst, factor = conv
    shown = f"{v * factor:.1f} {dst}"
    assert shown not in grounded([shown], f"measured {v} {src}").ungrounded


@PROP
@given(f=st.integers(min_value=1000, max_value=9999).map(lambda n: n / 10000))
def test_a_fraction_shown_as_a_percent_is_grounded(f):
    shown = f"{f * 100:.2f}%"
    assert shown not in grounded([shown], json.dumps({"share": f})).ungrounded


@PROP
@given(observed=st.lists(st.integers(min_value=10, max_value=999), min_size=1, max_size=60),
       cents=st.integers(min_value=1, max_value=99), big=st.integers(min_value=10**7, max_value=10**8))
def test_a_random_unrelated_value_is_not_grounded(observed, cents, big):
    # beyond every sum, product, ratio, mean, count and conversion of the observed 2-3 digit values: the
    # non-triviality rule keeps derivation from grounding anything at all
    shown = f"{big}.{cents:02d}"
    obs = json.dumps({"values": observed, "text": " ".join(f"{v} km" for v in observed)})
    g = grounded([str(observed[0]), shown], obs)
    assert shown in g.ungrounded and shown not in g.derived


def test_the_candidates_are_bounded_however_many_values_a_trace_holds():
    text = json.dumps({"v": list(range(10_000, 60_000))}) + " 1999-01-01 " * 500
    c = context_of(text, " ".join(str(n) for n in range(100, 300)), [str(n) for n in range(300, 400)])
    assert len(c.anchors) <= MAX_ANCHORS and len(c.values) <= MAX_CONTEXT
    assert derive("123456789.5", c) is None


def test_one_digit_reported_values_are_never_derived_from_arithmetic():
    c = context_of('{"a": 12, "b": 15}', "", ["12", "15"])
    assert derive("3 bags", c) is None  # 15 - 12, but one significant digit and no listed array of 3


# --------------------------------------------------------------------------- ungrounded alone never flags

groundings = st.builds(
    lambda atoms, k, observed, value: Grounding(value=value, atoms=atoms, ungrounded=atoms[:k], observed=observed),
    st.lists(st.sampled_from(["$9.50", "X-12", "2024-01-01", "41"]), max_size=4, unique=True),
    st.integers(min_value=0, max_value=4), st.booleans(), st.sampled_from(["yes", "no", "unknown"]))


@pytest.mark.parametrize("policy", POLICIES)
@PROP
@given(g=groundings, claim=st.sampled_from(["success", "failure_or_incomplete", "unclear"]),
       state=st.sampled_from(["completed", "not_completed", "unknown"]))
def test_ungrounded_atoms_alone_never_flag(policy, g, claim, state):
    p = load_policy_model(policy)
    table = dispose(claim, state, p)
    got = disposition_of(claim, state, g, p)
    if table != "flag":
        assert got != "flag"
    if claim == "success" and g.value == "no" and table == "pass":
        assert got == "review"  # still not passed: someone looks


# (claim, trace state, grounding value, every atom ungrounded, disposition under causal, why)
DECISIONS = [
    ("success", "completed", "no", True, "review", "every atom ungrounded: review, no longer flag"),
    ("success", "completed", "no", False, "review", "some atom ungrounded: review"),
    ("success", "unknown", "no", True, "review", "an undecided trace with ungrounded atoms: review"),
    ("success", "not_completed", "no", True, "flag", "the trace shows the task not done: flag, whatever grounding"),
    ("success", "completed", "yes", False, "pass", "grounded (found or derived) and completed: pass"),
    ("failure_or_incomplete", "completed", "no", True, "pass", "grounding only judges success claims"),
]


@pytest.mark.parametrize("claim,state,value,all_missing,want,why", DECISIONS, ids=[d[-1] for d in DECISIONS])
def test_grounding_decision_table(claim, state, value, all_missing, want, why):
    atoms = ["$9.50", "X-12"]
    g = Grounding(value=value, atoms=atoms, ungrounded=(atoms if all_missing else atoms[:1]) if value == "no" else [],
                  observed=True)
    assert disposition_of(claim, state, g, load_policy_model("causal")) == want, why


def test_a_policy_asking_ungrounded_atoms_to_flag_is_refused_with_the_fix():
    with pytest.raises(ValidationError, match="never flag"):
        GroundingSpec(all_ungrounded="flag")
    with pytest.raises(ValidationError, match="never flag"):
        GroundingSpec(ungrounded="flag")


# --------------------------------------------------------------------------- the record

def test_a_record_written_before_derivations_still_reads():
    old = {"record_version": 4, "run_id": "r", "task": "t", "task_class": "other",
           "claim": {"label": "success", "atoms": ["$9"]}, "evidence": [], "run_states": [], "trace_state": "unknown",
           "disposition": "flag", "policy": {"name": "causal", "sha256": "0"}, "backend": {"name": "rules"},
           "view_sha256": "v", "grounding": {"value": "no", "atoms": ["$9"], "ungrounded": ["$9"], "observed": True}}
    rec = AuditRecord.model_validate(old)
    assert rec.grounding is not None and rec.grounding.derived == {}


def test_an_audited_record_with_a_derived_atom_is_version_6_and_says_how():
    from referee.audit.run.pipeline import audit_trace
    from referee.audit.trace import Trace

    t = Trace(run_id="r", task="What do the two fares of booking B-17 cost together?",
              steps=[{"action": {"name": "get_booking", "args": {"id": "B-17"}},
                      "observation": {"data": {"fares": [{"price": 39}, {"price": 67}]}}}],
              report="Booking B-17: the fares are $39 and $67, $106 in all.")
    rec = audit_trace(t)
    assert rec.grounding is not None and rec.grounding.value == "yes"
    assert rec.grounding.derived == {"$106": "$106: 39 + 67"}
    line = json.loads(rec.model_dump_json())
    assert line["record_version"] == 6 and line["grounding"]["derived"]
