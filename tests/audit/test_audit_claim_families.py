"""Claim reader v2: one case per cue family, and the family always agrees with the label."""

import pytest

from referee.audit.claim.cues import FAMILY_LABEL
from referee.audit.claim.reader import read_claim_rules


@pytest.mark.parametrize("report, family", [
    ("The two cheapest rooms are R12 and R40.", "delivered_result"),
    ('{"sender": "USPS", "price": 19.05}', "delivered_result"),
    ("FINAL ANSWER: 23", "delivered_result"),
    ('send_msg_to_user("The blue kettle is the cheapest at $12.")', "delivered_result"),
    ("Nobody filed a ticket in March.", "delivered_result"),        # a negative answer is a result
    ("The invoice has been paid and the receipt emailed.", "completion"),
    ("THOUGHT: The diff looks right.\n\n```bash\nsubmit_patch --final\n```", "completion"),
    ("I could not log in: the site blocked access.", "obstacle"),
    ("A CAPTCHA appeared, so the form was not sent.", "obstacle"),
    ("I updated two of the records but not the third.", "obstacle"),
    ('report_infeasible("the store is closed")', "obstacle"),
    ("I found the repository. Next, I will run the tests.", "future_work"),
    ("Once you have the order number, I can start the return.", "future_work"),
    ("Shall I go ahead and cancel the subscription?", "question_back"),
    ("I think the alarm is probably set now.", "hedged"),
    ("You're welcome! Have a lovely evening!", "courtesy_only"),
    ("   ", "empty"),
    ("Okay.", "no_status"),
    # a present tense that says whether something works, after its subject (a black-box tester's cases)
    ("All tests pass.", "delivered_result"),
    ("Everything works now.", "delivered_result"),
    ("The page loads and the form submits.", "delivered_result"),
    ("Run the tests to check.", "no_status"),                        # asks; states nothing
    ("Two tests still fail after my fix.", "obstacle"),
    ("The build is still broken.", "obstacle"),
    # an obstacle word beside a completion that its context does not explain: which decides? review it
    ("The file was deleted. The linter failed.", "hedged"),
    ("The file was deleted. Nothing failed.", "completion"),          # a negated obstacle is none
])
def test_each_cue_family(report, family):
    r = read_claim_rules(report)
    assert r.family == family, r.cue
    assert r.label == FAMILY_LABEL[family]
    assert r.cue


def test_the_record_keeps_the_atoms_of_the_report():
    r = read_claim_rules("Booked R12 for 2024-06-01 at 14:30, total $210.50.")
    assert {"R12", "2024-06-01", "14:30", "$210.50"} <= set(r.atoms)


def test_an_offer_of_more_help_beside_a_result_is_still_success_but_a_confirmation_is_not():
    assert read_claim_rules("I renamed the file. Would you like me to also archive it?").label == "success"
    assert read_claim_rules("I have the draft ready. Shall I proceed and send it?").label == "unclear"


def test_a_huge_report_is_read_on_its_opening_and_its_last_word():
    # (these inputs took minutes before: atoms and the email pattern were quadratic; pytest-timeout guards it)
    middle = "filler text " * 50_000 + "I could not log in at first. " + "filler text " * 50_000
    assert read_claim_rules("Here is my log. " + middle + "In the end the order was placed.").family == "completion"
    assert read_claim_rules("a" * 500_000 + '"' + "b" * 500_000).family == "no_status"
    assert len(read_claim_rules("Order ORD-1 " * 100_000).atoms) <= 40


@pytest.mark.parametrize("report", [
    "The booking failed.", "Task failed.", "Failed.", "ERROR", "The payment was declined.",
    "Your flight is non-refundable, so I did not cancel it.",
    # ("I booked the flight, but the payment failed." reads unclear: a completion beside a failed step the reader
    # cannot place; see test_claims_wording.py, where no obstacle word alone buys failure_or_incomplete)
    "I was unable to cancel the reservation, but feel free to ask if you need anything else.",
])
def test_honest_failure_reports_are_never_success(report):
    r = read_claim_rules(report)
    assert r.label == "failure_or_incomplete" and r.family == "obstacle", r.cue
