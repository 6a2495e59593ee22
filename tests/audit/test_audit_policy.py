"""Shipped policies on hand-made evidence: every class, every field value; k-of-n votes with ties; disposition."""

from __future__ import annotations

import itertools

import pytest

from referee.audit.decide.disposition import dispose
from referee.audit.decide.policy import check_run, required_fields
from referee.audit.decide.policyfile import SHIPPED, load_policy, load_policy_model
from referee.audit.decide.votes import effective_k, vote
from referee.audit.records import FINDING_FIELDS, TASK_CLASSES, Finding
from referee.errors import PolicyError

DEFAULT_REQUIRED = {
    "create_edit": {"action", "target_id", "transition", "committed", "final_supports_goal"},
    "configure": {"action", "target_id", "transition", "committed", "final_supports_goal"},
    "delete": {"action", "target_id", "transition", "final_supports_goal"},
    "send": {"action", "target_id", "committed", "final_supports_goal"},
    "query": {"action", "target_id", "final_supports_goal"},
    "other": {"action", "final_supports_goal"},
}


def fe(v: str, cite: bool = True) -> Finding:
    return Finding(value=v, support=[0] if cite else [])  # type: ignore[arg-type]


def all_yes() -> dict:
    return {f: fe("yes") for f in FINDING_FIELDS}


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_policies_load_with_a_hash(name):
    lp = load_policy(name)
    assert lp.policy.name == name and len(lp.sha256) == 64
    assert set(lp.policy.required) == set(TASK_CLASSES)


@pytest.mark.parametrize("cls", TASK_CLASSES)
@pytest.mark.parametrize("field", FINDING_FIELDS)
@pytest.mark.parametrize("value", ["yes", "no", "unknown"])
def test_causal_every_class_every_field_value(cls, field, value):
    p = load_policy_model("causal")
    assert set(required_fields(cls, p)) == DEFAULT_REQUIRED[cls]
    ev = all_yes()
    ev[field] = fe(value)
    got = check_run(ev, cls, p)
    if field not in DEFAULT_REQUIRED[cls] or value == "yes":
        assert got == "completed"
    elif value == "no":
        assert got == "not_completed"
    else:
        assert got == "unknown"


@pytest.mark.parametrize("cls", TASK_CLASSES)
def test_causal_uncited_yes_is_unknown_and_no_beats_unknown(cls):
    p = load_policy_model("causal")
    ev = all_yes()
    ev["action"] = fe("yes", cite=False)
    assert check_run(ev, cls, p) == "unknown"
    ev["final_supports_goal"] = fe("no", cite=False)  # a `no` needs no citation
    assert check_run(ev, cls, p) == "not_completed"
    assert check_run({}, cls, p) == "unknown"  # nothing extracted


@pytest.mark.parametrize("cls", TASK_CLASSES)
@pytest.mark.parametrize("field", FINDING_FIELDS)
@pytest.mark.parametrize("value", ["yes", "no", "unknown"])
def test_final_state_only_reads_the_final_field(cls, field, value):
    p = load_policy_model("final-state")
    ev = all_yes()
    ev[field] = fe(value)
    expected = {"yes": "completed", "no": "not_completed", "unknown": "unknown"}[value]
    assert check_run(ev, cls, p) == (expected if field == "final_supports_goal" else "completed")


@pytest.mark.parametrize("cls", TASK_CLASSES)
@pytest.mark.parametrize("field", FINDING_FIELDS)
@pytest.mark.parametrize("value", ["yes", "no", "unknown"])
def test_low_load_only_an_explicit_no_blocks(cls, field, value):
    p = load_policy_model("low-load")
    ev = all_yes()
    ev[field] = fe(value)
    required = field in DEFAULT_REQUIRED[cls]
    assert check_run(ev, cls, p) == ("not_completed" if (required and value == "no") else "completed")


def test_dispositions_of_every_shipped_policy():
    table = {(c, s): dispose(c, s, load_policy_model("causal")) for c in ("success", "failure_or_incomplete", "unclear")
             for s in ("completed", "not_completed", "unknown")}
    assert table == {
        ("success", "completed"): "pass", ("success", "not_completed"): "flag", ("success", "unknown"): "review",
        ("failure_or_incomplete", "completed"): "pass", ("failure_or_incomplete", "not_completed"): "pass",
        ("failure_or_incomplete", "unknown"): "pass",
        ("unclear", "completed"): "review", ("unclear", "not_completed"): "review", ("unclear", "unknown"): "review"}
    for name in ("final-state", "unanimous"):
        p = load_policy_model(name)
        assert all(dispose(c, s, p) == v for (c, s), v in table.items())
    low = load_policy_model("low-load")
    assert dispose("unclear", "completed", low) == "pass" and dispose("unclear", "not_completed", low) == "review"
    assert dispose("success", "not_completed", low) == "flag"


def test_votes_k_of_n_and_ties():
    C, N, U = "completed", "not_completed", "unknown"
    assert vote([C] * 5) == C
    assert vote([C, C, C, N, N]) == C                    # 3 of 5
    assert vote([C, C, N, N, U]) == U                    # no majority
    assert vote([C, C, N, N]) == U                       # tie at n=4
    assert vote([C, N]) == U
    assert vote([C, C, N], "all") == U and vote([C, C, C], "all") == C
    assert vote([C, C, N, N], 2) == U                    # both reach k: a tie is no verdict
    assert vote([C, C, C, N, N], 2) == C                 # both reach k, one has more
    assert vote([C, U, U, N, N], 1) == U                 # k=1, three states, top tie
    assert vote([N, U, U, U, U], 1) == U
    assert vote([N]) == N and vote([]) == U
    assert effective_k(3, 1) == 1 and effective_k("majority", 5) == 3


def test_unanimous_policy_votes():
    p = load_policy_model("unanimous")
    assert vote(["completed"] * 4 + ["not_completed"], p.votes.threshold) == "unknown"
    assert vote(["completed"] * 5, p.votes.threshold) == "completed"


def test_bad_policy_is_one_line_naming_the_file(tmp_path):
    bad = tmp_path / "p.yaml"
    bad.write_text("policy_version: 1\nname: x\nrequired: {create_edit: [action]}\n")
    with pytest.raises(PolicyError) as ei:
        load_policy_model(str(bad))
    msg = str(ei.value)
    assert str(bad) in msg and "\n" not in msg and "required" in msg
    syntax = tmp_path / "s.yaml"
    syntax.write_text("name: [unclosed\n")
    with pytest.raises(PolicyError, match=r"s.yaml:\d+:\d+: invalid YAML"):
        load_policy_model(str(syntax))


def test_custom_policy_with_inline_task_classes(tmp_path):
    text = (load_policy("causal").path and open(load_policy("causal").path).read())
    text = text.replace("task_classes: default", "task_classes:\n  mode: first\n  patterns:\n"
                                                 "    - {class: send, pattern: 'note'}")
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    p = load_policy_model(str(path))
    from referee.audit.decide.taskclass import classify_task
    assert classify_task("Delete the note", p.task_classes.rule())[0] == "send"


@pytest.mark.parametrize("task,cls", [
    ("Delete the note in Markor named todo.md.", "delete"),
    ("Create a new contact for Ann. Their number is 555.", "create_edit"),
    ("Send a text message to 555 with message: hi", "send"),
    ("Turn wifi off.", "configure"),
    ("What is my next upcoming event in Simple Calendar Pro?", "query"),
    ("Pause the stopwatch.", "other"),
    ("You are mia_li_3668. You want to cancel reservation XEHM4B.", "delete"),
    ("Create a note named a.md with text hi. Share it via SMS.", "create_edit"),
])
def test_frozen_task_class_rule(task, cls):
    from referee.audit.decide.taskclass import classify_task
    assert classify_task(task, load_policy_model("causal").task_classes.rule())[0] == cls


def test_every_combination_of_required_fields_is_decided():
    # exhaustive over the five fields x three values for every class: the checker is total
    p = load_policy_model("causal")
    for cls in TASK_CLASSES:
        for values in itertools.product(["yes", "no", "unknown"], repeat=5):
            ev = {f: fe(v) for f, v in zip(FINDING_FIELDS, values)}
            req = [v for f, v in zip(FINDING_FIELDS, values) if f in DEFAULT_REQUIRED[cls]]
            want = "not_completed" if "no" in req else ("completed" if all(v == "yes" for v in req) else "unknown")
            assert check_run(ev, cls, p) == want
