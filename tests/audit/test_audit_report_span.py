"""The final report of a chat transcript reaches back past a courtesy closing to the agent's actual claim."""

from __future__ import annotations

from referee.audit.ingest.readers.openai_chat import is_courtesy, messages_to_trace
from referee.audit.view.blind import build_view


def call(name: str, cid: str) -> dict:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": cid, "function": {"name": name, "arguments": "{\"id\": \"R1\"}"}}]}


CONVO = [
    {"role": "user", "content": "Cancel reservation R1."},
    call("cancel_reservation", "c1"),
    {"role": "tool", "tool_call_id": "c1", "content": "{\"status\": \"cancelled\"}"},
    {"role": "assistant", "content": "Reservation R1 has been cancelled."},
    {"role": "user", "content": "Great, thanks!"},
    {"role": "assistant", "content": "You're welcome! Safe travels."},
]


def test_a_courtesy_closing_pulls_in_the_status_message_before_it():
    t = messages_to_trace(CONVO, run_id="r")
    assert t["report"] == "Reservation R1 has been cancelled.\n\nYou're welcome! Safe travels."
    # the user's reaction to the claim is not evidence
    texts = [s.get("observation", {}).get("text") for s in t["steps"]]
    assert "Great, thanks!" not in texts
    assert all(s.get("narration") != "Reservation R1 has been cancelled." for s in t["steps"])


def test_a_plain_final_report_is_unchanged():
    t = messages_to_trace(CONVO[:4], run_id="r")
    assert t["report"] == "Reservation R1 has been cancelled."


def test_only_courtesy_and_nothing_before_it_stays_the_report():
    convo = [CONVO[0], call("get_reservation", "c1"), CONVO[2], {"role": "assistant", "content": "Thank you! Bye."}]
    assert messages_to_trace(convo, run_id="r")["report"] == "Thank you! Bye."


def test_the_span_never_reaches_back_past_the_last_action():
    convo = [CONVO[0], {"role": "assistant", "content": "I will cancel R1 now."}, call("cancel_reservation", "c1"),
             CONVO[2], {"role": "assistant", "content": "You're welcome!"}]
    assert messages_to_trace(convo, run_id="r")["report"] == "You're welcome!"


def test_the_view_does_not_depend_on_the_closing():
    from referee.audit.trace import Trace

    a = Trace.model_validate(messages_to_trace(CONVO, run_id="r"))
    b = Trace.model_validate(messages_to_trace(CONVO[:-1] + [{"role": "assistant", "content": "Bye!"}], run_id="r"))
    assert build_view(a).sha256 == build_view(b).sha256


def test_courtesy_detection():
    assert is_courtesy("Thank you! Looking forward to assisting you soon. Have a great day!")
    assert is_courtesy("If you need any further assistance, feel free to ask!")
    assert not is_courtesy("I could not cancel it. Have a great day!")
    assert not is_courtesy("Your refund of $120 is on its way. Safe travels!")
    assert not is_courtesy("")
