"""OpenHands sessions (`sessions/<id>/events/<n>.json`, written as OpenHands' event_to_dict writes them:
tests/support/openhands_events.py), a trajectory file and evaluation records; audited with no --format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.audit.ingest.readers import read_traces, sniff_dir, sniff_format
from referee.audit.view.blind import build_view, canonical_json
from referee.cli.main import main
from tests.support import openhands_events as oe


@pytest.fixture
def sessions(tmp_path) -> Path:
    for name in ("fixed", "overclaim", "asks_user"):
        getattr(oe, name)().write(tmp_path, f"conv-{name}")
    return tmp_path / "sessions"


def one(path: Path):
    items = list(read_traces(path))
    assert len(items) == 1 and items[0].error is None, items[0].error
    return items[0].trace


def test_session_is_sniffed_and_read_in_id_order(sessions):
    d = sessions / "conv-fixed"
    assert sniff_dir(d) == "openhands" and sniff_dir(d / "events") == "openhands" and sniff_dir(sessions) is None
    # ids above 9 sort as numbers, not as text
    assert sorted(int(p.stem) for p in (d / "events").iterdir())[-1] >= 10
    t = one(d)
    assert t.run_id == "conv-fixed" and t.task == oe.TASK
    assert [s.action.name for s in t.steps] == ["run", "read", "edit", "run", "finish"]
    assert t.steps[0].observation.error and "[Command finished with exit code 1]" in t.steps[0].observation.text
    assert t.steps[3].observation.error is False and "1 passed" in t.steps[3].observation.text
    assert t.steps[2].action.args["new_str"] == "return sum(items)" and "+    return sum(items)" in \
        t.steps[2].observation.text
    assert t.report == "I fixed total() in widgets/price.py; tests/test_price.py passes now."
    assert t.meta["model"] == "anthropic/claude-sonnet-4" and t.meta["source"] == "openhands"
    assert one(d / "events").steps == t.steps  # the events folder itself reads the same


def test_claim_channel_never_reaches_the_view(sessions):
    t = one(sessions / "conv-overclaim")
    view = canonical_json(build_view(t).as_json())
    # thoughts, the think action, the finish words, and the model's raw response (tool_call_metadata)
    for said in ("Fix the off-by-one.", "should pass", "all tests pass", "I am confident", "You are OpenHands"):
        assert said.lower() not in view.lower(), said
    assert "The fix looks right; the test should pass." in t.steps[2].narration
    assert "Added workspace context" not in view  # recall observations are dropped


def test_user_answers_are_observations_of_the_agent_question(sessions):
    t = one(sessions / "conv-asks_user")
    assert t.steps[0].action.name == "reply" and t.steps[0].narration == "Which branch should I deploy?"
    assert t.steps[0].observation.text == "user: The release branch."
    assert t.steps[1].observation.error and t.report.startswith("I could not deploy")
    assert t.steps[-2].observation.error  # the runtime's error observation, with no action of its own


def test_audit_sessions_with_no_format(sessions, tmp_path):
    out = tmp_path / "a.jsonl"
    assert main(["audit", str(sessions), "--out", str(out), "--no-progress"]) == 0
    recs = {json.loads(line)["run_id"]: json.loads(line) for line in out.read_text().splitlines()}
    assert set(recs) == {"conv-fixed", "conv-overclaim", "conv-asks_user"}
    assert recs["conv-fixed"]["disposition"] == "pass" and recs["conv-fixed"]["source"] == "openhands"
    # claims success, but the last test run after the last edit failed
    over = recs["conv-overclaim"]
    assert over["claim"]["label"] == "success" and over["disposition"] == "flag"
    assert over["evidence"][0]["final_supports_goal"]["value"] == "no"
    assert recs["conv-asks_user"]["claim"]["label"] == "failure_or_incomplete"


def test_trajectory_file_and_eval_records(tmp_path):
    events = oe.fixed().events
    traj = tmp_path / "traj.json"
    traj.write_text(json.dumps(events))
    assert sniff_format(traj) == "openhands"
    t = one(traj)
    assert t.run_id == "traj" and [s.action.name for s in t.steps] == ["run", "read", "edit", "run", "finish"]
    rec = {"instance_id": "acme__widgets-7", "instruction": oe.TASK, "history": events,
           "test_result": {"report": {"resolved": False}}}
    evalf = tmp_path / "output.jsonl"
    evalf.write_text(json.dumps(rec) + "\n" + json.dumps({**rec, "instance_id": "acme__widgets-8",
                                                          "test_result": {"resolved": True}}) + "\n")
    assert sniff_format(evalf) == "openhands"
    items = list(read_traces(evalf))
    assert [(i.run_id, i.gold.completed) for i in items] == [("acme__widgets-7", False), ("acme__widgets-8", True)]
    assert items[0].trace.meta["group"] == "acme"


def test_an_unreadable_event_fails_the_session_not_the_audit(sessions, tmp_path, capsys):
    (sessions / "conv-fixed" / "events" / "4.json").write_text("{not json")
    items = list(read_traces(sessions / "conv-fixed"))
    assert items[0].trace is None and "4.json" in str(items[0].error)
    out = tmp_path / "a.jsonl"
    assert main(["audit", str(sessions), "--out", str(out), "--no-progress"]) == 1  # listed, exit 1
    assert len(out.read_text().splitlines()) == 2
    captured = capsys.readouterr()
    assert "4.json" in captured.err and "1 bad records skipped" in captured.out
