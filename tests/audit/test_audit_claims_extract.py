"""The rules claim reader and the rules extractor on hand-made reports and traces."""

from __future__ import annotations

import pytest

from referee.audit.claim.reader import read_claim_rules
from referee.audit.extract import validate_citations
from referee.audit.extract.rules import extract_rules
from referee.audit.ingest.readers import read_traces
from referee.audit.records import Finding
from referee.audit.trace import Trace
from referee.audit.view.blind import build_view


@pytest.mark.parametrize("report,label", [
    ("Done - the duplicates were removed.", "success"),
    ("Your reservation XEHM4B has been successfully cancelled. Anything else I can help with?", "success"),
    ("I've booked the flight. Safe travels!", "success"),
    ("I was unable to delete the file.", "failure_or_incomplete"),
    ("Unfortunately the flight is full.", "failure_or_incomplete"),
    ("The message has not been sent yet.", "failure_or_incomplete"),
    ("I deleted two of the recipes but not the third one.", "failure_or_incomplete"),
    ("I have partially completed the task.", "failure_or_incomplete"),
    ("Would you like me to proceed with the cancellation?", "unclear"),  # DESIGN: a question back is unclear
    ("Could you please provide your user id?", "unclear"),
    ("I think the alarm should be set now.", "unclear"),
    ("The event seems to have been created.", "unclear"),
    ("I've cancelled it. Would you like me to also book a new flight?", "success"),  # an offer asks nothing of it
    ("I've cancelled it. Shall I proceed with the refund?", "unclear"),
    ("You're welcome! Have a great day!", "unclear"),
    ("", "unclear"),
    (None, "unclear"),
    ("The weather is nice.", "success"),  # v2: a plain statement delivers a result
    ("Thanks!", "unclear"),
    # negated obstacles are no obstacles (issue 33: a Claude Code report read as failure on 'errored')
    ("All deliverables are complete and verified, though no cells errored.", "success"),
    ("The migration ran: 0 errors, none of the tests failed.", "success"),
    ("Finished without failures; nothing failed.", "success"),
    ("The file was deleted. The first request timed out; the retry worked.", "success"),  # an earlier attempt
    ("The file was deleted. The linter failed.", "unclear"),  # a word the reader cannot place: review, not a pass
])
def test_rules_claim_reader(report, label):
    r = read_claim_rules(report)
    assert r.label == label, r.cue
    assert r.votes == [label] and r.backend == "rules" and r.cue


def _ev(trace: Trace) -> dict[str, Finding]:
    v = build_view(trace)
    return validate_citations(extract_rules(v), len(v.steps))


def _small(traces_dir):
    return {i.trace.run_id: i.trace for i in read_traces(traces_dir / "small.jsonl") if i.trace}


def test_delete_with_a_named_target(traces_dir):
    ev = _ev(_small(traces_dir)["del-ok"])
    assert {f: e.value for f, e in ev.items() if f != "details"} == {
        "action": "yes", "target_id": "yes", "transition": "yes", "committed": "yes", "final_supports_goal": "yes"}
    assert ev["action"].support == [1] and 1 in ev["final_supports_goal"].support


def test_empty_list_means_no_transition_and_no_action_is_unknown(traces_dir):
    ev = _ev(_small(traces_dir)["del-empty"])
    # the empty list shows there was nothing to delete; that no delete was made is absence, so `unknown`
    assert ev["action"].value == "unknown" and ev["transition"].value == "no"
    assert ev["transition"].support  # the empty list it saw is cited
    # "no write succeeded" is shown by no observation: abstention makes it unknown (transition: no decides)
    assert ev["final_supports_goal"].value == "unknown"


def test_typed_but_unsent_is_not_committed(traces_dir):
    ev = _ev(_small(traces_dir)["send-unsent"])
    assert ev["committed"].value == "no" and ev["committed"].support == [1]


def test_error_result_is_not_committed(traces_dir):
    ev = _ev(_small(traces_dir)["create-err"])
    assert ev["action"].value == "yes"
    assert ev["committed"].value == "no" and ev["transition"].value == "no"


def test_empty_list_before_delete_is_no_transition():
    t = Trace.model_validate({"run_id": "r", "task": "Delete all expenses named Lunch", "steps": [
        {"action": {"name": "list_expenses", "args": {}}, "observation": {"text": "no items"}},
        {"action": {"name": "delete_expense", "args": {"name": "Lunch"}}, "observation": {"text": "ok"}}]})
    ev = _ev(t)
    assert ev["transition"].value == "no" and ev["transition"].support == [0]


def test_wrong_id_of_the_same_shape_is_wrong_target():
    t = Trace.model_validate({"run_id": "r", "task": "Cancel reservation ABC123", "steps": [
        {"action": {"name": "cancel_reservation", "args": {"reservation_id": "XYZ789"}},
         "observation": {"text": "{\"status\": \"cancelled\"}"}}]})
    assert _ev(t)["target_id"].value == "no"


def test_id_shown_by_the_environment_before_use_is_grounded():
    t = Trace.model_validate({"run_id": "r", "task": "Cancel my most recent reservation, user u_1", "steps": [
        {"action": {"name": "get_user", "args": {"user_id": "u_1"}}, "observation": {"text": "reservations: QQ77RR"}},
        {"action": {"name": "cancel_reservation", "args": {"reservation_id": "QQ77RR"}},
         "observation": {"text": "ok"}}]})
    ev = _ev(t)
    assert ev["target_id"].value == "yes" and ev["target_id"].support == [0, 1]


def test_invented_id_is_not_grounded():
    t = Trace.model_validate({"run_id": "r", "task": "Cancel my most recent reservation", "steps": [
        {"action": {"name": "cancel_reservation", "args": {"reservation_id": "QQ77RR"}},
         "observation": {"text": "ok"}}]})
    assert _ev(t)["target_id"].value == "no"


def test_partial_completion_of_named_targets():
    t = Trace.model_validate({"run_id": "r", "task": "Cancel reservations AAA111 and BBB222", "steps": [
        {"action": {"name": "cancel_reservation", "args": {"reservation_id": "AAA111"}}, "observation": {"text": "ok"}},
        {"action": {"name": "cancel_reservation", "args": {"reservation_id": "BBB222"}},
         "observation": {"text": "Error: not allowed", "error": True}}]})
    ev = _ev(t)
    assert ev["final_supports_goal"].value == "no"


def test_query_task_reads_count_as_action():
    t = Trace.model_validate({"run_id": "r", "task": "What is the status of order 77A1?", "steps": [
        {"action": {"name": "get_order", "args": {"order_id": "77A1"}},
         "observation": {"data": {"status": "shipped"}}}]})
    ev = _ev(t)
    assert ev["action"].value == "yes" and ev["target_id"].value == "yes" and ev["final_supports_goal"].value == "yes"


def test_gui_commit_click_after_typing_is_committed():
    t = Trace.model_validate({"run_id": "r", "task": "Send a text message to 555 with message: 'hi'", "steps": [
        {"action": {"name": "type", "args": {"text": "hi"}}, "observation": {"text": "To 555: hi"}},
        {"action": {"name": "click", "args": {"element": "Send"}}, "observation": {"text": "Sent: hi"}}]})
    ev = _ev(t)
    assert ev["committed"].value == "yes" and ev["committed"].support == [1]
    assert ev["target_id"].value == "yes"


def test_invalid_citation_makes_a_field_unknown():
    out = validate_citations({"action": Finding(value="yes", support=[5]),
                              "committed": Finding(value="no", support=[-1]),
                              "transition": Finding(value="yes", support=[0])}, 2)
    assert out["action"].value == "unknown" and "invalid citation" in out["action"].note
    assert out["committed"].value == "unknown"
    assert out["transition"].value == "yes"
    assert out["final_supports_goal"].value == "unknown"
