"""Every method against claim-gate-only at the method's own load: hand-computed cases, n/a, the report and the CLI."""

from __future__ import annotations

import json

import pytest

from referee.evaluation.baselines import auditor_method, baselines
from referee.evaluation.bootstrap import BootstrapSpec
from referee.evaluation.dataset import tally
from referee.evaluation.equal_load import (
    GATE,
    at_equal_load,
    difference,
    difference_interval,
    gate_at_load,
    joint_cell,
    marginals,
)
from referee.evaluation.gold import load_gold
from referee.evaluation.metrics import Confusion
from referee.evaluation.render import equal_load_table, render
from referee.evaluation.results import evaluate
from tests.evaluation.helpers import audit_and_gold, record, write_jsonl

# 10 runs, 5 success claims (claim-gate-only: load 0.5), 3 of them positives (its blocked recall 1).
GATE_CELLS = Confusion(neg_pass=5, neg_flag=2, pos_flag=3)


def joint(rows: list[tuple[bool, bool, str]]) -> list[int]:
    """12 joint cells from (gate blocks, positive, method disposition) rows."""
    cells = [0] * 12
    for g, p, d in rows:
        cells[joint_cell(g, p, d)] += 1
    return cells


def test_method_beats_the_gate_at_equal_load():
    # load 0.2: flags two runs, both positives -> blocked recall 2/3; the gate at 2 of its 5 claims: 2/5
    m = Confusion(neg_pass=7, pos_pass=1, pos_flag=2)
    r = at_equal_load(m, GATE_CELLS)
    assert r.load == pytest.approx(0.2) and r.blocked_recall == pytest.approx(2 / 3)
    assert r.gate.blocked_recall == pytest.approx(0.4) and r.gate.silent_pass_rate == pytest.approx(0.6)
    assert r.difference == pytest.approx(2 / 3 - 0.4) and r.difference > 0
    assert r.inspection_yield == 1.0 and r.gate.inspection_yield == pytest.approx(3 / 5)


def test_method_loses_to_the_gate_at_equal_load():
    # load 0.3: one flag, two reviews, one positive among them -> 1/3; the gate at 3 of 5 claims: 3/5
    m = Confusion(neg_pass=5, neg_flag=1, neg_review=1, pos_pass=2, pos_review=1)
    r = at_equal_load(m, GATE_CELLS)
    assert r.load == pytest.approx(0.3) and r.blocked_recall == pytest.approx(1 / 3)
    assert r.gate.blocked_recall == pytest.approx(0.6)
    assert r.difference == pytest.approx(1 / 3 - 0.6) and r.difference < 0
    assert r.inspection_yield == pytest.approx(1 / 3) and r.gate.inspection_yield == pytest.approx(0.6)


def test_load_above_the_gates_caps_at_its_own_blocked_recall():
    # flag-all: load 1, twice the gate's; the gate blocks all it can and its extra inspections find nothing
    r = at_equal_load(Confusion(neg_flag=7, pos_flag=3), GATE_CELLS)
    assert r.gate.blocked_recall == 1.0 and r.difference == 0.0 and r.gate.inspection_yield == pytest.approx(0.3)
    # a gate whose own blocked recall is 3/4 (a positive whose claim it did not read as success) stays at 3/4
    gate = Confusion(neg_pass=4, neg_flag=2, pos_pass=1, pos_flag=3)
    assert gate_at_load(gate, 0.8).blocked_recall == pytest.approx(0.75)
    assert gate_at_load(gate, 0.25).blocked_recall == pytest.approx(0.5 * 0.75)   # 2.5 of its 5 runs


def test_zero_load_is_a_real_zero_and_the_gate_yield_is_undefined():
    r = at_equal_load(Confusion(neg_pass=7, pos_pass=3), GATE_CELLS)   # trust-claim
    assert (r.load, r.blocked_recall, r.gate.blocked_recall, r.difference) == (0.0, 0.0, 0.0, 0.0)
    assert r.inspection_yield is None and r.gate.inspection_yield is None


def test_no_positives_or_no_success_claims_are_undefined_never_zero():
    no_pos = at_equal_load(Confusion(neg_pass=8, neg_flag=2), Confusion(neg_pass=5, neg_flag=5))
    assert no_pos.blocked_recall is None and no_pos.gate.blocked_recall is None and no_pos.difference is None
    assert no_pos.gate.silent_pass_rate is None and no_pos.gate.inspection_yield is None
    # positives (by the gold claim) but the gate read no success claim: it blocks nothing, n/a
    no_claims = at_equal_load(Confusion(neg_pass=8, pos_flag=2), Confusion(neg_pass=8, pos_pass=2))
    assert no_claims.blocked_recall == 1.0 and no_claims.gate.blocked_recall is None
    assert no_claims.difference is None
    assert difference_interval(joint([(False, False, "pass")] * 5), BootstrapSpec(resamples=50)).lo is None


def test_runs_must_be_the_same():
    with pytest.raises(ValueError, match="same runs"):
        at_equal_load(Confusion(neg_pass=3), GATE_CELLS)


def test_joint_cells_give_both_marginals_and_a_seeded_paired_interval():
    rows = ([(True, True, "flag")] * 2 + [(True, True, "pass")] + [(True, False, "pass")] * 2
            + [(False, False, "pass")] * 5)
    j = joint(rows)
    m, g = marginals(j)
    assert m == Confusion(neg_pass=7, pos_pass=1, pos_flag=2) and g == GATE_CELLS
    assert difference(j) == pytest.approx(2 / 3 - 0.4)
    spec = BootstrapSpec(resamples=300, seed=5)
    iv = difference_interval(j, spec)
    assert iv == difference_interval(j, spec)
    assert iv.lo <= difference(j) <= iv.hi and iv.undefined > 0   # some resamples have no positive
    # every run the method flags is a positive the gate also blocks: no resample puts it below the gate
    assert iv.lo == 0.0


RECORDS = [
    # positives: the auditor flags two, reviews one, passes one
    record("p1", disposition="flag", trace_state="not_completed", group="A"),
    record("p2", disposition="flag", trace_state="not_completed", group="A"),
    record("p3", disposition="review", trace_state="unknown", group="B"),
    record("p4", disposition="pass", group="B"),
    # negatives: three success claims (one flagged), two failures, one unclear (reviewed)
    record("n1", group="A"), record("n2", group="B"),
    record("n3", disposition="flag", trace_state="not_completed", group="A"),
    record("n4", claim="failure_or_incomplete", group="A"), record("n5", claim="failure_or_incomplete", group="B"),
    record("n6", claim="unclear", disposition="review", trace_state="unknown", group="B"),
]
GOLD = "run_id,completed\n" + "".join(f"p{i},false\n" for i in range(1, 5)) + \
    "".join(f"n{i},true\n" for i in range(1, 7))


@pytest.fixture
def files(tmp_path):
    return audit_and_gold(tmp_path, RECORDS, GOLD)


def test_report_rows_match_the_overall_scores(files):
    audit, gold = files
    ms = [auditor_method()] + [baselines.get(n)() for n in ("trust-claim", "flag-all", GATE)]
    t = tally(audit, load_gold(gold), ms)
    for name, cells in t.joint.items():
        assert marginals(cells)[0] == t.confusion(name)
    rep = evaluate(t, BootstrapSpec(resamples=200, seed=0))
    assert [e.method for e in rep.equal_load] == ["auditor", "trust-claim", "flag-all"]
    a = rep.equal_load[0]
    # auditor: 3 flags + 2 reviews of 10, 3 of 4 positives; gate: 7 success claims, all 4 positives
    assert a.load == 0.5 and a.blocked_recall == 0.75
    assert a.gate_blocked_recall_at_load == pytest.approx(5 / 7) and a.difference == pytest.approx(0.75 - 5 / 7)
    assert a.yield_ == pytest.approx(0.6) and a.gate_yield == pytest.approx(4 / 7)
    assert a.difference_lo < a.difference < a.difference_hi
    assert rep.overall_of("auditor").metrics["blocked_recall"].value == a.blocked_recall
    table = equal_load_table(rep)
    assert table.title == "At equal load with claim-gate-only"
    assert table.rows[1] == ("trust-claim", "baseline", "0.00", "0.00", "0.00", "0.00 [0.00, 0.00]", "n/a", "n/a")
    assert "min(1, L x 10 / 7) x 1.00" in table.caption


def test_no_positives_print_na(tmp_path):
    audit = write_jsonl(tmp_path / "a.jsonl", [record("a"), record("b", disposition="flag")])
    gold = tmp_path / "g.csv"
    gold.write_text("run_id,completed\na,true\nb,true\n")
    ms = [auditor_method(), baselines.get(GATE)()]
    rep = evaluate(tally(audit, load_gold(gold), ms), BootstrapSpec(resamples=50))
    (e,) = rep.equal_load
    assert (e.load, e.blocked_recall, e.gate_blocked_recall_at_load, e.difference) == (0.5, None, None, None)
    assert e.difference_lo is None and e.gate_yield is None
    assert "| auditor | auditor | 0.50 | n/a | n/a | n/a | 0.00 | n/a |" in render(rep, "markdown")


def test_cli_json_key_markdown_table_and_missing_gate(cli, files):
    audit, gold = files
    code, out, err = cli("eval", audit, "--gold", gold, "--json", "--no-plot", "--resamples", "100")
    assert code == 0, err
    rep = json.loads(out)
    rows = {e["method"]: e for e in rep["equal_load"]}
    names = [m["name"] for m in rep["methods"]]
    assert set(rows) == set(names) - {GATE} and {"auditor", "flag-all", "policy:causal"} <= set(rows)
    a = rows["auditor"]
    assert {"method", "load", "blocked_recall", "gate_blocked_recall_at_load", "difference", "yield",
            "gate_yield"} <= set(a)
    assert a["difference"] == pytest.approx(0.75 - 5 / 7) and a["yield"] == pytest.approx(0.6)
    assert a["difference_lo"] is not None

    code, md, err = cli("eval", audit, "--gold", gold, "--markdown", "--no-plot", "--resamples", "0")
    assert code == 0, err
    assert "### At equal load with claim-gate-only" in md
    assert "| auditor | auditor | 0.50 | 0.75 | 0.71 | 0.04 | 0.60 | 0.57 |" in md   # no interval asked for

    code, out, err = cli("eval", audit, "--gold", gold, "--json", "--no-plot", "--no-policies",
                         "--baseline", "flag-all")
    assert code == 0, err
    rep = json.loads(out)
    assert rep["equal_load"] == [] and any("no equal-load comparison" in n for n in rep["notes"])
