"""The audit summary counts a record over the record budget apart from one whose backend calls got no answer (issue
30 acceptance finding 6): a resume asks the unanswered again, but leaves an over-budget record until its budget is
raised, so the summary must not promise that running the same command again retries it."""

from __future__ import annotations

import pytest

from referee.audit.present.summary import render, summarize
from referee.audit.records import OverBudgetNote
from referee.audit.run.pipeline import audit_trace
from referee.audit.trace import Trace

RETRY = "run the same command again to ask again"
FLAGS = {"cpu": "--record-cpu-s", "wall": "--record-wall-s", "memory": "--record-memory-mib"}


def _rec(rid: str, *, errors: list[str] | None = None, over: str | None = None):
    rec = audit_trace(Trace(run_id=rid, task="Delete note N42", steps=[], report="Done."))
    note = OverBudgetNote(limit=over, cpu_s=10, wall_s=30, memory_mib=512) if over else None  # type: ignore[arg-type]
    return rec.model_copy(update={"errors": errors or [], "over_budget": note,
                                  "disposition": "review" if over else rec.disposition})


@pytest.mark.parametrize("limit", sorted(FLAGS))
def test_an_over_budget_record_is_counted_apart_and_names_its_flag(limit):
    s = summarize([_rec("a"), _rec("b", errors=[f"record budget: its audit went over ... ({FLAGS[limit]})"],
                                   over=limit)])
    text = render(s)
    assert RETRY not in text and "got no answer" not in text, text
    (line,) = [ln for ln in text.splitlines() if "record budget" in ln]
    assert "1" in line and FLAGS[limit] in line and "resume leaves" in line, line
    assert [f for f in FLAGS.values() if f in line] == [FLAGS[limit]], line
    d = s.as_dict()
    assert d["unanswered"] == 0 and d["over_budget"] == {**{k: 0 for k in FLAGS}, limit: 1}


def test_unanswered_and_over_budget_records_each_have_their_own_line():
    s = summarize([_rec("a", errors=["backend: no answer after 3 tries"]), _rec("b", errors=["budget"], over="cpu"),
                   _rec("c", errors=["budget"], over="memory")])
    text = render(s)
    (unanswered,) = [ln for ln in text.splitlines() if RETRY in ln]
    assert "got no answer: 1 " in unanswered
    (over,) = [ln for ln in text.splitlines() if "record budget" in ln]
    assert ": 2 " in over and "--record-cpu-s or --record-memory-mib" in over and "--record-wall-s" not in over
    assert s.as_dict()["unanswered"] == 1 and s.as_dict()["over_budget"] == {"cpu": 1, "wall": 0, "memory": 1}


def test_a_summary_with_neither_says_neither():
    text = render(summarize([_rec("a")]))
    assert RETRY not in text and "record budget" not in text
