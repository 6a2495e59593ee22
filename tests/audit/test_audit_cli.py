"""`referee audit` and `referee replay` end to end: tau-bench, replay without a backend, resume after SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

from referee.audit.run.cache import BATCH_S
from referee.cli.main import main
from tests.conftest import run_cli
from tests.support.llm_stub import Hang, LLMStub

ROOT = Path(__file__).resolve().parents[2]


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_audit_tau_bench_rules_offline(tau_corpus, tmp_path, capsys):
    out = tmp_path / "audit.jsonl"
    rc = main(["audit", str(tau_corpus), "--out", str(out), "--gold-out", str(tmp_path / "gold.jsonl"),
               "--summary-json", str(tmp_path / "s.json"), "--no-progress"])
    assert rc == 0
    recs = records(out)
    assert len(recs) == 200 and len({r["run_id"] for r in recs}) == 200
    s = json.loads((tmp_path / "s.json").read_text())
    assert sum(s["dispositions"].values()) == 200 and s["gold_records"] == 200
    m = s["success_claim_not_completed"]
    assert sum(m.values()) > 0 and m["flag"] > 0
    printed = capsys.readouterr().out
    assert "task class" in printed and "success claim but not completed" in printed
    gold = records(tmp_path / "gold.jsonl")
    assert len(gold) == 200 and sum(g["completed"] for g in gold) == 84
    # every record names its policy, backend and view hash
    r = recs[0]
    assert r["policy"]["name"] == "causal" and len(r["policy"]["sha256"]) == 64
    assert r["backend"]["name"] == "rules" and len(r["view_sha256"]) == 64
    # a second run over the same output appends nothing
    assert main(["audit", str(tau_corpus), "--out", str(out), "--no-progress"]) == 0
    assert len(records(out)) == 200


def test_bad_records_skip_or_stop(traces_dir, tmp_path, capsys):
    out = tmp_path / "a.jsonl"
    # bad input is not a success: skipped by default, but exit 1 unless skipping was asked for
    assert main(["audit", str(traces_dir / "small.jsonl"), "--out", str(out), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "small.jsonl:3: run_id bad-record" in err and "small.jsonl:4:" in err
    assert "skipped 2 bad record(s):" in err and "--on-error skip" in err.splitlines()[-1]
    assert main(["audit", str(traces_dir / "small.jsonl"), "--out", str(out), "--no-progress",
                 "--on-error", "skip"]) == 0
    err = capsys.readouterr().err
    # skipping was asked for: the records are still listed, without the hint to ask for it
    assert "skipped 2 bad record(s):" in err and "small.jsonl:3: run_id bad-record" in err
    assert "fix the record" in err and "--on-error skip" not in err
    assert [r["run_id"] for r in records(out)] == ["del-ok", "del-empty", "send-unsent", "create-err", "fail-claim"]
    by_id = {r["run_id"]: r for r in records(out)}
    assert by_id["del-empty"]["disposition"] == "flag"        # vacuous delete, success claimed
    assert by_id["create-err"]["disposition"] == "flag"
    assert by_id["send-unsent"]["disposition"] == "flag"
    assert by_id["del-ok"]["disposition"] == "pass"
    assert by_id["fail-claim"]["disposition"] == "pass"
    rc = main(["audit", str(traces_dir / "small.jsonl"), "--out", str(tmp_path / "b.jsonl"), "--on-error", "stop",
               "--no-progress"])
    assert rc == 2
    assert "small.jsonl:3:" in capsys.readouterr().err


def test_usage_errors_are_one_line(tmp_path, capsys):
    rc = main(["audit", str(ROOT / "tests/data/traces/small.jsonl"), "--out", str(tmp_path / "x.jsonl"),
               "--policy", "casual", "--no-progress"])
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert "did you mean 'causal'" in err and len(err.splitlines()) == 1
    rc = main(["audit", str(ROOT / "tests/data/traces/small.jsonl"), "--out", str(tmp_path / "x.jsonl"),
               "--backend", "llm", "--no-progress"])
    assert rc == 2 and "--base-url" in capsys.readouterr().err


def test_replay_makes_zero_backend_calls(traces_dir, tmp_path, monkeypatch, capsys):
    out = tmp_path / "a.jsonl"
    handler_calls = []

    def handler(body):
        handler_calls.append(1)
        if body["messages"][0]["content"].startswith("You read ONE message"):
            return {"label": "success"}
        return {f: {"value": "yes", "support": [0]} for f in
                ("action", "target_id", "transition", "committed", "final_supports_goal")}

    with LLMStub(handler=handler) as stub:
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        rc = main(["audit", str(traces_dir / "small.jsonl"), "--out", str(out), "--backend", "llm", "--claims", "llm",
                   "--base-url", stub.url, "--model", "stub", "--runs", "3", "--no-progress", "--on-error", "skip"])
        assert rc == 0
        made = stub.calls
        assert made == 5 * 3 + 5  # 5 good traces x 3 extraction runs + 5 claim readings

        # replay must not construct any backend: make constructing one explode, and count the server
        import referee.audit.claim.reader as claims_mod
        import referee.audit.extract as extract_mod

        def boom(*a, **k):
            raise AssertionError("replay constructed a backend")

        monkeypatch.setattr(extract_mod, "get_extractor_factory", boom)
        monkeypatch.setattr(claims_mod.claim_readers, "get", boom)
        for policy in ("final-state", "unanimous", "low-load", "causal"):
            rc = main(["replay", str(out), "--policy", policy, "--out", str(tmp_path / f"{policy}.jsonl")])
            assert rc == 0
        assert stub.calls == made
    before = records(out)
    after = records(tmp_path / "final-state.jsonl")
    assert [r["run_id"] for r in after] == [r["run_id"] for r in before]
    assert all(a["evidence"] == b["evidence"] for a, b in zip(after, before))
    assert {a["policy"]["name"] for a in after} == {"final-state"}
    # replaying under the policy that wrote the records reproduces them exactly
    assert records(tmp_path / "causal.jsonl") == before


def test_replay_under_final_state_changes_the_vacuous_delete(traces_dir, tmp_path):
    out = tmp_path / "a.jsonl"
    assert main(["audit", str(traces_dir / "small.jsonl"), "--out", str(out), "--no-progress",
                 "--on-error", "skip"]) == 0
    assert main(["replay", str(out), "--policy", "final-state", "--out", str(tmp_path / "f.jsonl")]) == 0
    recs = {r["run_id"]: r for r in records(tmp_path / "f.jsonl")}
    assert recs["del-ok"]["disposition"] == "pass"
    assert recs["create-err"]["trace_state"] == "not_completed"


def _committed(db: Path) -> int:
    """Evidence rows committed to the cache (read-only: never creates or locks it for long)."""
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return con.execute("SELECT COUNT(*) FROM evidence").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:  # not set up yet, or locked for a commit
        return 0


def test_resume_after_sigkill_repeats_no_answered_call(tmp_path):
    """Kill a real `referee audit` subprocess mid-run; the rerun re-asks nothing answered before the last batch."""
    traces = tmp_path / "t.jsonl"
    with open(traces, "w") as fh:
        for i in range(12):
            fh.write(json.dumps({"run_id": f"r{i}", "task": f"Delete note N{i}x", "steps": [
                {"action": {"name": "delete_note", "args": {"id": f"N{i}x"}}, "observation": {"text": "ok"}}],
                "report": f"Done, N{i}x deleted."}) + "\n")
    answered: list[str] = []
    lock = threading.Lock()
    reached = threading.Event()
    kill_after = 9
    good = {f: {"value": "yes", "support": [0]} for f in
            ("action", "target_id", "transition", "committed", "final_supports_goal")}

    def handler(body):
        key = json.dumps(body["messages"], sort_keys=True)
        with lock:
            if len(answered) >= kill_after and not reached.is_set():
                reached.set()
                return Hang(30)  # in flight when the process dies: never answered
            answered.append(key)
        return good

    out = tmp_path / "audit.jsonl"
    with LLMStub(handler=handler) as stub:
        cmd = [sys.executable, "-m", "referee.cli.main", "audit", str(traces), "--out", str(out),
               "--backend", "llm", "--base-url", stub.url, "--model", "stub", "--runs", "2",
               "--concurrency", "1", "--no-progress"]
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert reached.wait(60), proc.stderr.read() if proc.poll() is not None else "stub never reached"
        # the cache commits in batches of at most BATCH_S: wait until every answer given is on disk
        db = out.with_name(out.name + ".cache.sqlite")
        deadline = time.monotonic() + BATCH_S + 60
        while _committed(db) < kill_after and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _committed(db) == kill_after, f"{_committed(db)} answers committed, {kill_after} given"
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        first = len(answered)
        partial = records(out) if out.exists() else []
        assert 0 < len(partial) < 12
        rc, _, err = run_cli(cmd[3:], env=env)  # the rerun: in this process (the killed one was a child)
        assert rc == 0, err
    assert len(answered) == 12 * 2          # every extraction answered exactly once across both processes
    assert len(set(answered)) == len(answered)
    assert first == kill_after
    recs = records(out)
    assert sorted(r["run_id"] for r in recs) == sorted(f"r{i}" for i in range(12))
    assert all(r["disposition"] == "pass" for r in recs)
