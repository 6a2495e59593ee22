"""The rules' checks as named units (referee/audit/extract/checks.py and acts.py), and `referee kinds --checks`."""

from __future__ import annotations

import doctest
import json

import pytest
from click.testing import CliRunner

from referee.audit.extract import acts, checks
from referee.audit.extract.checks import CHECKS, OUTCOME, read_actions
from referee.audit.extract.rules import extract_rules
from referee.audit.records import FINDING_FIELDS
from referee.audit.trace import Trace
from referee.audit.view.blind import build_view
from referee.cli.main import cli


def test_every_check_has_one_name_a_stage_and_a_one_line_summary():
    names = [c.name for c in CHECKS]
    assert len(names) == len(set(names))
    assert all(c.summary and c.summary.endswith(".") and "\n" not in c.summary for c in CHECKS), CHECKS
    # the field checks decide every evidence field but details, each once, in the record's order of decision
    assert [c.fields for c in checks.checks("field")] == [(f,) for f in
                                                           ("action", "committed", "target_id", "transition",
                                                            "final_supports_goal")]
    assert set(FINDING_FIELDS) <= {f for c in CHECKS for f in c.fields}
    # a conditional task's action is the lookup that answers its condition (the `action` check): its guard leaves it
    assert all(c.fields in (OUTCOME, OUTCOME[1:], ("details",)) for c in checks.checks("guard"))
    assert checks.checks("detail")[-1].name == "stated"  # the one that always answers comes last


def test_kinds_lists_every_check_on_one_line_in_the_order_they_run():
    got = CliRunner().invoke(cli, ["kinds", "--checks"])
    assert got.exit_code == 0, got.output
    lines = got.output.splitlines()
    assert [line.split()[0] for line in lines] == [c.name for c in CHECKS]
    assert all(c.summary in line for c, line in zip(CHECKS, lines))
    rows = json.loads(CliRunner().invoke(cli, ["kinds", "--checks", "--json"]).output)
    assert rows[0] == {"name": "action", "stage": "field", "fields": ["action"], "summary": CHECKS[0].summary}


def _delete_twice() -> Trace:
    return Trace(run_id="r", task="Delete note N42, then share note N43 with bob@example.com.", steps=[
        {"action": {"name": "delete_note", "args": {"id": "N42"}}, "observation": {"text": "deleted"}},
        {"action": {"name": "share_note", "args": {"id": "N43", "with": "bob@example.com"}},
         "observation": {"text": "error: no such note"}}])


def test_a_check_is_a_function_of_the_context_alone():
    cx = read_actions(build_view(_delete_twice()))
    assert [a.kind for a in cx.acts] == ["write", "write"] and cx.wanted == {"delete", "send"}
    assert [a.step.index for a in cx.ok_writes] == [0] and [a.step.index for a in cx.relevant] == [0, 1]
    found = {c.name: c.fn(cx) for c in CHECKS}
    assert found["action"].value == "yes" and found["committed"].support == [0]
    assert found["final_supports_goal"].value == "no" and found["final_supports_goal"].support == [1]  # share failed
    assert all(found[c.name] is None for c in checks.checks("guard"))
    assert found["clause"].value == "no" and "'N43'" in found["clause"].note
    ev = extract_rules(build_view(_delete_twice()))
    assert ev["details"] == found["clause"]  # the first detail check that finds something decides details


@pytest.mark.parametrize("module", [acts, checks])
def test_the_examples_in_the_check_modules_hold(module):
    result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted > 0
