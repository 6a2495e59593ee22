"""`referee eval split`: counts per split and group, run_ids and tasks that cross splits."""

from __future__ import annotations

import json

import pytest

from referee.errors import GoldError
from referee.evaluation.splits import check_splits
from tests.evaluation.helpers import record, write_jsonl


def test_counts_per_split_and_group(tmp_path):
    p = tmp_path / "s.csv"
    p.write_text("run_id,split,group\na,dev,x\nb,dev,y\nc,dev,x\nd,test,x\ne,,y\n")
    r = check_splits(p)
    assert r.counts == {"(none)": {"y": 1}, "dev": {"x": 2, "y": 1}, "test": {"x": 1}}
    assert r.totals() == {"(none)": 1, "dev": 3, "test": 1}
    assert r.no_split == 1 and r.ok


def test_run_in_two_splits_is_a_leak_same_split_twice_is_not(tmp_path):
    p = tmp_path / "s.jsonl"
    write_jsonl(p, [{"run_id": "a", "split": "dev"}, {"run_id": "a", "split": "dev"},
                    {"run_id": "b", "split": "dev"}, {"run_id": "b", "split": "test"}])
    r = check_splits(p)
    assert r.runs_in_two_splits == {"b": ["dev", "test"]}
    assert r.repeated_rows == ["a"]
    assert not r.ok


def test_task_in_two_splits_only_when_asked_tasks_from_audit(tmp_path):
    p = tmp_path / "s.csv"
    p.write_text("run_id,split\nr1,dev\nr2,test\nr3,test\n")
    audit = write_jsonl(tmp_path / "a.jsonl", [record("r1", task="Book  a flight"), record("r2", task="Book a flight"),
                                                record("r3", task="Cancel it")])
    assert check_splits(p).ok                       # not asked
    from referee.evaluation.splits import tasks_from_audit

    r = check_splits(p, by_task=True, tasks=tasks_from_audit(audit))
    assert r.tasks_in_two_splits == {"Book a flight": ["dev", "test"]}   # whitespace-normalized
    assert not r.ok
    r2 = check_splits(p, by_task=True)               # no task texts anywhere: counted, not guessed
    assert r2.ok and r2.tasks_unknown == 3


def test_missing_run_id_is_an_error(tmp_path):
    p = tmp_path / "s.csv"
    p.write_text("run_id,split\n,dev\n")
    with pytest.raises(GoldError, match="line 2"):
        check_splits(p)


def test_a_number_too_long_to_read_is_a_bad_line_not_a_crash(tmp_path):
    # json.loads raises a plain ValueError (no .msg) past Python's integer digit limit
    p = tmp_path / "s.jsonl"
    p.write_text('{"run_id": "a", "split": "dev"}\n{"run_id": "b", "split": ' + "1" * 5000 + "}\n")
    with pytest.raises(GoldError, match="line 2.*not a JSON line.*digits"):
        check_splits(p)


def test_cli_split_exit_codes(cli, tmp_path):
    good = tmp_path / "good.csv"
    good.write_text("run_id,split,group\na,dev,x\nb,test,y\n")
    code, out, _ = cli("eval", "split", good)
    assert code == 0 and "dev: 1 runs (x: 1)" in out and "ok: no run_id in two splits" in out
    bad = tmp_path / "bad.csv"
    bad.write_text("run_id,split,task\na,dev,t\nb,test,t\n")
    code, out, _ = cli("eval", "split", bad, "--by-task", "--json")
    assert code == 1
    rep = json.loads(out)
    assert rep["ok"] is False and rep["tasks_in_two_splits"] == {"t": ["dev", "test"]}
