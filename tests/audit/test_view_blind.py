"""The claim-blind view (referee/audit/view/blind.py): what the claim says never reaches the extractor."""

from referee.audit.run.pipeline import audit_trace
from referee.audit.trace import Trace
from referee.audit.view.blind import build_view


def test_what_a_terminal_answer_call_says_stays_out_of_the_view():
    def trace(text):
        return Trace(run_id="r", task="Cancel XEHM4B", steps=[
            {"action": {"name": "cancel", "args": {"id": "XEHM4B"}}, "observation": {"text": "ok"}},
            {"action": {"name": "send_msg_to_user", "args": {"content": text}}}])

    yes, no = trace("It is cancelled and refunded."), trace("I could not cancel XEHM4B.")
    assert build_view(yes).sha256 == build_view(no).sha256
    assert build_view(yes).as_json()["steps"][1]["action"] == {"name": "send_msg_to_user", "args": {}}
    assert (audit_trace(yes).claim.label, audit_trace(no).claim.label) == ("success", "failure_or_incomplete")
