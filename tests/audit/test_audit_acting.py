"""Ways of acting in layers (extract/acting.py) and the rules that use them: shell code changes, tool
definitions carried in the trace, verb order in tool names, conditional tasks."""

import json

import pytest

from referee.audit.extract.acting import recognise, shell_effect
from referee.audit.extract.rules import extract_rules
from referee.audit.ingest.readers import read_traces
from referee.audit.trace import Trace
from referee.audit.view.blind import build_view


def values(trace: Trace) -> dict:
    return {k: v.value for k, v in extract_rules(build_view(trace)).items()}


def bash(cmd: str, rc: int = 0, out: str = "") -> dict:
    return {"action": {"name": "bash", "args": {"command": cmd}},
            "observation": {"text": out, "data": {"returncode": rc}, "error": rc != 0}}


FIX = "Your task is to make changes to fix the issue.\n\nParser drops the last token of a line."


@pytest.mark.parametrize("cmd, groups", [
    ("sed -i 's/a/b/' src/p.py", {"create_edit"}),
    ("cat <<'EOF' > src/p.py\nx = 1\nEOF", {"create_edit"}),
    ("echo fix | tee -a CHANGES.md", {"create_edit"}),
    ("git apply fix.patch", {"create_edit"}),
    ("python - <<'EOF'\nopen('src/p.py', 'w').write('x')\nEOF", {"create_edit"}),
    ("rm -rf build/", {"delete"}),
    ("cat src/p.py", None),
    ("grep -rn token src | head", None),
    ("pytest -q 2>&1 | tail -3", None),
    ("python run.py > /dev/null", None),
])
def test_shell_commands_that_change_files(cmd, groups):
    eff = shell_effect(cmd)
    assert (set(eff) if eff else None) == groups


def test_a_read_verb_first_makes_a_read_even_with_a_write_noun():
    assert recognise("get_order", {"id": "O-1"}).kind == "read"
    assert recognise("list_bookings", {}).kind == "read"
    assert recognise("placeOrder", {}).kind == "write"


def test_http_status_in_the_observation_text_decides_failure():
    t = Trace(run_id="r", task="Delete note N-771", steps=[
        {"action": {"name": "DELETE /notes/N-771"}, "observation": {"text": "HTTP/1.1 403 Forbidden"}}])
    assert values(t)["committed"] == "no"


def test_shell_fix_judged_by_the_last_check_after_the_last_edit():
    edit = bash("sed -i 's/-1]/]/' src/p.py")
    passed = Trace(run_id="a", task=FIX, steps=[bash("cat src/p.py"), edit, bash("python -m pytest tests/test_p.py")])
    failed = Trace(run_id="b", task=FIX, steps=[edit, bash("pytest -q", rc=1, out="1 failed")])
    unchecked = Trace(run_id="c", task=FIX, steps=[bash("pytest -q"), edit])
    assert values(passed)["final_supports_goal"] == "yes"
    assert values(failed)["final_supports_goal"] == "no"
    assert values(unchecked)["final_supports_goal"] == "unknown"
    assert values(passed)["committed"] == "yes"


def test_a_bug_report_naming_many_things_is_not_a_list_of_targets():
    task = FIX + " Seen with tokenizer.py on v5.2, see https://example.org/issue/12 and foo@example.com."
    t = Trace(run_id="r", task=task, steps=[bash("sed -i 's/a/b/' src/p.py"), bash("pytest -q")])
    v = values(t)
    assert v["final_supports_goal"] == "yes" and v["target_id"] != "no"


def test_a_tool_named_by_no_verb_takes_the_verb_of_its_description_in_the_trace():
    steps = [{"action": {"name": "vx_badge", "args": {"visitor": "V-221"}}, "observation": {"data": {"ok": True}}}]
    task = "Remove the stale badge for visitor V-221"
    described = Trace(run_id="r", task=task, steps=steps,
                      tools=[{"name": "vx_badge", "description": "Revoke a visitor badge. It stops opening doors."}])
    bare = Trace(run_id="r", task=task, steps=steps)
    assert values(described)["committed"] == "yes"
    # without the description the rules cannot classify it: `unknown`, and the note names it and the tool map
    assert values(bare)["action"] == "unknown"
    assert "vx_badge" in (extract_rules(build_view(bare))["action"].note or "")


def test_tools_enter_the_view_only_when_present(tmp_path):
    bare = Trace(run_id="r", task="t", steps=[])
    assert "tools" not in build_view(bare).as_json()
    f = tmp_path / "chat.json"
    f.write_text(json.dumps({"run_id": "c1", "messages": [{"role": "user", "content": "Remove badge V-221"}],
                             "tools": [{"type": "function", "function": {"name": "vx_badge",
                                                                         "description": "Revoke a badge."}}]}))
    [item] = list(read_traces(f))
    assert item.trace.tools[0].name == "vx_badge"
    assert build_view(item.trace).as_json()["tools"] == [{"name": "vx_badge", "description": "Revoke a badge."}]


@pytest.mark.parametrize("task, conditional", [
    ("If the invoice is overdue, send a reminder to the client.", True),
    ("Check the stock; order more paper only if fewer than 3 boxes are left.", True),
    ("Send a reminder to the client about invoice INV-22.", False),
])
def test_conditional_tasks_without_a_write_are_unknown(task, conditional):
    t = Trace(run_id="r", task=task, steps=[{"action": {"name": "get_invoice", "args": {"id": "INV-22"}},
                                             "observation": {"data": {"status": "paid"}}}])
    v = values(t)
    if conditional:  # the lookup that answers the condition is the task's action; whether the write was due, unknown
        assert v["action"] == "yes" and v["final_supports_goal"] == "unknown"
    else:  # the send was owed unconditionally and not seen: absence alone is no `no` (issue 32)
        assert v["action"] == "unknown" and v["final_supports_goal"] != "yes"


def test_a_birthday_in_the_write_neither_verifies_nor_contradicts_the_tasks_date():
    from referee.audit.extract.details import stated_details

    task = "Book the 9am slot on May 22 for patient P-2231"
    birthday_only = stated_details(task, [(1, {"patient": "P-2231", "person": {"dob": "1981-05-26"}})])
    wrong_slot = stated_details(task, [(1, {"patient": "P-2231", "date": "2024-05-26"})])
    assert birthday_only.value == "unknown"
    assert wrong_slot.value == "no"
