"""Policy comparison by replay: equal to the auditor's replay_record, zero model calls, and the tau-bench run."""

from __future__ import annotations

import json

from referee.audit.decide.policyfile import SHIPPED, load_policy
from referee.audit.present.replay import replay_record
from referee.evaluation.compare import _RecordMemo, policy_methods, replay_disposition
from referee.evaluation.dataset import iter_records
from referee.evaluation.synthetic import write_synthetic


def test_replay_matches_the_auditors_replay_record(tmp_path):
    audit, _ = write_synthetic(tmp_path, 300, seed=4, votes=5)
    loaded = [load_policy(n) for n in SHIPPED]
    memo = _RecordMemo()
    differs = 0
    for _, rec in iter_records(audit):
        for lp in loaded:
            assert replay_disposition(rec, lp, memo) == replay_record(rec, lp).disposition
        differs += len({replay_disposition(rec, lp, memo) for lp in loaded}) > 1
    assert differs > 30        # the policies really disagree on these records, so the check means something


def test_replaying_the_records_own_policy_reproduces_their_dispositions(tmp_path):
    audit, _ = write_synthetic(tmp_path, 200, seed=2, votes=3)
    causal = policy_methods(["causal"])[0]
    assert causal.name == "policy:causal"
    assert all(causal.decide(rec) == rec.disposition for _, rec in iter_records(audit))


def test_policy_from_a_yaml_file(tmp_path):
    src = load_policy("causal").path
    text = open(src).read().replace("name: causal", "name: strict-mine")
    p = tmp_path / "mine.yaml"
    p.write_text(text)
    (m,) = policy_methods([str(p)])
    assert m.name == "policy:strict-mine (mine.yaml)" and m.kind == "policy"


def test_tau_bench_end_to_end_rules_backend(cli, tau_corpus, tmp_path):
    audit, gold = tmp_path / "audit.jsonl", tmp_path / "gold.jsonl"
    code, _, err = cli("audit", tau_corpus, "--format", "tau-bench", "--out", audit, "--gold-out", gold,
                       "--no-progress")
    assert code == 0, err
    plot = tmp_path / "tau.png"
    code, out, err = cli("eval", audit, "--gold", gold, "--json", "--plot", plot)
    assert code == 0, err
    rep = json.loads(out)
    assert rep["coverage"]["evaluated"] == 200 and not rep["coverage"]["missing"]
    names = [s["method"] for s in rep["overall"]]
    assert names == ["auditor", "trust-claim", "flag-all", "claim-gate-only", "policy:causal",
                     "policy:final-state", "policy:low-load", "policy:unanimous", "policy:strict"]
    by = {s["method"]: s for s in rep["overall"]}
    assert by["auditor"]["counts"] == by["policy:causal"]["counts"]   # replay reproduces the audit
    for s in rep["overall"]:
        for m in s["metrics"].values():
            assert m["value"] is None or m["lo"] <= m["value"] <= m["hi"]
    assert by["trust-claim"]["metrics"]["silent_pass_rate"]["value"] == 1.0
    assert plot.stat().st_size > 10_000
    # the group is the tau-bench task: leave-one-task-out rows exist for the auditor
    assert sum(1 for b in rep["breakdowns"] if b["axis"] == "leave_out_group" and b["method"] == "auditor") == 50


def test_eval_gold_subcommand_from_tau_bench(cli, tau_corpus, tmp_path):
    out = tmp_path / "g.jsonl"
    code, _, err = cli("eval", "gold", tau_corpus, "--format", "tau-bench", "-o", out)
    assert code == 0, err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 200 and sum(r["completed"] for r in rows) == 84     # reward == 1.0 in 84 runs
    assert rows[0]["run_id"] == "task0-trial0" and rows[0]["group"] == "0" and rows[0]["task"]
    code, text, _ = cli("eval", "split", out, "--by-task")
    assert code == 0 and "(none): 200 runs" in text
    # --out, as `referee audit` and `run` spell it, is the same option as -o/--output
    again = tmp_path / "g2.jsonl"
    code, _, err = cli("eval", "gold", tau_corpus, "--format", "tau-bench", "--out", again)
    assert code == 0 and again.read_bytes() == out.read_bytes(), err
