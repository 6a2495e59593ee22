"""The rules extractor's detail checks, each on small hand-made traces: the rule holding and not."""

from __future__ import annotations

import json

import pytest

from referee.audit.extract.rules import RULES_VERSION, RulesExtractor, extract_rules, task_groups
from referee.audit.trace import Trace
from referee.audit.view.blind import build_view


def step(name, args=None, text=None, data=None, ui=None, error=False):
    obs = {"text": text if text is not None else (json.dumps(data) if data is not None else "ok")}
    if data is not None:
        obs["data"] = data
    if ui is not None:
        obs["ui"] = ui
    if error:
        obs["error"] = True
    return {"action": {"name": name, "args": args or {}}, "observation": obs}


def ev(task, steps):
    return extract_rules(build_view(Trace(run_id="r", task=task, steps=steps)))


def final(task, steps):
    fe = ev(task, steps)["final_supports_goal"]
    return fe.value, fe.note


def test_version_bumped_so_old_cache_is_not_reused():
    assert RULES_VERSION != "1" and RulesExtractor().prompt_version == RULES_VERSION


# -- slot contradiction: the task names one option of a slot, the write carries another ----------

OPTIONS = step("get_options", data={"prices": {"small": 1, "medium": 2, "large": 3}})


def test_slot_contradicted():
    v, note = final("Order a large pizza with id P1Z2A3.",
                    [OPTIONS, step("create_order", {"item": "P1Z2A3", "size": "small"}, data={"order": "O9X8Y7"})])
    assert v == "no" and "'large'" in note and "'size'" in note


def test_slot_matches():
    v, _ = final("Order a large pizza with id P1Z2A3.",
                 [OPTIONS, step("create_order", {"item": "P1Z2A3", "size": "large"}, data={"order": "O9X8Y7"})])
    assert v == "yes"


def test_slot_two_options_named_is_not_a_contradiction():
    v, _ = final("Change order O9X8Y7 from small to large.",
                 [OPTIONS, step("update_order", {"order": "O9X8Y7", "size": "small"}, data={"order": "O9X8Y7"})])
    assert v == "yes"  # the task names both options: which one it wants is not for the rules to guess


# -- entity by attribute: "the card ending 4242" -------------------------------------------------

WALLET = step("get_user", {"user": "u_1"}, data={"methods": {
    "card_111111": {"id": "card_111111", "last_four": "4242"},
    "card_222222": {"id": "card_222222", "last_four": "9999"}}})


def test_attribute_points_elsewhere():
    v, note = final("Pay invoice INV77A with the card ending 4242.",
                    [WALLET, step("pay_invoice", {"invoice": "INV77A", "method": "card_222222"}, data={"ok": 1})])
    assert v == "no" and "card_111111" in note


def test_attribute_used():
    v, _ = final("Pay invoice INV77A with the card ending 4242.",
                 [WALLET, step("pay_invoice", {"invoice": "INV77A", "method": "card_111111"}, data={"ok": 1})])
    assert v == "yes"


# -- stated quantity ----------------------------------------------------------------------------

def test_quantity_contradicted_and_matching():
    task = "Book table T5R6 for 4 guests."
    bad = final(task, [step("book_table", {"table": "T5R6", "guests": 2}, data={"booking": "B1C2D3"})])
    good = final(task, [step("book_table", {"table": "T5R6", "guests": 4}, data={"booking": "B1C2D3"})])
    assert bad[0] == "no" and good[0] == "yes"


def test_quantity_zero_and_additive():
    none = "Book table T5R6; you don't have any guests."
    assert final(none, [step("book_table", {"table": "T5R6", "guests": 2}, data={"b": "B1C2D3"})])[0] == "no"
    add = "Add 2 guests to booking B1C2D3."  # the new total depends on what was there
    assert final(add, [step("update_booking", {"booking": "B1C2D3", "guests": 3}, data={"b": "B1C2D3"})])[0] == "yes"


# -- duplicate creates ---------------------------------------------------------------------------

def test_duplicate_create_not_undone():
    args = {"title": "Standup", "day": "Monday", "room": "R101"}
    steps = [step("create_event", args, data={"event_id": "EV0001"}),
             step("create_event", args, data={"event_id": "EV0002"})]
    v, note = final("Create an event Standup on Monday in room R101.", steps)
    assert v == "no" and "twice" in note


def test_duplicate_create_undone_is_fine():
    args = {"title": "Standup", "day": "Monday", "room": "R101"}
    steps = [step("create_event", args, data={"event_id": "EV0001"}),
             step("delete_event", {"event_id": "EV0001"}, data={"deleted": "EV0001"}),
             step("create_event", args, data={"event_id": "EV0002"})]
    assert final("Create an event Standup on Monday in room R101.", steps)[0] == "yes"


# -- clause coverage: ids after a delete verb must each be deleted -------------------------------

def test_clause_target_left_undeleted():
    steps = [step("update_note", {"id": "N1A2"}, data={"id": "N1A2"}),
             step("delete_note", {"id": "N3B4"}, data={"deleted": "N3B4"})]
    v, note = final("Delete notes N1A2 and N3B4.", steps)
    # N1A2 was updated, never deleted: no delete on it is absence, not a contradiction (issue 32), so a person looks
    assert v == "unknown" and "N1A2" in note


def test_clause_conditional_or_other_verb_not_required():
    steps = [step("delete_note", {"id": "N3B4"}, data={"deleted": "N3B4"}),
             step("update_note", {"id": "N1A2"}, data={"id": "N1A2"})]
    assert final("Delete note N3B4 and update N1A2.", steps)[0] == "yes"
    assert "asks to delete" not in (final("Update N1A2. If N3B4 is empty, delete it.", steps[1:])[1] or "")


# -- quoted content that no action carries -------------------------------------------------------

def test_quoted_content_missing():
    steps = [step("type", {"text": "buy eggs"}), step("click", {"label": "Save"}, text="Saved")]
    v, note = final('Create a note with the text "buy milk".', steps)
    assert v == "no" and "buy milk" in note


def test_quoted_content_typed():
    steps = [step("type", {"text": "Buy  milk"}), step("click", {"label": "Save"}, text="Saved")]
    assert final('Create a note with the text "buy milk".', steps)[0] == "yes"


# -- GUI: a deleted target still on the final screen; clicks by element number --------------------

def test_deleted_target_still_shown():
    ui = {"elements": [{"text": "notes.md"}, {"text": "todo.md"}]}
    steps = [step("open_app", {"name": "Files"}, text="notes.md todo.md", ui=ui),
             step("long_press", {"label": "notes.md"}, text="notes.md todo.md", ui=ui),
             step("click", {"label": "Delete"}, text="notes.md todo.md", ui=ui),
             step("scroll", {"direction": "down"}, text="notes.md todo.md", ui=ui)]
    v, note = final("Delete the file notes.md.", steps)
    assert v == "no" and "notes.md" in note


def test_deleted_target_gone():
    before = {"elements": [{"text": "notes.md"}, {"text": "todo.md"}]}
    after = {"elements": [{"text": "todo.md"}]}
    steps = [step("open_app", {"name": "Files"}, text="notes.md todo.md", ui=before),
             step("long_press", {"label": "notes.md"}, text="notes.md todo.md", ui=before),
             step("click", {"label": "Delete"}, text="todo.md", ui=after),
             step("scroll", {"direction": "down"}, text="todo.md", ui=after)]
    assert final("Delete the file notes.md.", steps)[0] == "yes"


def test_click_by_index_resolves_label_from_the_screen():
    ui = [{"index": 0, "text": "Title"}, {"index": 1, "text": "Save"}]
    steps = [step("input_text", {"text": "Groceries"}, ui=ui), step("click", {"index": 1}, text="Saved", ui=[])]
    e = ev('Create a note titled "Groceries".', steps)
    assert e["committed"].value == "yes" and e["committed"].support == [1]


def test_unlabelled_click_is_unknown_not_no():
    steps = [step("input_text", {"text": "Groceries"}), step("click", {"x": 10, "y": 20}, text="screen")]
    e = ev('Create a note titled "Groceries".', steps)
    assert e["action"].value == "unknown" and e["final_supports_goal"].value == "unknown"


def test_no_click_at_all_is_unknown_not_no():
    # opening an app is a read: nothing shows the note was not made, so absence is no `no` (issue 32)
    e = ev('Create a note titled "Groceries".', [step("open_app", {"name": "Notes"})])
    assert e["action"].value == "unknown"


# -- other kinds, self-signals, questions --------------------------------------------------------

def test_write_of_another_kind_is_unknown():
    e = ev("Cancel booking B1C2D3.", [step("send_voucher", {"user": "u_12"}, data={"v": "V1W2"})])
    assert e["action"].value == "unknown" and e["action"].support == [0]


def test_agent_status_signal_is_not_an_action():
    e = ev("Delete note N1A2.", [step("status", {"goal_status": "complete"})])
    assert e["action"].value == "unknown" and "no actions at all" in (e["action"].note or "")


@pytest.mark.parametrize("task,groups", [
    ("What is on my schedule for today? Answer with the titles only.", []),
    ("Reply to 555-0100 with message: hi", ["send"]),
    ("Cancel reservation X and book a new one", ["create_edit", "delete"]),
])
def test_task_groups_ignore_questions(task, groups):
    assert sorted(task_groups(task)) == groups
