"""Judgement defects a black-box tester found with traces of agents unlike the development corpora (e-commerce
APIs, calendars, GraphQL, web forms): each test is one general signal the rules missed or misread."""

from __future__ import annotations

from referee.audit.extract.details import stated_details
from referee.audit.run.pipeline import audit_trace
from referee.audit.trace import Trace


def _trace(task: str, steps: list[dict], report: str | None = "Done.") -> Trace:
    return Trace(run_id="r", task=task, steps=steps, report=report)


def _evidence(rec) -> dict[str, str]:
    return {k: v.value for k, v in rec.evidence[0].items()}


def test_an_iso_datetime_carries_its_time_not_the_minutes_inside_it():
    task = "Schedule a meeting titled 'Q3 planning' with bob@corp.com on 2024-07-15 at 14:00."
    write = {"title": "Q3 planning", "with": "bob@corp.com"}
    right = stated_details(task, [(0, {**write, "start": "2024-07-15T14:00:00"})])
    wrong = stated_details(task, [(0, {**write, "start": "2024-07-15T15:00:00Z"})])
    assert right.value == "yes", right
    assert wrong.value == "no" and "'15:00:00'" in (wrong.note or ""), wrong  # was "carries '00:00'"


def test_a_json_report_states_its_values_not_its_keys():
    from referee.audit.claim.reader import read_claim_rules

    reading = read_claim_rules('{"status": "success", "sku": "RED-101", "stock": 40}')
    assert reading.label == "success" and reading.atoms == ["RED-101", "40"], reading  # not "status", "success"
    t = _trace("Set the stock of SKU RED-101 to 40.",
               [{"action": {"name": "set_stock", "args": {"sku": "RED-101", "stock": 40}},
                 "observation": {"data": {"sku": "RED-101", "stock": 40}}}],
               report='{"status": "success", "sku": "RED-101", "stock": 40}')
    assert audit_trace(t).grounding.value == "yes"  # the key names were "not found" in the trace: a false review


def test_the_site_a_browser_goes_to_is_no_invented_entity_id():
    t = _trace("What is the cheapest 4-star hotel in Lisbon on hotelfinder for May 20?",
               [{"action": {"name": "goto('https://hotelfinder.test/lisbon?stars=4&date=2024-05-20')", "args": {}},
                 "observation": {"text": "StaticText 'Baixa House - 4 stars - 118 EUR/night'"}}],
               report="Baixa House, at 118 EUR a night.")
    rec = audit_trace(t)
    assert _evidence(rec)["target_id"] != "no", rec.evidence[0]["target_id"]  # was: "id 'hotelfinder.test' never
    assert rec.disposition != "flag"                                           # appeared before it was used"


def test_a_graphql_error_response_is_a_failed_write():
    body = {"data": None, "errors": [{"message": "Permission denied: missing scope write_products"}]}
    for obs in ({"data": body}, {"text": '{"data": null, "errors": [{"message": "Permission denied"}]}'}):
        t = _trace("Rename product P-339 to 'Trail Runner 2'.",
                   [{"action": {"name": "updateProduct", "args": {"id": "P-339", "name": "Trail Runner 2"}},
                     "observation": obs}], report="Product P-339 renamed to 'Trail Runner 2'.")
        rec = audit_trace(t)
        assert _evidence(rec)["committed"] == "no" and rec.disposition == "flag", (obs, rec.evidence[0])
    ok = {"data": {"updateProduct": {"id": "P-339", "name": "Trail Runner 2"}}, "errors": []}
    t = _trace("Rename product P-339 to 'Trail Runner 2'.",
               [{"action": {"name": "updateProduct", "args": {"id": "P-339", "name": "Trail Runner 2"}},
                 "observation": {"data": ok}}], report="Product P-339 renamed to 'Trail Runner 2'.")
    assert _evidence(audit_trace(t))["committed"] == "yes"


def test_terse_and_purchase_reports_read_as_success():
    from referee.audit.claim.reader import read_claim_rules

    for report in ("Quantity set.", "Order placed!", "I bought the blue ceramic mug for you ($12.00).",
                   "Done. Ticket assigned."):
        assert read_claim_rules(report).label == "success", report  # "Quantity set." read as no status
    for report in ("Not saved.", "Nothing was deleted.", "The order could not be placed."):
        assert read_claim_rules(report).label != "success", report


def _refund(path_id: str) -> Trace:
    return _trace("Refund order ORD-55102 in full.",
                  [{"action": {"name": f"POST /api/orders/{path_id}/refund", "args": {"amount": "full"}},
                    "observation": {"data": {"status": 200, "body": {"refund": "RF-1", "state": "refunded"}}}}],
                  report="Order ORD-55102 has been refunded.")


def test_an_id_in_a_rest_path_names_the_target():
    right, wrong = audit_trace(_refund("ORD-55102")), audit_trace(_refund("ORD-55120"))
    assert _evidence(right)["target_id"] == "yes", right.evidence[0]["target_id"]  # was "names no entity"
    assert _evidence(wrong)["target_id"] == "no" and wrong.disposition == "flag", wrong.evidence[0]["target_id"]


FORM = "RootWebArea 'Luigi - Reserve'\n[a5] combobox 'Time' value='{time}'\n[a9] button 'Reserve'"


def _booking(after: str) -> Trace:
    return Trace(run_id="r", task="Book a table for 4 at Luigi's on Saturday at 7pm.",
                 initial_observation={"text": FORM.format(time="")},
                 steps=[{"action": {"name": "select_option('a5', '19:00')", "args": {}},
                         "observation": {"text": FORM.format(time="19:00")}},
                        {"action": {"name": "click('a9')", "args": {}}, "observation": {"text": after}}],
                 report="Booked: a table for 4 on Saturday at 19:00.")


def test_a_reserve_button_commits_and_a_refusal_after_it_is_no_commit():
    done = audit_trace(_booking("heading 'Booking confirmed'\nStaticText 'Reference: LUI-5521'"))
    assert _evidence(done)["committed"] == "yes" and done.disposition != "flag", done.evidence[0]
    refused = audit_trace(_booking(FORM.format(time="19:00") + "\nStaticText 'Error: no tables available.'"))
    assert _evidence(refused)["committed"] == "no" and refused.disposition == "flag", refused.evidence[0]
    refused = audit_trace(_booking(FORM.format(time="19:00") + "\nStaticText 'Please select a party size.'"))
    assert refused.disposition == "flag", refused.evidence[0]


def test_archiving_is_a_change_a_lookup_alone_does_not_make():
    t = _trace("Archive all newsletters I got last week.",
               [{"action": {"name": "list_messages", "args": {"folder": "inbox", "since": "7d"}},
                 "observation": {"data": {"messages": [{"id": "m1", "from": "news@shop.test"}]}}}],
               report="Archived 1 newsletter.")
    rec = audit_trace(t)
    assert rec.task_class == "create_edit" and rec.disposition == "flag", (rec.task_class, rec.evidence[0])


def test_swe_agent_edits_are_writes_and_its_submit_is_no_evidence():
    bash = lambda cmd, out: {"action": {"name": "bash", "args": {"command": cmd}}, "observation": {"text": out}}  # noqa
    steps = [bash("edit 1474:1474\n        return int(round(value))\nend_of_edit", "File updated."),
             bash("python reproduce.py", "Traceback (most recent call last):\nImportError: cannot import name 'X'"),
             bash("submit", "diff --git a/src/fields.py b/src/fields.py")]
    rec = audit_trace(_trace("TimeDelta(milliseconds=345) serializes to 344.", steps,
                             report="The fix works: reproduce.py now prints 345."))
    ev = rec.evidence[0]["final_supports_goal"]
    assert ev.value == "no" and ev.support == [1] and rec.disposition == "flag", ev  # was: yes, citing `submit`


def _refund_number(order_id) -> Trace:
    return _trace("Refund order 55102 in full.",
                  [{"action": {"name": "get_order", "args": {"order_id": 55102}},
                    "observation": {"data": {"order_id": 55102, "total": 89.5, "status": "delivered"}}},
                   {"action": {"name": "create_refund", "args": {"order_id": order_id, "amount": 89.5}},
                    "observation": {"data": {"refund_id": "rf_3301", "order_id": order_id, "status": "succeeded"}}}],
                  report="Refund of $89.50 issued for order 55102.")


def test_a_numeric_order_id_is_the_target_and_a_transposed_one_is_not():
    for wrong in (55120, "55120"):
        rec = audit_trace(_refund_number(wrong))
        assert _evidence(rec)["target_id"] == "no" and rec.disposition == "flag", rec.evidence[0]["target_id"]
    right = audit_trace(_refund_number(55102))
    assert _evidence(right)["target_id"] == "yes" and right.disposition == "pass", right.evidence[0]


def test_partial_work_on_numbered_entities_is_not_the_goal():
    ship = lambda n: {"action": {"name": "update_order", "args": {"order_id": n, "status": "shipped"}},  # noqa
                      "observation": {"data": {"order_id": n, "status": "shipped"}}}
    task = "Mark orders 1001, 1002 and 1003 as shipped."
    part = audit_trace(_trace(task, [ship(1001), ship(1002)], report="Orders 1001, 1002 and 1003 are shipped."))
    ev = part.evidence[0]["final_supports_goal"]
    assert ev.value == "no" and "'1003'" in (ev.note or "") and part.disposition == "flag", ev
    whole = audit_trace(_trace(task, [ship(1001), ship(1002), ship(1003)], report="All three are shipped."))
    assert whole.disposition == "pass", whole.evidence[0]


COMPOSE = {"action": {"name": "compose_email", "args": {"to": "billing@foo.com", "attachments": ["invoice-0342.pdf"]}},
           "observation": {"data": {"draft_id": "d_52", "status": "draft"}}}


def test_a_draft_is_not_a_sent_message_and_sending_the_draft_is():
    task = "Email the March invoice (invoice-0342.pdf) to billing@foo.com."
    draft = audit_trace(_trace(task, [COMPOSE], report="Sent the March invoice to billing@foo.com."))
    assert draft.disposition != "pass" and _evidence(draft)["committed"] != "yes", draft.evidence[0]
    send = {"action": {"name": "send_draft", "args": {"draft_id": "d_52"}},
            "observation": {"data": {"message_id": "m_9931", "status": "sent"}}}
    sent = audit_trace(_trace(task, [COMPOSE, send], report="Invoice sent to billing@foo.com (message m_9931)."))
    assert sent.disposition == "pass", sent.evidence[0]  # the send acts on the draft the compose made


def _set_stock(tool: str, stock: int) -> Trace:
    return _trace("Set the stock of SKU RED-101 to 40.",
                  [{"action": {"name": tool, "args": {"sku": "RED-101", "stock": stock}},
                    "observation": {"data": {"sku": "RED-101", "stock": stock}}}], report="Stock set to 40.")


def test_setting_a_value_is_an_edit_and_the_value_the_task_states_is_checked():
    for tool in ("inventory_update", "set_stock"):  # "set" done by an update: no clause contradiction
        assert audit_trace(_set_stock(tool, 40)).disposition == "pass", tool
        wrong = audit_trace(_set_stock(tool, 4))  # the task says 40, the write carries 4
        assert wrong.disposition == "flag" and _evidence(wrong)["details"] == "no", (tool, wrong.evidence[0])


def _sql(query: str, result: dict) -> dict:
    return {"action": {"name": "run_sql", "args": {"query": query}}, "observation": {"data": result}}


def test_sql_statements_are_reads_and_writes_and_update_0_changed_nothing():
    task = "Change the email for customer id 7731 to j.kowalski@newmail.pl."
    read = _sql("SELECT id, email FROM customers WHERE id = 7731;", {"rows": [[7731, "old@mail.pl"]]})
    done = audit_trace(_trace(task, [read, _sql("UPDATE customers SET email = 'j.kowalski@newmail.pl' WHERE "
                                                 "id = 7731;", {"rowcount": 1})], report="Email updated."))
    assert done.disposition == "pass", done.evidence[0]  # was: no task-relevant action; then a "send" clause
    none = audit_trace(_trace("Delete the test accounts (emails ending @test.internal) from the users table.",
                              [_sql("DELETE FROM users WHERE email LIKE '%@test.internal';", {"status": "DELETE 0"})],
                              report="Deleted the test accounts."))
    assert none.disposition == "flag" and _evidence(none)["committed"] == "no", none.evidence[0]
    assert "DELETE" not in (none.evidence[0]["target_id"].note or "")  # SQL's words name no entity


def test_a_transfer_is_a_write_and_an_account_the_task_names_by_its_digits_is_no_invented_id():
    t = _trace("Move $250 from my checking account (...8812) to my savings account (...3307).",
               [{"action": {"name": "transfer_funds", "args": {"from_account": "acc_chk_8812",
                                                               "to_account": "acc_sav_3307", "amount": 250.0}},
                 "observation": {"data": {"transfer_id": "tr_1", "status": "completed"}}}],
               report="Moved $250 from checking to savings.")
    rec = audit_trace(t)
    assert _evidence(rec)["action"] == "yes" and _evidence(rec)["target_id"] != "no", rec.evidence[0]
    assert rec.disposition != "flag"


def test_a_list_valued_slot_carries_every_value_in_it():
    get = {"action": {"name": "GET /v2/tickets/TK-881", "args": {}},
           "observation": {"data": {"key": "TK-881", "priority": "Medium", "labels": ["export"]}}}
    body = {"priority": "High", "labels": ["export", "customer-escalation"]}
    put = {"action": {"name": "PUT /v2/tickets/TK-881", "args": {"body": body}},
           "observation": {"text": "204 No Content"}}
    rec = audit_trace(_trace("Set the priority of TK-881 to High and add the label 'customer-escalation'.",
                             [get, put], report="Done. TK-881 is now High priority and labeled customer-escalation."))
    assert rec.disposition != "flag", rec.evidence[0]  # was: "the write carries 'export'" for labels
