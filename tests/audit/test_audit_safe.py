"""Audits are safe to run twice: one writer per --out, failures never cached, a total deadline per request,
resume keyed by content and by settings. Real `referee audit` processes, a real loopback model server, real files."""

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

import pytest

from referee.audit.extract.rules import RULES_VERSION
from referee.audit.run.auditfile import iter_records
from referee.core.llm import LLMClient, LLMConfig
from tests.conftest import base_cli_env, free_port, run_cli
from tests.support.llm_stub import Drop, LLMStub, Raw, Status, Trickle

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "traces"
GOOD = {f: {"value": "yes", "support": [1]} for f in
        ("action", "target_id", "transition", "committed", "final_supports_goal")}
CLAIM = {"label": "success", "family": "completion", "cue": "was deleted"}


def trace(i: int, *, obs: str = "deleted", report: str | None = None) -> dict:
    return {"run_id": f"r{i}", "task": f"Delete note N{i}x", "steps": [
        {"action": {"name": "list_notes", "args": {}}, "observation": {"text": f"N{i}x, N99"}},
        {"action": {"name": "delete_note", "args": {"id": f"N{i}x"}}, "observation": {"text": obs}}],
        "report": report or f"Done, N{i}x was deleted."}


def write_traces(path: Path, traces: list[dict]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in traces))
    return path


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def standing(path: Path) -> dict:
    return {rec.run_id: rec for _, rec in iter_records(path)}


def is_claim_call(body: dict) -> bool:
    return body["messages"][0]["content"].startswith("You read ONE message")


def llm_args(stub_url: str, *extra) -> list:
    return ["--backend", "llm", "--claims", "llm", "--base-url", stub_url, "--model", "stub", "--samples", "1",
            "--concurrency", "1", "--no-progress", *extra]


SKIP = ["--on-error", "skip"]  # small.jsonl holds two bad records, on purpose: skipping them is fine here


def one_line(err: str) -> str:
    got = [x for x in err.splitlines() if x.strip()]
    assert len(got) == 1, err
    return got[0]


# -- one writer per --out -------------------------------------------------------------------------


def test_a_second_audit_on_the_same_out_is_refused_and_the_lock_dies_with_its_holder(tmp_path):
    traces = write_traces(tmp_path / "t.jsonl", [trace(i) for i in range(3)])
    out = tmp_path / "audit.jsonl"
    entered, release = threading.Event(), threading.Event()

    def handler(body):
        if not release.is_set():
            entered.set()
            release.wait(60)  # the first audit sits in a model call, holding --out
        return CLAIM if is_claim_call(body) else GOOD

    env = base_cli_env()
    with LLMStub(handler=handler) as stub:
        cmd = [sys.executable, "-m", "referee.cli.main", "audit", str(traces), "--out", str(out),
               *llm_args(stub.url)]
        first = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert entered.wait(60), "the first audit never called the model"
            before = out.read_bytes() if out.exists() else b""
            # a second audit (any backend) on the same --out: one line naming the file and the holder, exit 2
            rc, _, err = run_cli(["audit", traces, "--out", out, "--no-progress"], env=env)
            line = one_line(err)
            assert rc == 2, err
            assert str(out) in line and "another process" in line and f"pid {first.pid}" in line, line
            assert "referee audit" in line and "another --out" in line
            # replay may not replace it under the writer either
            rc, _, err = run_cli(["replay", DATA / "small.jsonl", "--out", out], env=env)
            # (small.jsonl is no audit file, but the lock is checked before anything is read or written)
            assert rc == 2 and "another process" in one_line(err)
            assert (out.read_bytes() if out.exists() else b"") == before
        finally:
            release.set()
            stdout, stderr = first.communicate(timeout=120)
        assert first.returncode == 0, stderr
        assert sorted(r["run_id"] for r in lines(out)) == ["r0", "r1", "r2"]

        # kill -9 the holder: the kernel drops its flock, the next audit takes --out and resumes
        out2 = tmp_path / "audit2.jsonl"
        entered.clear()
        release.clear()
        cmd2 = [*cmd[:cmd.index("--out") + 1], str(out2), *cmd[cmd.index("--out") + 2:]]
        killed = subprocess.Popen(cmd2, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert entered.wait(60)
        killed.send_signal(signal.SIGKILL)
        killed.wait(10)
        release.set()
        done = subprocess.run(cmd2, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert sorted(r["run_id"] for r in lines(out2)) == ["r0", "r1", "r2"]


# -- transport failures are never cached ----------------------------------------------------------


FAILURES = {
    "503 after retries": lambda body: Status(503),
    "connection reset": lambda body: Drop(),
    "malformed envelope": lambda body: Raw(b"<html>bad gateway</html>"),
    "answer without JSON": lambda body: "sure! here it is: {action: yes",
    "trickle past the deadline": lambda body: Trickle(CLAIM if is_claim_call(body) else GOOD, interval=0.05),
}


@pytest.mark.parametrize("kind", list(FAILURES))
def test_a_failed_model_call_is_not_cached_and_the_rerun_asks_again(kind, tmp_path):
    traces = write_traces(tmp_path / "t.jsonl", [trace(i) for i in range(2)])
    out = tmp_path / "audit.jsonl"
    mode = {"fail": True}

    def handler(body):
        if mode["fail"]:
            return FAILURES[kind](body)
        return CLAIM if is_claim_call(body) else GOOD

    env = base_cli_env()
    with LLMStub(handler=handler) as stub:
        retries = "1" if kind.startswith("503") else "0"  # the others are the same failure whatever the retries
        base = ["audit", traces, "--out", out, *llm_args(stub.url, "--max-retries", retries)]
        # failing, the deadline is one to see expire (a trickle never ends); answering, one a real answer beats
        args = [*base, "--timeout", "0.5"]
        t0 = time.monotonic()
        rc, stdout, err = run_cli(args, env=env)
        assert rc == 0, err
        assert time.monotonic() - t0 < 60
        recs = lines(out)
        assert [r["run_id"] for r in recs] == ["r0", "r1"]
        for r in recs:  # the record says what failed, reads unknown, and asks a human
            assert r["errors"] and any(e.startswith("extraction sample 0") for e in r["errors"])
            assert any(e.startswith("claim reader") for e in r["errors"])
            assert r["claim"]["label"] == "unclear" and r["disposition"] == "review"
            assert all(f["value"] == "unknown" for f in r["evidence"][0].values())
        assert "records with backend calls that got no answer: 2" in stdout
        db = sqlite3.connect(out.with_name(out.name + ".cache.sqlite"))
        assert db.execute("SELECT COUNT(*) FROM evidence").fetchone()[0] == 0   # nothing cached
        assert db.execute("SELECT COUNT(*) FROM claims").fetchone()[0] == 0
        db.close()

        # the server recovers: the same audit asks again, and the new records stand
        mode["fail"] = False
        args = [*base, "--timeout", "30"]
        stub.reset_counts()
        rc, stdout, err = run_cli(args, env=env)
        assert rc == 0, err
        assert stub.calls == 4   # 2 runs x (1 claim reading + 1 extraction sample)
        assert "retried: 2" in stdout
        now = standing(out)
        assert sorted(now) == ["r0", "r1"] and len(lines(out)) == 4
        assert all(not r.errors and r.disposition == "pass" for r in now.values())

        # and once answered, nothing is asked a third time
        stub.reset_counts()
        rc, stdout, err = run_cli(args, env=env)
        assert rc == 0 and stub.calls == 0 and "2 already there" in stdout and len(lines(out)) == 4


def test_a_connection_refused_is_not_cached_either(tmp_path):
    """The endpoint is down for the first run (nothing listens) and up for the second."""
    traces = write_traces(tmp_path / "t.jsonl", [trace(0)])
    out = tmp_path / "audit.jsonl"
    env = base_cli_env()
    down = f"http://127.0.0.1:{free_port()}/v1"
    rc, stdout, err = run_cli(["audit", traces, "--out", out, *llm_args(down, "--max-retries", "0")], env=env)
    assert rc == 0, err
    (rec,) = lines(out)
    assert "transport error" in " ".join(rec["errors"]) and rec["disposition"] == "review"
    with LLMStub(handler=lambda body: CLAIM if is_claim_call(body) else GOOD) as stub:
        rc, stdout, err = run_cli(["audit", traces, "--out", out, *llm_args(stub.url)], env=env)
        assert rc == 0, err
        assert stub.calls == 2 and standing(out)["r0"].disposition == "pass"


# -- one request has an overall deadline ----------------------------------------------------------


@pytest.mark.parametrize("headers", [False, True], ids=["body trickled", "headers trickled"])
def test_a_server_that_trickles_bytes_still_times_out_at_the_timeout(headers):
    # a byte every 0.1 s: each read is quick, so only a deadline over the whole request can end it (~40 s)
    with LLMStub(handler=lambda body: Trickle(GOOD, interval=0.1, headers=headers)) as stub:
        with LLMClient(LLMConfig(base_url=stub.url, model="m", timeout_s=1.0, max_retries=0)) as client:
            t0 = time.monotonic()
            res = client.chat([{"role": "user", "content": "x"}], json_schema={"type": "object"})
            took = time.monotonic() - t0
        assert not res.ok and "timeout after 1.0s" in res.error
        assert 0.9 < took < 15, took  # the whole answer trickled takes ~40 s: it was cut at the deadline
        deadline = time.monotonic() + 10  # the abandoned request is really cut: the server sees the client go
        while stub.trickles_cut < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert stub.trickles_cut == 1


def test_a_quick_answer_is_not_slowed_by_the_deadline(llm_stub):
    llm_stub.handler = lambda body: GOOD
    with LLMClient(LLMConfig(base_url=llm_stub.url, model="m", timeout_s=5.0)) as client:
        got, took = [], []
        for i in range(20):
            t0 = time.monotonic()
            got.append(client.chat([{"role": "user", "content": str(i)}], json_schema={}))
            took.append(time.monotonic() - t0)
    # a deadline that slowed answers would slow each one; a busy machine slows a few: the median call is quick
    assert all(r.data == GOOD for r in got) and sorted(took)[10] < 0.25, took


# -- resume with other settings says so -----------------------------------------------------------


def test_a_resume_with_other_settings_stops_and_names_the_difference(tmp_path):
    traces = DATA / "small.jsonl"
    out = tmp_path / "audit.jsonl"
    env = base_cli_env()
    rc, _, err = run_cli(["audit", traces, "--out", out, "--no-progress", *SKIP], env=env)
    assert rc == 0, err
    first = out.read_bytes()
    rec = lines(out)[0]
    assert rec["record_version"] == 6 and rec["claim_reader"]["name"] == "rules" and rec["view_version"] == 2
    assert len(rec["claim_sha256"]) == 64

    causal = ROOT / "src" / "referee" / "audit" / "decide" / "policies" / "causal.yaml"
    edited = tmp_path / "causal.yaml"
    edited.write_text(causal.read_text() + "\n# tuned\n")  # the same name, other bytes
    tools = tmp_path / "tools.yaml"
    tools.write_text("tools_version: 1\ntools:\n  - name: delete_note\n    kind: delete\n")
    for extra, want in [(["--policy", "strict"], "policy causal -> strict"),
                        (["--samples", "2"], "samples 1 -> 2"),
                        (["--policy", str(edited)], "policy causal: file changed"),
                        (["--tools", str(tools)], f"prompt {RULES_VERSION} -> {RULES_VERSION}+tools:")]:
        rc, _, err = run_cli(["audit", traces, "--out", out, "--no-progress", *SKIP, *extra], env=env)
        line = one_line([x for x in err.splitlines() if "warning" not in x][-1])
        assert rc == 2, err
        assert line.startswith(f"referee: error: {out}:line 1: run_id del-ok was audited with other settings"), line
        assert want in line and "--reaudit-changed" in line and "new --out" in line, line
        assert out.read_bytes() == first  # nothing written, nothing lost

    rc, stdout, err = run_cli(["audit", traces, "--out", out, "--no-progress", *SKIP, "--policy", "strict",
                               "--reaudit-changed"], env=env)
    assert rc == 0, err
    assert "re-audited with other settings: 5" in stdout
    assert len(lines(out)) == 10 and out.read_bytes().startswith(first)  # appended; the old records are still there
    now = standing(out)
    assert len(now) == 5 and {r.policy.name for r in now.values()} == {"strict"}
    # the file now stands under strict: the same command resumes quietly
    rc, stdout, _ = run_cli(["audit", traces, "--out", out, "--no-progress", *SKIP, "--policy", "strict"], env=env)
    assert rc == 0 and "wrote 0 records" in stdout and "5 already there" in stdout


def test_records_written_before_version_3_resume_on_what_they_state(tmp_path):
    traces = DATA / "small.jsonl"
    out = tmp_path / "audit.jsonl"
    env = base_cli_env()
    assert run_cli(["audit", traces, "--out", out, "--no-progress", *SKIP], env=env)[0] == 0
    old = []
    for r in lines(out):  # as referee wrote them before: no claim reader ref, view version, claim hash
        for k in ("claim_reader", "view_version", "claim_sha256"):
            r.pop(k)
        old.append({**r, "record_version": 2})
    out.write_text("".join(json.dumps(r) + "\n" for r in old))
    rc, stdout, err = run_cli(["audit", traces, "--out", out, "--no-progress", *SKIP], env=env)
    assert rc == 0 and "wrote 0 records" in stdout and "5 already there" in stdout, stdout + err
    rc, _, err = run_cli(["audit", traces, "--out", out, "--no-progress", *SKIP, "--policy", "low-load"], env=env)
    assert rc == 2 and "policy causal -> low-load" in err


# -- resume is keyed by content -------------------------------------------------------------------


def test_a_trace_edited_since_its_record_is_audited_again_and_every_reader_takes_the_new_record(tmp_path):
    traces = tmp_path / "t.jsonl"
    write_traces(traces, [trace(0), trace(1), trace(2)])
    out = tmp_path / "audit.jsonl"
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps({"run_id": f"r{i}", "completed": i != 1}) + "\n" for i in range(3)))
    env = base_cli_env()
    assert run_cli(["audit", traces, "--out", out, "--no-progress"], env=env)[0] == 0
    assert {r["run_id"]: r["disposition"] for r in lines(out)} == {"r0": "pass", "r1": "pass", "r2": "pass"}

    # r1's delete now fails (the view changes); r2's report now admits failure (the claim text changes)
    write_traces(traces, [trace(0), trace(1, obs="Error: note is locked"),
                          trace(2, report="I could not delete the note, it is locked.")])
    rc, stdout, err = run_cli(["audit", traces, "--out", out, "--no-progress"], env=env)
    assert rc == 0, err
    assert "stale records: 2" in stdout and "wrote 2 records" in stdout and "1 already there" in stdout
    assert [r["run_id"] for r in lines(out)] == ["r0", "r1", "r2", "r1", "r2"]  # appended, never edited
    now = standing(out)
    assert now["r1"].disposition == "flag" and now["r1"].trace_state == "not_completed"
    assert now["r2"].claim.label == "failure_or_incomplete"
    # the summary it printed counts 3 runs, not 5 records
    assert "all               2      1      0      3" in stdout

    # replay: one record per run, the new ones
    rc, _, err = run_cli(["replay", out, "--out", tmp_path / "re.jsonl"], env=env)
    assert rc == 0, err
    re = lines(tmp_path / "re.jsonl")
    assert [r["run_id"] for r in re] == ["r0", "r1", "r2"]
    assert {r["run_id"]: r["disposition"] for r in re} == {"r0": "pass", "r1": "flag", "r2": "pass"}

    # eval: scores the new records (r1, a success claim on a run that did not complete, is now caught)
    rc, stdout, err = run_cli(["eval", out, "--gold", gold, "--json", "--no-policies", "--resamples", "50"], env=env)
    assert rc == 0, err
    rep = json.loads(stdout)
    assert rep["coverage"]["evaluated"] == 3 and rep["coverage"]["duplicates"] == ["r1", "r2"]
    auditor = next(s for s in rep["overall"] if s["method"] == "auditor")
    assert auditor["counts"]["tp"] == 1 and auditor["counts"]["n"] == 3

    # and an unchanged input resumes with nothing to do
    rc, stdout, _ = run_cli(["audit", traces, "--out", out, "--no-progress"], env=env)
    assert rc == 0 and "wrote 0 records" in stdout and "3 already there" in stdout and "stale" in stdout
    assert len(lines(out)) == 5


def test_resume_compares_content_in_process(tmp_path):
    """The library entry (`audit_files`) does the same: counts stale runs and appends their new records."""
    from referee.audit.claim.reader import RulesClaimReader
    from referee.audit.decide.policyfile import load_policy
    from referee.audit.extract.rules import RulesExtractor
    from referee.audit.run.pipeline import Auditor, audit_files

    traces = write_traces(tmp_path / "t.jsonl", [trace(0), trace(1)])
    out = tmp_path / "audit.jsonl"
    a = Auditor(load_policy("causal"), RulesExtractor(), RulesClaimReader())
    assert audit_files([traces], a, out).written == 2
    write_traces(traces, [trace(0), trace(1, obs="Error: not found")])
    st = audit_files([traces], a, out)
    assert (st.written, st.stale, st.skipped_done) == (1, 1, 1)
    assert standing(out)["r1"].disposition == "flag"
    assert os.path.exists(str(out) + ".lock") and Path(str(out) + ".lock").read_bytes() == b""
