"""Day-to-day `eval` and `replay`: no intervals means none, small slices are called out, CSV gold, bad bytes."""

from __future__ import annotations

import json

import pytest

from referee.evaluation.plot import Point, coinciding, tradeoff_points
from tests.evaluation.helpers import audit_and_gold, record

RECORDS = [record(f"r{i}", claim="success", disposition="flag" if i % 2 else "pass",
                  task_class="send" if i < 4 else "query") for i in range(8)]
GOLD = "run_id,completed\n" + "".join(f"r{i},{'false' if i < 6 else 'true'}\n" for i in range(8))


@pytest.fixture
def files(tmp_path):
    return audit_and_gold(tmp_path, RECORDS, GOLD)


def test_resamples_zero_means_no_intervals(cli, files):
    audit, gold = files
    code, out, err = cli("eval", audit, "--gold", gold, "--json", "--no-plot", "--resamples", "0")
    assert code == 0, err
    rep = json.loads(out)
    assert rep["bootstrap"]["resamples"] == 0
    for s in rep["overall"]:
        assert all(m["lo"] is None and m["hi"] is None for m in s["metrics"].values()), s["method"]
    code, md, err = cli("eval", audit, "--gold", gold, "--markdown", "--no-plot", "--resamples", "0")
    assert "intervals: none" in md and "1 resamples" not in md


def test_slices_with_few_positives_are_called_out(cli, files):
    audit, gold = files
    code, md, err = cli("eval", audit, "--gold", gold, "--markdown", "--no-plot", "--resamples", "20")
    assert code == 0, err
    note = next(ln for ln in md.splitlines() if "fewer than 20 positives" in ln)
    # 6 positives overall: 4 in the send slice, 2 in the query slice
    assert "all (6)" in note and "task_class=send (4)" in note and "task_class=query (2)" in note


def test_replay_takes_csv_gold_like_eval(cli, files, tmp_path):
    audit, gold = files
    code, out, err = cli("replay", audit, "--gold", gold)
    assert code == 0, err
    jsonl = tmp_path / "gold.jsonl"
    jsonl.write_text("".join(json.dumps({"run_id": f"r{i}", "completed": i >= 6}) + "\n" for i in range(8)))
    code2, out2, err2 = cli("replay", audit, "--gold", jsonl)
    assert code2 == 0, err2
    assert "success claim but not completed: 6" in out and out == out2


def test_non_utf8_gold_is_one_line_error(cli, files, tmp_path):
    audit, _ = files
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"run_id,completed\nr1,true\n\xff\xfe,false\n")
    code, out, err = cli("eval", audit, "--gold", bad, "--no-plot")
    assert code == 2
    assert err.strip().count("\n") == 0 and "bad.csv" in err and "UTF-8" in err


def test_coinciding_methods_are_one_point_with_every_name(cli, files):
    pts = [Point("auditor", "auditor", 0.5, 0.25), Point("policy:causal", "policy", 0.5, 0.25),
           Point("flag-all", "baseline", 1.0, 0.0), Point("judge", "judge", None, None)]
    assert [[p.name for p in g] for g in coinciding(pts)] == [["auditor", "policy:causal"], ["flag-all"]]
    audit, gold = files
    from referee.evaluation.run import EvalOptions, run_eval

    rep, _ = run_eval(EvalOptions(audit=audit, gold=gold, intervals=False))
    groups = coinciding(tradeoff_points(rep))
    names = [p.name for g in groups for p in g]
    assert len(names) == len(set(names)) and "auditor" in names
    assert all(len({(round(p.load, 4), round(p.silent, 4)) for p in g}) == 1 for g in groups)
    # flag-all and claim-gate-only block every success claim: here every record claims success, so they coincide
    assert any({"flag-all", "claim-gate-only"} <= {p.name for p in g} for g in groups)
