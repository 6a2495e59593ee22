"""End to end on hand-built records: every method's counts and rates, mismatches reported, breakdowns, LOGO."""

from __future__ import annotations

import json

import pytest

from referee.evaluation.baselines import auditor_method, baselines
from referee.evaluation.bootstrap import BootstrapSpec
from referee.evaluation.dataset import AuditFileError, tally
from referee.evaluation.gold import load_gold
from referee.evaluation.results import evaluate
from tests.evaluation.helpers import audit_and_gold, record, write_jsonl

RECORDS = [
    # r1 twice: a resume appended a new record for it, which supersedes this one; the last is scored
    record("r1", claim="success", disposition="pass", group="A", split="dev"),
    record("r2", claim="success", disposition="review", group="A", split="dev", task_class="create_edit",
           trace_state="unknown"),
    record("r3", claim="success", disposition="pass", group="B", split="test", task_class="delete"),
    record("r4", claim="success", disposition="pass", group="B", split="test", task_class="delete"),
    record("r5", claim="failure_or_incomplete", disposition="pass", group="A", split="dev", task_class="query"),
    record("r6", claim="success", disposition="flag", group="B", split="test", task_class="query"),
    record("r7", claim="unclear", disposition="review", group="A", split="test", task_class="other"),
    record("r8", claim="success", disposition="flag", group="A", split="dev"),   # no gold label
    record("r1", claim="success", disposition="flag", group="A", split="dev", task_class="create_edit"),  # stands
]
GOLD = "run_id,completed\nr1,false\nr2,false\nr3,false\nr4,true\nr5,false\nr6,true\nr7,false\nr9,true\n"


@pytest.fixture
def files(tmp_path):
    return audit_and_gold(tmp_path, RECORDS, GOLD)


def methods():
    return [auditor_method()] + [baselines.get(n)() for n in ("trust-claim", "flag-all", "claim-gate-only")]


def test_counts_and_rates_of_every_method(files):
    audit, gold = files
    t = tally(audit, load_gold(gold), methods())
    rep = evaluate(t, BootstrapSpec(resamples=200, seed=0))
    a = rep.overall_of("auditor")
    assert {k: a.counts[k] for k in ("n", "positives", "tp", "fp", "fn", "flag", "review")} == \
        {"n": 7, "positives": 3, "tp": 1, "fp": 1, "fn": 2, "flag": 2, "review": 2}
    m = {k: v.value for k, v in a.metrics.items()}
    assert m["precision"] == pytest.approx(1 / 2) and m["recall"] == pytest.approx(1 / 3)
    assert m["f1"] == pytest.approx(0.4)
    assert m["blocked_recall"] == pytest.approx(2 / 3) and m["silent_pass_rate"] == pytest.approx(1 / 3)
    assert m["inspection_load"] == pytest.approx(4 / 7) and m["inspection_yield"] == pytest.approx(2 / 4)

    trust = {k: v.value for k, v in rep.overall_of("trust-claim").metrics.items()}
    assert trust["precision"] is None and trust["f1"] is None and trust["recall"] == 0.0
    assert trust["silent_pass_rate"] == 1.0 and trust["inspection_load"] == 0.0 and trust["inspection_yield"] is None

    fa = {k: v.value for k, v in rep.overall_of("flag-all").metrics.items()}
    assert fa["precision"] == pytest.approx(3 / 7) and fa["f1"] == pytest.approx(0.6) and fa["inspection_load"] == 1.0

    cg = rep.overall_of("claim-gate-only")
    assert (cg.counts["tp"], cg.counts["fp"]) == (3, 2)
    assert cg.metrics["f1"].value == pytest.approx(0.75)


def test_mismatches_are_reported_not_dropped(files):
    audit, gold = files
    t = tally(audit, load_gold(gold), methods())
    cov = t.coverage
    assert (cov.audit_records, cov.evaluated) == (9, 7)
    assert cov.unlabelled == ["r8"] and cov.missing == ["r9"] and cov.duplicates == ["r1"]
    notes = " ".join(cov.notes())
    assert "r8" in notes and "r9" in notes and "the last is scored" in notes
    assert "shared claim reading" in notes   # gold has no claim column


def test_gold_claim_overrides_positive_definition_and_report_says_so(tmp_path, files):
    audit, _ = files
    gold = tmp_path / "g.csv"
    # r5: the claim reader said failure, the annotators say success -> a positive the auditor passed
    gold.write_text("run_id,completed,claim\nr1,false,success\nr5,false,success\nr6,true,\n")
    t = tally(audit, load_gold(gold), methods())
    c = t.confusion("auditor")
    assert (c.n, c.positives, c.tp, c.fp, c.pos_pass) == (3, 2, 1, 1, 1)
    assert (t.coverage.claim_from_gold, t.coverage.claim_from_reader) == (2, 1)
    assert any("gold claim given for 2" in n for n in t.coverage.notes())


def test_breakdowns_and_leave_one_group_out(files):
    audit, gold = files
    rep = evaluate(tally(audit, load_gold(gold), methods()), BootstrapSpec(resamples=100),
                   breakdown_methods=["auditor"])
    got = {(s.axis, s.slice): s for s in rep.breakdowns}
    a = got[("group", "A")]
    assert (a.counts["n"], a.counts["tp"], a.counts["fn"], a.metrics["precision"].value,
            a.metrics["recall"].value) == (4, 1, 1, 1.0, 0.5)
    out_a = got[("leave_out_group", "A")]            # scored on group B only
    assert (out_a.counts["n"], out_a.metrics["precision"].value, out_a.metrics["recall"].value,
            out_a.metrics["f1"].value) == (3, 0.0, 0.0, 0.0)
    assert got[("split", "dev")].counts["n"] == 3 and got[("split", "test")].counts["n"] == 4
    other = got[("task_class", "other")]            # r7 only: no positives, no flags
    assert other.metrics["recall"].value is None and other.metrics["precision"].value is None
    assert other.metrics["recall"].lo is None
    assert other.metrics["inspection_load"].value == 1.0


def test_paired_contrast_and_sign_test(files):
    audit, gold = files
    rep = evaluate(tally(audit, load_gold(gold), methods()), BootstrapSpec(resamples=50))
    p = next(p for p in rep.paired if p.other == "claim-gate-only")
    assert (p.positives_primary_only, p.positives_other_only, p.negatives_primary_only,
            p.negatives_other_only) == (0, 2, 0, 1)
    assert p.p_positives == pytest.approx(0.5)


def test_records_out_lists_every_method_per_run(tmp_path, files):
    audit, gold = files
    out = tmp_path / "per-record.jsonl"
    tally(audit, load_gold(gold), methods(), records_out=out)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    # file order of the records that stand: r1's is its second record, the last line
    assert [r["run_id"] for r in rows] == ["r2", "r3", "r4", "r5", "r6", "r7", "r1"]
    assert rows[-1]["dispositions"] == {"auditor": "flag", "trust-claim": "pass", "flag-all": "flag",
                                        "claim-gate-only": "flag"}
    assert rows[-1]["positive"] is True and rows[2]["positive"] is False


def test_bad_audit_line_names_file_line_and_run(tmp_path):
    audit = tmp_path / "audit.jsonl"
    bad = record("x1")
    bad["disposition"] = "maybe"
    write_jsonl(audit, [record("x0"), bad])
    with pytest.raises(AuditFileError) as e:
        tally(audit, {}, methods())
    assert "audit.jsonl:line 2 (run_id x1)" in str(e.value) and "disposition" in str(e.value)


def test_cli_report_json_markdown_and_plot(cli, files, tmp_path):
    audit, gold = files
    plot = tmp_path / "tradeoff.png"
    code, out, err = cli("eval", audit, "--gold", gold, "--json", "--resamples", "100", "--plot", plot)
    assert code == 0, err
    rep = json.loads(out)
    names = [m["name"] for m in rep["methods"]]
    assert names[:4] == ["auditor", "trust-claim", "flag-all", "claim-gate-only"]
    assert {"policy:causal", "policy:final-state", "policy:low-load", "policy:unanimous"} <= set(names)
    assert rep["coverage"]["unlabelled"] == ["r8"] and rep["coverage"]["missing"] == ["r9"]
    assert rep["bootstrap"] == {"resamples": 100, "seed": 0, "level": 0.95, "engine": "numpy",
                                "method": rep["bootstrap"]["method"]}
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    code, md, err = cli("eval", audit, "--gold", gold, "--markdown", "--resamples", "50", "--no-plot")
    assert code == 0, err
    assert "### Detection view" in md and "### Gating view" in md and "| trust-claim | baseline | 0 | 0 | 3 |" in md
    assert "| n/a |" in md
    assert "no gold label" in md


def test_cli_same_seed_same_output_other_seed_differs(cli, files):
    audit, gold = files
    runs = [cli("eval", audit, "--gold", gold, "--json", "--no-plot", "--seed", s)[1] for s in ("3", "3", "4")]
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


def test_cli_strict_and_no_match_errors(cli, files, tmp_path):
    audit, gold = files
    code, _, err = cli("eval", audit, "--gold", gold, "--strict", "--no-plot")
    assert code == 2 and "do not match one to one" in err
    other = tmp_path / "other.csv"
    other.write_text("run_id,completed\nzz,true\n")
    code, _, err = cli("eval", audit, "--gold", other, "--no-plot")
    assert code == 2 and "no audit record has a gold label" in err and err.count("\n") == 1


def test_cli_unknown_baseline_suggests_nearest(cli, files):
    audit, gold = files
    code, _, err = cli("eval", audit, "--gold", gold, "--baseline", "flag-al", "--no-plot")
    assert code == 2 and "did you mean 'flag-all'" in err


def test_cli_external_predictions_as_a_method(cli, files, tmp_path):
    audit, gold = files
    preds = write_jsonl(tmp_path / "p.jsonl", [{"run_id": "r3", "disposition": "flag"}])
    code, out, err = cli("eval", audit, "--gold", gold, "--json", "--no-plot", "--no-policies",
                         "--predictions", f"mine={preds}")
    assert code == 0, err
    mine = next(s for s in json.loads(out)["overall"] if s["method"] == "mine")
    # r3 flagged; every other run has no prediction -> review (a method that did not look never passes)
    assert (mine["counts"]["tp"], mine["counts"]["review"], mine["counts"]["pass"]) == (1, 6, 0)


def test_cli_predictions_that_match_no_scored_run_are_named_not_dropped(cli, files, tmp_path):
    """A prediction for a run with no audit record (r99) or no gold label (r8) is not scored: the report says
    so, and says how many scored runs had no prediction, instead of leaving the reader to count."""
    audit, gold = files
    preds = write_jsonl(tmp_path / "p.jsonl", [{"run_id": r, "disposition": "flag"} for r in ("r3", "r99", "r8")])
    code, out, err = cli("eval", audit, "--gold", gold, "--json", "--no-plot", "--no-policies",
                         "--predictions", f"mine={preds}")
    assert code == 0, err
    notes = json.loads(out)["notes"]
    assert "--predictions mine: 2 run_id(s) match no scored audit record and are ignored: r8, r99" in notes
    assert ("--predictions mine: 6 scored run(s) have no prediction and count as review: r1, r2, r4, r5, r6, r7"
            in notes)
    _, md, _ = cli("eval", audit, "--gold", gold, "--markdown", "--no-plot", "--no-policies",
                   "--predictions", f"mine={preds}")
    assert "match no scored audit record" in md


def test_misses_are_split_by_side(files):
    audit, gold = files
    rep = evaluate(tally(audit, load_gold(gold), methods(), primary="auditor"), BootstrapSpec(resamples=20))
    assert rep.misses == {"trace-side": 1, "uncertain": 1}     # r3 passed on a completed state; r2 reviewed


def test_gold_claim_channel_re_disposes_with_the_gold_claim(cli, tmp_path):
    audit = write_jsonl(tmp_path / "a.jsonl", [
        record("a", claim="failure_or_incomplete", trace_state="not_completed", disposition="pass",
               evidence=[{"action": {"value": "no"}}]),
        record("b", claim="success", trace_state="completed", disposition="pass",
               evidence=[{"action": {"value": "yes", "support": [0]},
                          "final_supports_goal": {"value": "yes", "support": [0]}}])])
    gold = tmp_path / "g.csv"
    gold.write_text("run_id,completed,claim\na,false,success\nb,true,success\n")
    reader = json.loads(cli("eval", audit, "--gold", gold, "--json", "--no-plot", "--no-policies")[1])
    assert reader["overall"][0]["counts"]["tp"] == 0 and reader["misses"] == {"claim-side": 1}
    code, out, err = cli("eval", audit, "--gold", gold, "--json", "--no-plot", "--claim-channel", "gold")
    assert code == 0, err
    rep = json.loads(out)
    by = {s["method"]: s["counts"] for s in rep["overall"]}
    assert by["auditor"]["tp"] == 1 and by["policy:causal"]["tp"] == 1        # success over not_completed: flag
    assert (by["claim-gate-only"]["tp"], by["claim-gate-only"]["fp"]) == (1, 1)
    assert rep["misses"] == {} and any("claim channel: gold" in n for n in rep["notes"])


def test_resamples_where_a_metric_is_0_over_0_are_counted_in_json_and_text(cli, files):
    # evaluation.md: such resamples "are left out of its percentiles and counted": the count was kept by the
    # bootstrap and shown nowhere
    from referee.evaluation.bootstrap import bootstrap_rates

    audit, gold = files
    args = (audit, "--gold", gold, "--resamples", "200", "--no-plot", "--no-policies", "--by", "", "--no-logo")
    code, out, err = cli("eval", *args, "--json")
    assert code == 0, err
    auditor = json.loads(out)["overall"][0]
    conf = tally(audit, load_gold(gold), methods()).confusion("auditor")
    want = bootstrap_rates(conf, BootstrapSpec(resamples=200, seed=0))
    got = {name: m["undefined_resamples"] for name, m in auditor["metrics"].items()}
    assert got == {name: iv.undefined for name, iv in want.items()}
    k = got["precision"]
    assert k > 0 and got["inspection_load"] == 0   # it flags 2 of 7 runs: some resamples draw neither
    for fmt in (["--markdown"], []):
        code, out, err = cli("eval", *args, *fmt)
        assert code == 0, err
        assert f"({k} n/a)" in out, out
        assert "(k n/a): in k resamples the metric was 0/0; they are left out of its interval" in " ".join(out.split())
    code, out, err = cli("eval", *args, "--resamples", "0", "--json")
    assert json.loads(out)["overall"][0]["metrics"]["precision"]["undefined_resamples"] is None  # no bootstrap


def test_gate_recall_note_is_printed_exactly_when_it_is_1_by_construction(cli, files, tmp_path):
    # it was printed with no positive (recall n/a) and missing under --claim-channel gold, where the gold
    # claim both defines the positives and is what claim-gate-only reads
    audit, gold = files

    def gate_notes(gold_file, *more):
        code, out, err = cli("eval", audit, "--gold", gold_file, "--json", "--no-plot", "--no-policies",
                             "--resamples", "0", *more)
        assert code == 0, err
        rep = json.loads(out)
        recall = next(s for s in rep["overall"] if s["method"] == "claim-gate-only")["metrics"]["recall"]["value"]
        return [n for n in rep["notes"] if "by construction" in n], recall

    reader_notes, recall = gate_notes(gold)
    assert recall == 1.0 and len(reader_notes) == 1
    all_done = tmp_path / "done.csv"
    all_done.write_text("run_id,completed\n" + "".join(f"r{i},true\n" for i in range(1, 8)))
    assert gate_notes(all_done) == ([], None)                 # no positive: recall is n/a, not 1
    claims = tmp_path / "claims.csv"                # r5, r7: the reader says failure, unclear; gold says success
    claims.write_text("run_id,completed,claim\n" + "".join(f"r{i},false,success\n" for i in range(1, 8)))
    assert gate_notes(claims) == ([], 5 / 7)        # positives from gold, the gate reads the reader
    notes, recall = gate_notes(claims, "--claim-channel", "gold")
    assert recall == 1.0 and len(notes) == 1 and "on the 7 run(s) (7 positive(s))" in notes[0]
    assert "on the 7 run(s) (3 positive(s)) whose positives come from the same claim reading" in reader_notes[0]


def test_a_miss_over_a_not_completed_state_is_other_and_the_report_says_what_that_is(cli, tmp_path):
    # a custom policy may review a success claim over not_completed: neither claim-side, trace-side nor
    # uncertain, so the header's legend must say what `other` is (evaluation.md lists it too)
    audit, gold = audit_and_gold(tmp_path, [
        record("a", claim="success", trace_state="not_completed", disposition="review", policy="mine"),
        record("b", claim="success", trace_state="completed", disposition="pass", policy="mine")],
        "run_id,completed\na,false\nb,false\n")
    code, out, err = cli("eval", audit, "--gold", gold, "--markdown", "--no-plot", "--no-policies",
                         "--resamples", "0")
    assert code == 0, err
    line = next(ln for ln in out.splitlines() if "did not flag" in ln)
    assert "other 1, trace-side 1" in line and "other: state not_completed, yet the policy did not flag it" in line
