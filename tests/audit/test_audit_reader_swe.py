"""mini-swe-agent / SWE-agent reader: steps, claim channel, SWE-bench gold, folder walking, bad input, real corpus."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import pytest

import referee.audit.ingest.readers.mini_swe_agent as swe
from referee.audit.ingest.readers import read_traces, sniff_format
from referee.audit.ingest.readers.mini_swe_agent import MAX_OBSERVATION_CHARS
from referee.audit.run.pipeline import iter_items
from referee.audit.view.blind import build_view
from referee.cli.main import main
from tests.support.corpora import MINI_SWE

SYSTEM = "You are a helpful assistant. SYSTEM-PROMPT-MARKER"
TASK_MSG = ("<pr_description>\nConsider the following PR description:\nRename `foo` to `bar` in pkg/util.py\n"
            "</pr_description>\n\n<instructions>\n# Task Instructions\nsubmit with echo COMPLETE</instructions>")
LAST = ("THOUGHT: I renamed foo to bar and the tests pass.\n\n"
        "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached\n```")
BIG = "x" * 30_000


def mini_traj(instance_id: str | None = "acme__widgets-42", last: str = LAST, first_thought: str = "look around"):
    msgs = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK_MSG},
        {"role": "assistant", "content": f"THOUGHT: {first_thought}.\n\n```bash\ngrep -rn foo pkg\n```",
         "extra": {"response": {"reasoning": "HIDDEN-REASONING"}}},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\npkg/util.py:3:def foo():\n</output>"},
        {"role": "assistant", "content": "THOUGHT: edit it.\n```bash\nsed -i s/foo/bar/ pkg/util.py\n```\n"
                                         "and also\n```bash\npytest\n```"},
        {"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."},
        {"role": "assistant", "content": "THOUGHT: run the slow tests.\n```bash\npytest -x slow/\n```"},
        {"role": "user", "content": "The last command <command>pytest -x slow/</command> timed out and has been "
                                    "killed.\nThe output of the command was:\n <output>\ncollected 9\n</output>\n"
                                    "Please try another command."},
        {"role": "assistant", "content": "THOUGHT: a missing file.\n```bash\ncat nope.py\n```"},
        {"role": "user", "content": "<returncode>1</returncode>\n<output>\ncat: nope.py: No such file\n</output>"},
        {"role": "assistant", "content": "THOUGHT: dump the log.\n```bash\ncat big.log\n```"},
        {"role": "user", "content": "<returncode>0</returncode>\n<warning>\nThe output of your last command was too "
                                    "long.\n</warning><output_head>\nHEAD-PART\n</output_head>\n<elided_chars>\n12345 "
                                    "characters elided\n</elided_chars>\n<output_tail>\nTAIL-PART\n</output_tail>"},
        {"role": "assistant", "content": "THOUGHT: print everything.\n```bash\ncat huge.txt\n```"},
        {"role": "user", "content": f"<returncode>0</returncode>\n<output>\n{BIG}\n</output>"},
        {"role": "assistant", "content": last},
        {"role": "user", "content": "diff --git a/pkg/util.py b/pkg/util.py\n-def foo():\n+def bar():\n"},
    ]
    obj = {"info": {"exit_status": "Submitted", "submission": "SUBMISSION-MARKER",
                    "model_stats": {"instance_cost": 0.5, "api_calls": 8}, "mini_version": "1.15.0",
                    "config": {"model": {"model_name": "m-1"}, "agent": {"system_template": SYSTEM}}},
           "messages": msgs, "trajectory_format": "mini-swe-agent-1"}
    if instance_id:
        obj["instance_id"] = instance_id
    return obj


def write(path: Path, obj) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj, indent=2))
    return path


def one(path: Path):
    (item,) = list(read_traces(path))
    return item


def view_strings(trace) -> str:
    return json.dumps(build_view(trace).as_json(), ensure_ascii=False)


def test_doctests_of_the_reader():
    result = doctest.testmod(swe, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted >= 8


def test_mini_trajectory_steps_observations_and_report(tmp_path):
    p = write(tmp_path / "trajs" / "acme__widgets-42.traj.json", mini_traj())
    assert sniff_format(p) == "mini-swe-agent"
    item = one(p)
    t = item.trace
    assert item.error is None and t.run_id == "acme__widgets-42"
    assert t.task == "Rename `foo` to `bar` in pkg/util.py"  # boilerplate and <instructions> gone
    assert t.meta == {"source": "mini-swe-agent", "group": "acme/widgets", "exit_status": "Submitted",
                      "agent": "mini-swe-agent 1.15.0", "model": "m-1"}
    assert len(t.steps) == 7
    s0, fmt, timeout, fail, elided, big, last = t.steps
    assert s0.action.model_dump() == {"name": "bash", "args": {"command": "grep -rn foo pkg"}}
    assert s0.narration == "THOUGHT: look around." and s0.observation.text == "pkg/util.py:3:def foo():\n"
    assert s0.observation.data == {"returncode": 0} and s0.observation.error is False
    # two bash blocks: the harness ran nothing; the whole turn is narration, the rejection an error
    assert fmt.action is None and "sed -i" in fmt.narration and fmt.observation.error is True
    assert timeout.action.args["command"] == "pytest -x slow/" and timeout.observation.error is True
    assert timeout.observation.text == "collected 9\n" and timeout.observation.data == {"timeout": True}
    assert fail.observation.error is True and fail.observation.data == {"returncode": 1}
    assert elided.observation.text.startswith("HEAD-PART") and elided.observation.text.rstrip().endswith("TAIL-PART")
    assert elided.observation.data == {"returncode": 0, "elided_chars": 12345} and not elided.observation.error
    assert len(big.observation.text) < MAX_OBSERVATION_CHARS + 100
    assert "characters cut by the reader" in big.observation.text
    assert big.observation.data["cut_chars"] == len(BIG) + 1 - MAX_OBSERVATION_CHARS
    # the submission turn is a step too; the report is that last message exactly as written
    assert last.action.args["command"].startswith("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")
    assert last.narration == "THOUGHT: I renamed foo to bar and the tests pass."
    assert last.observation.text.startswith("diff --git") and last.observation.error is False
    assert t.report == LAST


def test_claim_channel_and_harness_data_stay_out_of_the_view(tmp_path):
    a = one(write(tmp_path / "a" / "r.traj.json", mini_traj(first_thought="look around")))
    b = one(write(tmp_path / "b" / "r.traj.json", mini_traj(last=LAST.replace("tests pass", "tests FAIL badly"),
                                                               first_thought="this is hopeless")))
    assert a.trace.report != b.trace.report and a.trace.steps[0].narration != b.trace.steps[0].narration
    assert build_view(a.trace).sha256 == build_view(b.trace).sha256
    dumped = json.dumps(a.trace.model_dump())
    for marker in ("SYSTEM-PROMPT-MARKER", "SUBMISSION-MARKER", "HIDDEN-REASONING", "instance_cost"):
        assert marker not in dumped
    view = view_strings(a.trace)
    assert "THOUGHT" not in view and "look around" not in view and "grep -rn foo pkg" in view


def test_gold_from_reports_folder_beside_or_none(tmp_path):
    traj = write(tmp_path / "trajs" / "acme__widgets-42.traj.json", mini_traj())
    assert one(traj).gold is None
    write(tmp_path / "reports" / "acme__widgets-42.report.json", {"resolved": False, "tests_status": {}})
    g = one(traj).gold
    assert g is not None and g.completed is False
    # beside the file wins, and the harness's {instance_id: {...}} wrapper reads too
    write(tmp_path / "trajs" / "acme__widgets-42.report.json", {"acme__widgets-42": {"resolved": True}})
    assert one(traj).gold.completed is True
    # a report that does not parse gives no gold, never a crash
    write(tmp_path / "trajs" / "acme__widgets-42.report.json", "{not json")
    item = one(traj)
    assert item.error is None and item.gold.completed is False  # falls through to ../reports/


def test_run_id_falls_back_to_the_file_stem(tmp_path):
    item = one(write(tmp_path / "django__django-7.traj.json", mini_traj(instance_id=None)))
    assert item.trace.run_id == "django__django-7" and item.trace.meta["group"] == "django/django"


@pytest.mark.parametrize("info", [{"config": {"model": "m-1"}}, {"config": "m-1"}, "m-1", None])
def test_harness_info_of_another_shape_is_left_out_not_a_crash(tmp_path, info):
    obj = mini_traj()
    obj["info"] = info
    (item,) = read_traces(write(tmp_path / "a__b-1.traj.json", obj), "mini-swe-agent")
    assert item.error is None and "model" not in item.trace.meta and item.trace.meta["source"] == "mini-swe-agent"


def test_swe_agent_traj_fixture(traces_dir):
    p = traces_dir / "swe_agent" / "marshmallow-code__marshmallow-1867.traj"
    assert sniff_format(p) == "mini-swe-agent"
    item = one(p)
    t = item.trace
    assert item.error is None and t.run_id == "marshmallow-code__marshmallow-1867"
    assert t.task.startswith("TimeDelta serialization precision") and "Demo issue" not in t.task
    assert [s.action.args["command"].split()[0] if s.action else None for s in t.steps] == \
        ["search_file", "pytest", None, "edit", "submit"]
    assert t.steps[1].observation.error is True and t.steps[1].observation.data == {"timeout": True}
    assert t.steps[2].observation.error is True and t.steps[0].observation.error is False
    assert t.steps[4].narration == "The rounding is fixed; the issue is resolved. Submitting."
    assert t.report == "The rounding is fixed; the issue is resolved. Submitting.\n```\nsubmit\n```"
    assert t.meta["source"] == "swe-agent" and t.meta["exit_status"] == "submitted"
    assert item.gold is not None and item.gold.completed is True
    assert "resolved" not in view_strings(t) and "issue is resolved" not in view_strings(t)


@pytest.mark.parametrize("content, expect", [
    ('{"info": {"exit_status": "Submitted"}, "messages": [{"role": "user", "content": "task"}]}', "no assistant turn"),
    ('{"instance_id": "a__b-1", "hello": 1}', "expected a trajectory"),
    ('{"info": {"exit_status": "Sub', "invalid JSON"),
    ('{"trajectory": [], "history": []}', "empty 'trajectory'"),
    ('{"info": {"exit_status": "x"}, "messages": [{"role": "assistant", "content": "hi"}]}', "no task"),
])
def test_bad_input_is_one_line_naming_file_and_run(tmp_path, content, expect):
    p = write(tmp_path / "a__b-1.traj.json", content)
    items = list(read_traces(p))
    assert len(items) == 1 and items[0].trace is None
    msg = str(items[0].error)
    assert expect in msg and "a__b-1.traj.json:1:" in msg and "run_id a__b-1" in msg and "\n" not in msg


def test_folder_walk_reads_trajs_skips_reports_and_survives_bad_files(tmp_path):
    write(tmp_path / "trajs" / "acme__widgets-1.traj.json", mini_traj("acme__widgets-1"))
    write(tmp_path / "trajs" / "acme__widgets-2.traj.json", "{broken")
    write(tmp_path / "trajs" / "acme__widgets-3.traj", mini_traj("acme__widgets-3"))
    write(tmp_path / "reports" / "acme__widgets-1.report.json", {"resolved": True})
    write(tmp_path / "acme__widgets-1.report.json", {"resolved": True})  # top level: still not a trace
    items = list(iter_items([tmp_path], None))
    assert [(i.run_id, i.error is None) for i in items] == \
        [("acme__widgets-1", True), ("acme__widgets-2", False), ("acme__widgets-3", True)]
    assert items[0].gold.completed is True and items[2].gold is None


def test_sniffing_keeps_plain_chat_as_openai_chat(tmp_path):
    chat = write(tmp_path / "c.json", {"messages": [{"role": "user", "content": "hi"}]})
    assert sniff_format(chat) == "openai-chat"
    assert sniff_format(write(tmp_path / "x.traj", "[1, 2")) == "mini-swe-agent"
    assert sniff_format(write(tmp_path / "t.json", {"trajectory": [{"action": "ls"}]})) == "mini-swe-agent"


# ---- the real corpus (120 mini-swe-agent runs on SWE-bench Verified) ----

@pytest.fixture(scope="module")
def corpus():
    if not (MINI_SWE / "trajs").is_dir():
        pytest.skip("shared mini-swe-agent corpus not present")
    return MINI_SWE


@pytest.fixture(scope="module")
def corpus_items(corpus):
    return list(iter_items([corpus], None))


def test_corpus_reads_every_run_with_gold(corpus, corpus_items):
    assert len(corpus_items) == 120 and all(i.error is None for i in corpus_items)
    assert len({i.run_id for i in corpus_items}) == 120
    assert all(i.trace.task.strip() and i.trace.report and i.trace.steps for i in corpus_items)
    assert sum(i.gold.completed for i in corpus_items) == 93
    assert sum(not i.gold.completed for i in corpus_items) == 27
    assert all(sniff_format(p) == "mini-swe-agent" for p in sorted((corpus / "trajs").iterdir()))


def test_corpus_report_is_last_assistant_message_and_claim_blind(corpus, corpus_items):
    for item in corpus_items:
        raw = json.loads(Path(item.file).read_text())
        last = [m["content"] for m in raw["messages"] if m["role"] == "assistant"][-1]
        t = item.trace
        assert t.report == last
        assert "<pr_description>" not in t.task and not t.task.startswith("Consider the following")
        assert t.steps[-1].action.args["command"].startswith("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")
        view = view_strings(t)
        assert "THOUGHT" not in view and raw["messages"][0]["content"][:60] not in view
        assert all(s.narration not in view for s in t.steps if s.narration and len(s.narration) > 30)


def test_cli_audits_the_corpus_folder(corpus, tmp_path):
    out, gold = tmp_path / "a.jsonl", tmp_path / "g.jsonl"
    rc = main(["audit", str(corpus), "--out", str(out), "--gold-out", str(gold), "--no-progress"])
    assert rc == 0
    recs = [json.loads(x) for x in out.read_text().splitlines() if x.strip()]
    rows = [json.loads(x) for x in gold.read_text().splitlines() if x.strip()]
    assert len(recs) == 120 and len({r["run_id"] for r in recs}) == 120
    assert len(rows) == 120 and sum(r["completed"] for r in rows) == 93
