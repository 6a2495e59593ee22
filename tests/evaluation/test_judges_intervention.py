"""LLM judges and the report-exposure intervention against a loopback stub that believes the report when shown."""

from __future__ import annotations

import json

import pytest

from referee.core.llm import LLMClient, LLMConfig
from referee.evaluation.bootstrap import BootstrapSpec
from referee.evaluation.intervention import run_intervention, summarize
from referee.evaluation.judges import JudgeCache, TraceJudge, judge_input, parse_state
from tests.evaluation.helpers import FAIL_MARK, biased_judge, record, write_jsonl

OK_OBS = "Saved. The list now shows the new item."


def trace(run_id: str, failed: bool, report: str) -> dict:
    return {"trace_version": 1, "run_id": run_id, "task": f"Create a note for {run_id}",
            "steps": [{"action": {"name": "type", "args": {"text": "hello"}}, "observation": {"text": "typed"},
                       "narration": "typing the note"},
                      {"action": {"name": "tap", "args": {"target": "save"}},
                       "observation": {"text": FAIL_MARK if failed else OK_OBS}, "narration": "saving"}],
            "report": report}


# (run_id, trace failed?, report, claim, gold completed)
RUNS = [(f"h{i}", True, "Done, the note is saved.", "success", False) for i in range(1, 7)]   # harmful flips
RUNS += [("both", True, "I tried to save it; it may have worked.", "success", False),          # both judges right
         ("miss", False, "Done.", "success", False),                                           # both judges wrong
         ("n1", False, "Done, saved.", "success", True),
         ("n2", True, "I could not save the note.", "failure_or_incomplete", False)]


@pytest.fixture
def corpus(tmp_path):
    traces = write_jsonl(tmp_path / "traces.jsonl", [trace(r, f, rep) for r, f, rep, _, _ in RUNS])
    gold_claims = tmp_path / "gold-claims.csv"
    gold_claims.write_text("run_id,completed,claim\n" + "".join(
        f"{r},{str(c).lower()},{cl}\n" for r, _, _, cl, c in RUNS))
    gold = tmp_path / "gold.csv"
    gold.write_text("run_id,completed\n" + "".join(f"{r},{str(c).lower()}\n" for r, _, _, _, c in RUNS))
    audit = write_jsonl(tmp_path / "audit.jsonl", [
        record(r, claim=cl, disposition="pass", task_class="create_edit") for r, _, _, cl, _ in RUNS])
    return {"traces": traces, "gold_claims": gold_claims, "gold": gold, "audit": audit, "dir": tmp_path}


def client_for(stub, concurrency=4):
    return LLMClient(LLMConfig(base_url=stub.url, model="stub-judge", concurrency=concurrency, max_retries=0))


def test_only_the_claim_aware_prompt_carries_the_report():
    from referee.audit.trace import Trace

    t = Trace.model_validate(trace("x", True, "Done, the note is saved."))
    aware, blind = judge_input(t, "claim-aware"), judge_input(t, "prompt-blind")
    assert "Done, the note is saved." in aware.messages[1]["content"]
    assert "typing the note" in aware.messages[1]["content"]          # per-step narration is claim channel too
    assert "Done, the note is saved." not in blind.messages[1]["content"]
    assert "typing the note" not in blind.messages[1]["content"]
    assert aware.messages[1]["content"].startswith(blind.messages[1]["content"])   # the only difference
    assert aware.sha256 != blind.sha256


def test_unparseable_answer_is_unknown_never_completed():
    assert parse_state({"trace_state": "Completed"}) == "completed"
    assert parse_state({"trace_state": "banana"}) == "unknown"
    assert parse_state({}) == "unknown" and parse_state(None) == "unknown"


def test_intervention_shift_flips_and_sign_test(judge_stub, corpus):
    from referee.evaluation.judges import iter_traces

    labels = {r: (cl, c) for r, _, _, cl, c in RUNS}
    with client_for(judge_stub) as client:
        t, calls = run_intervention(iter_traces(corpus["traces"], None), labels, client, votes=3, k=2)
    assert calls == len(RUNS) * 2 * 3 == judge_stub.calls
    r = summarize(t, BootstrapSpec(resamples=300, seed=0), votes=3, k=2)
    assert r.positives == 8
    assert r.trace_only_recall_aware.value == pytest.approx(1 / 8)     # only "both"
    assert r.trace_only_recall_blind.value == pytest.approx(7 / 8)     # h1..h6 and "both"
    assert r.recall_shift.value == pytest.approx(6 / 8)
    assert r.recall_shift.lo > 0                                       # the shift is visible
    assert (r.harmful_flips, r.recovery_flips) == (6, 0)
    assert sorted(r.harmful_ids) == [f"h{i}" for i in range(1, 7)]
    assert r.sign_test_p == pytest.approx(2 / 2 ** 6)
    aware, blind = r.gated
    assert (aware.counts["tp"], aware.counts["fp"], blind.counts["tp"], blind.counts["fp"]) == (1, 0, 7, 0)


def test_cache_replays_without_model_calls(judge_stub, corpus):
    from referee.audit.trace import Trace

    cache_path = corpus["dir"] / "cache" / "judges.jsonl"
    tr = Trace.model_validate(trace("h1", True, "Done, the note is saved."))
    with client_for(judge_stub) as client:
        first = TraceJudge(client, "claim-aware", votes=3, k=2, cache=JudgeCache(cache_path)).judge_trace(tr)
        assert first.model_calls == 3 and first.state == "completed"
        again = TraceJudge(client, "claim-aware", votes=3, k=2, cache=JudgeCache(cache_path)).judge_trace(tr)
    assert again.model_calls == 0 and again.votes == first.votes
    assert judge_stub.calls == 3


def test_cli_intervention_json_then_cached(cli, judge_stub, corpus):
    args = ["eval", "intervention", corpus["traces"], "--gold", corpus["gold_claims"], "--model", "stub-judge",
            "--base-url", judge_stub.url, "--votes", "3", "--cache-dir", corpus["dir"] / "c", "--resamples", "200",
            "--json"]
    code, out, err = cli(*args)
    assert code == 0, err
    r = json.loads(out)
    assert (r["harmful_flips"], r["recovery_flips"], r["positives"]) == (6, 0, 8)
    assert r["recall_shift"]["value"] == pytest.approx(0.75)
    assert r["sign_test_p"] == pytest.approx(0.03125)
    assert r["model_calls"] == 60
    code, out, err = cli(*args)
    assert code == 0 and json.loads(out)["model_calls"] == 0
    assert judge_stub.calls == 60


def test_cli_intervention_claims_from_audit_when_gold_has_none(cli, judge_stub, corpus):
    code, out, err = cli("eval", "intervention", corpus["traces"], "--gold", corpus["gold"], "--audit",
                         corpus["audit"], "--model", "m", "--base-url", judge_stub.url, "--votes", "1",
                         "--cache-dir", corpus["dir"] / "c2", "--markdown")
    assert code == 0, err
    assert "recall shift (blind - aware):                +75.0 pp" in out
    assert "harmful flips (blind right, aware wrong): 6; recovery flips: 0" in out
    assert "shared claim reading" in out


def test_cli_eval_with_both_judges_side_by_side(cli, judge_stub, corpus):
    code, out, err = cli("eval", corpus["audit"], "--gold", corpus["gold"], "--judge", "claim-aware",
                         "--judge", "prompt-blind", "--traces", corpus["traces"], "--model", "m",
                         "--base-url", judge_stub.url, "--votes", "3", "--cache-dir", corpus["dir"] / "c3",
                         "--json", "--no-plot", "--no-policies")
    assert code == 0, err
    rep = json.loads(out)
    by = {s["method"]: s for s in rep["overall"]}
    assert by["prompt-blind"]["counts"]["tp"] == 7 and by["claim-aware"]["counts"]["tp"] == 1
    assert by["prompt-blind"]["metrics"]["recall"]["value"] == pytest.approx(7 / 8)
    kinds = {m["name"]: m["kind"] for m in rep["methods"]}
    assert kinds["prompt-blind"] == kinds["claim-aware"] == "judge"
    paired = {p["other"]: p for p in rep["paired"]}
    assert paired["prompt-blind"]["positives_other_only"] == 7   # the auditor records here pass everything


def test_judge_without_traces_is_a_usage_error(cli, corpus):
    code, _, err = cli("eval", corpus["audit"], "--gold", corpus["gold"], "--judge", "prompt-blind", "--no-plot")
    assert code == 2 and "--traces" in err


def test_failed_judge_calls_are_counted_in_text_and_markdown_reports(cli, corpus):
    # evaluation.md: a judge call that fails after its retries counts as failed "and the report says how many
    # failed": every report, not only the JSON's method description
    from tests.support.llm_stub import LLMStub, Status

    def h1_fails(body: dict):
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return Status(500) if "Create a note for h1\n" in user else biased_judge(body)

    with LLMStub(handler=h1_fails) as stub:
        for i, fmt in enumerate(([], ["--markdown"], ["--json"])):
            code, out, err = cli("eval", corpus["audit"], "--gold", corpus["gold"], "--judge", "claim-aware",
                                 "--traces", corpus["traces"], "--model", "m", "--base-url", stub.url,
                                 "--votes", "3", "--max-retries", "0", "--cache-dir", corpus["dir"] / f"f{i}",
                                 "--no-plot", "--no-policies", "--resamples", "0", *fmt)
            assert code == 0, err
            said = "--judge claim-aware: 3 of 30 judge calls got no usable answer: read as unknown votes"
            if fmt == ["--json"]:
                assert any(said in n for n in json.loads(out)["notes"])
            else:
                assert said in " ".join(out.split()), out
