"""`--backend rules+llm`: the model is asked once per record, only where the rules leave fields unknown."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from referee.audit.extract.combined import FROM_MODEL
from referee.cli.main import cli
from tests.support.llm_stub import LLMStub, stub_usage

# the rules settle it: one delete of the named note, observed to succeed
SETTLED = {"run_id": "settled", "task": "Delete note N42", "report": "Deleted N42.",
           "steps": [{"action": {"name": "delete_note", "args": {"id": "N42"}}, "observation": {"text": "deleted"}}]}
# the rules see an action and a final screen, but not what it targeted, changed or committed
OPEN = {"run_id": "open", "task": "Tidy up the workspace", "report": "Done, the workspace is tidy.",
        "steps": [{"action": {"name": "look", "args": {}}, "observation": {"text": "a desk"}},
                  {"action": {"name": "click", "args": {"x": 1}}, "observation": {"text": "ok"}}]}
ASKED = ["target_id", "transition", "committed"]  # what the rules leave unknown in OPEN


def _yes(*fields: str, support: list[int] | None = None) -> dict:
    return {f: {"value": "yes", "support": [1] if support is None else support} for f in fields}


def _audit(tmp_path: Path, stub: LLMStub, *runs: dict, out: str = "a.jsonl") -> tuple[list[dict], str]:
    traces = tmp_path / "t.jsonl"
    traces.write_text("".join(json.dumps(r) + "\n" for r in runs))
    got = CliRunner().invoke(cli, ["audit", str(traces), "--out", str(tmp_path / out), "--backend", "rules+llm",
                                   "--base-url", stub.url, "--model", "stub", "--cache", str(tmp_path / "c.sqlite"),
                                   "--no-progress"])
    assert got.exit_code == 0, got.output
    return [json.loads(x) for x in (tmp_path / out).read_text().splitlines()], got.output


def _fields(rec: dict) -> dict[str, tuple[str, str | None]]:
    return {f: (v["value"], v.get("note")) for f, v in rec["evidence"][0].items()}


def test_a_record_the_rules_settle_makes_no_model_call(tmp_path):
    with LLMStub(default=_yes(*ASKED)) as stub:
        (rec,), output = _audit(tmp_path, stub, SETTLED)
        assert stub.calls == 0
    assert rec["backend"]["name"] == "rules+llm" and rec["usage"] is None
    assert all(v["value"] == "yes" and v.get("note") != FROM_MODEL for v in rec["evidence"][0].values())
    assert "model calls" not in output


def test_a_record_with_unknown_fields_makes_one_call_about_those_fields_and_they_are_filled(tmp_path):
    with LLMStub(default=_yes(*ASKED)) as stub:
        recs, output = _audit(tmp_path, stub, OPEN, SETTLED)
        assert stub.calls == 1
        schema = stub.requests[0]["response_format"]["json_schema"]["schema"]
    assert sorted(schema["properties"]) == sorted(ASKED)
    got = _fields(recs[0])
    assert all(got[f] == ("yes", FROM_MODEL) for f in ASKED)
    assert got["action"][0] == "yes" and got["action"][1] != FROM_MODEL  # the rules' own
    assert "0.50 calls per record" in output


def test_a_model_answer_citing_a_step_that_does_not_exist_is_discarded(tmp_path):
    answer = {**_yes("transition", "committed"), **_yes("target_id", support=[7])}
    with LLMStub(default=answer) as stub:
        (rec,), _ = _audit(tmp_path, stub, OPEN)
    got = _fields(rec)
    assert got["target_id"] == ("unknown", "model answer discarded: invalid citation [7] (trace has 2 steps)")
    assert got["committed"] == ("yes", FROM_MODEL)


def test_a_model_no_never_overrides_a_rules_yes(tmp_path):
    answer = {**_yes(*ASKED), "action": {"value": "no", "support": [1]},
              "final_supports_goal": {"value": "no", "support": [1]}}
    with LLMStub(default=answer) as stub:
        (rec,), _ = _audit(tmp_path, stub, OPEN)
    got = _fields(rec)
    assert got["action"][0] == got["final_supports_goal"][0] == "yes"
    assert FROM_MODEL not in (got["action"][1], got["final_supports_goal"][1])


def test_garbage_from_the_model_leaves_the_fields_unknown_and_the_audit_goes_on_with_one_line(tmp_path):
    with LLMStub(default="sure, it looks done {") as stub:
        recs, output = _audit(tmp_path, stub, OPEN, SETTLED)
    got = _fields(recs[0])
    assert all(got[f][0] == "unknown" for f in ASKED) and got["action"][0] == "yes"  # the rules' findings kept
    assert len(recs[0]["errors"]) == 1 and "not a JSON object" in recs[0]["errors"][0]
    assert recs[1]["run_id"] == "settled" and not recs[1]["errors"]
    assert [line for line in output.splitlines() if "got no answer" in line] == [
        "records with backend calls that got no answer: 1 (read as unknown, not cached; run the same command again "
        "to ask again)"]


def test_the_record_usage_is_what_the_server_reported(tmp_path):
    answer = _yes(*ASKED)
    with LLMStub(default=answer) as stub:
        (rec,), _ = _audit(tmp_path, stub, OPEN)
        prompt, completion = stub_usage(stub.requests[0], json.dumps(answer))
    assert rec["usage"] == {"calls": 1, "prompt_tokens": prompt, "completion_tokens": completion}


def test_the_cache_serves_a_second_run_without_calls_and_is_not_the_rules_cache(tmp_path):
    (tmp_path / "t.jsonl").write_text(json.dumps(OPEN) + "\n")
    rules = CliRunner().invoke(cli, ["audit", str(tmp_path / "t.jsonl"), "--out", str(tmp_path / "r.jsonl"),
                                     "--cache", str(tmp_path / "c.sqlite"), "--no-progress"])
    assert rules.exit_code == 0, rules.output  # the rules' findings for OPEN are in the cache now
    with LLMStub(default=_yes(*ASKED)) as stub:
        first, _ = _audit(tmp_path, stub, OPEN, SETTLED)
        second, _ = _audit(tmp_path, stub, OPEN, SETTLED, out="b.jsonl")
        assert stub.calls == 1
    assert [r["evidence"] for r in second] == [r["evidence"] for r in first]
    assert second[0]["usage"] is None
    version = first[0]["backend"]["prompt_version"]
    assert version.startswith("1/rules:") and "/llm:" in version
