"""Folders and globs as input: one run per file or run folder, each with its own reader; --include and
--format narrow a walk; bad items are counted and listed; `referee readers`."""

from __future__ import annotations

import doctest
import importlib
import json
import shutil
from pathlib import Path

import pytest

from referee.audit.ingest.inputs import InputOptions, iter_inputs, walk
from referee.cli.main import main
from tests.support import openhands_events as oe


def chat(task: str, rid: str = "r") -> dict:
    return {"run_id": rid, "task": task, "messages": [{"role": "user", "content": task},
                                       {"role": "assistant", "content": "Done, the note is deleted."}]}


def tape_experiment(folder: Path, reward: float) -> Path:
    """A minimal AgentLab experiment folder read from its JSON tape (no pickle)."""
    folder.mkdir(parents=True)
    obs0 = {"goal_object": [{"type": "text", "text": "Delete note N7."}], "url": "http://127.0.0.1/notes",
            "axtree_txt": "[a3] button 'Delete N7'", "last_action_error": "", "chat_messages": []}
    obs1 = {**obs0, "axtree_txt": "RootWebArea 'Notes' (empty)"}
    steps = [{"kind": "dict_observation", "content": json.dumps(obs0), "metadata": {}},
             {"kind": "assistant", "content": "click('a3')", "metadata": {}},
             {"kind": "dict_observation", "content": json.dumps(obs1), "metadata": {}},
             {"kind": "assistant", "content": "send_msg_to_user('Deleted N7.')", "metadata": {}}]
    (folder / "tape.json").write_text(json.dumps({"metadata": {"reward": reward}, "steps": steps}))
    (folder / "summary_info.json").write_text(json.dumps({"n_steps": 2, "cum_reward": reward, "err_msg": None,
                                                          "terminated": True, "truncated": False}))
    return folder


@pytest.fixture
def tree(tmp_path) -> Path:
    root = tmp_path / "runs"
    (root / "chats").mkdir(parents=True)
    (root / "chats" / "a.json").write_text(json.dumps(chat("Delete note N1", "a1")))
    (root / "chats" / "b.jsonl").write_text(json.dumps(chat("Delete note N2", "b1")) + "\n")
    (root / "chats" / "broken.json").write_text("{oops")
    (root / "chats" / "notes.md").write_text("not a trace")
    (root / "chats" / "x.report.json").write_text('{"resolved": true}')
    tape_experiment(root / "study" / "2025-01-01_Agent_on_notes.delete_3", 1.0)
    oe.fixed().write(root / "oh", "conv-1")
    (root / ".cache").mkdir()
    (root / ".cache" / "c.json").write_text(json.dumps(chat("hidden")))
    return root


def run_ids(items) -> list:
    return [i.run_id for i in items]


def test_walk_takes_each_file_and_run_folder_with_its_own_reader(tree):
    items = list(iter_inputs([tree]))
    ok = [i for i in items if i.error is None]
    assert {i.trace.meta.get("source") or "openai-chat" for i in ok} == {"openai-chat", "browsergym", "openhands"}
    assert run_ids(ok) == ["a1", "b1", "conv-1", "2025-01-01_Agent_on_notes.delete_3"]
    bad = [i for i in items if i.error is not None]
    assert len(bad) == 1 and "broken.json" in str(bad[0].error)  # counted, never dropped silently
    # a run folder is one item: its own files (summary_info.json, tape.json, events) are not walked as traces
    paths = [str(x.path) for x in walk([tree]) if not hasattr(x, "error")]
    assert not any(p.endswith(("summary_info.json", "tape.json", "metadata.json")) for p in paths)
    assert not any(".cache" in p or p.endswith((".md", ".report.json")) for p in paths)


def test_include_narrows_a_walk(tree):
    items = list(iter_inputs([tree], options=InputOptions(include=("chats/a.json", "*notes.delete*"))))
    assert [(i.run_id, i.error is None) for i in items] == [("a1", True),
                                                            ("2025-01-01_Agent_on_notes.delete_3", True)]
    # an include glob may pick a file whatever its name ends with
    (tree / "chats" / "c.log").write_text(json.dumps(chat("Delete note N3", "c1")))
    assert run_ids(iter_inputs([tree], options=InputOptions(include=("*.log",)))) == ["c1"]


def test_format_reads_files_and_leaves_out_other_run_folders(tree, tmp_path, capsys):
    left: list = []
    items = list(iter_inputs([tree], "openhands", InputOptions(on_left_out=lambda p, k: left.append((p.name, k)))))
    assert left == [("2025-01-01_Agent_on_notes.delete_3", "browsergym")]
    assert "conv-1" in run_ids(i for i in items if i.error is None)
    out = tmp_path / "a.jsonl"
    rc = main(["audit", str(tree), "--format", "openhands", "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    # the chat files read as openhands are bad items (listed: exit 1); the browsergym folder is left out, named
    assert rc == 1 and "left out 1 run folder(s) of another format" in err and "delete_3 (browsergym)" in err
    assert "a.json" in err and json.loads(out.read_text().splitlines()[0])["run_id"] == "conv-1"


def test_cli_quoted_glob_and_bad_items_listed(tree, tmp_path, capsys):
    out = tmp_path / "a.jsonl"
    rc = main(["audit", str(tree / "chats" / "[ab]*.json*"), "--out", str(out), "--no-progress"])
    captured = capsys.readouterr()
    assert rc == 1 and len(out.read_text().splitlines()) == 2  # a bad item is listed and makes the exit code 1
    assert "broken.json" in captured.err and "1 bad records skipped" in captured.out
    assert main(["audit", str(tree / "chats" / "[ab]*.json*"), "--out", str(out), "--on-error", "skip",
                 "--no-progress"]) == 0
    capsys.readouterr()
    rc = main(["audit", str(tree / "nothing-*.json"), "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "no file or folder matches" in err and "\n" not in err


SUBAGENT_SESSION = Path(__file__).resolve().parents[1] / "data" / "traces" / "acceptance_coding_agents" / \
    "claude_code" / "subagent_file"
SID = "d41d8cd9-8f00-4b20-9e98-0ecf8427e002"


@pytest.mark.parametrize("given, include, expected", [
    ("", (), [f"{SID}.jsonl"]),  # the session reads its subagent's file: not audited a second time
    ("", ("*/subagents/*",), [f"{SID}/subagents/agent-a3f9c21.jsonl"]),  # the session left out: the file is read
    (f"{SID}/subagents", (), ["agent-a3f9c21.jsonl"]),  # the subagents folder walked alone
], ids=["with-session", "session-not-included", "subagents-alone"])
def test_a_claude_code_subagent_file_is_read_once(tmp_path, given, include, expected):
    root = tmp_path / "project"
    shutil.copytree(SUBAGENT_SESSION, root)
    start = root / given
    got = [x.path.relative_to(start).as_posix() for x in walk([start], options=InputOptions(include=include))]
    assert got == expected


def test_walk_stops_at_the_depth_limit_and_says_so(tmp_path):
    deep = tmp_path.joinpath(*[f"d{i}" for i in range(4)])
    deep.mkdir(parents=True)
    (deep / "t.json").write_text(json.dumps(chat("Delete note N9", "deep")))
    items = list(iter_inputs([tmp_path], options=InputOptions(max_depth=3)))
    assert len(items) == 1 and "more than 3 folders" in str(items[0].error)
    assert run_ids(iter_inputs([tmp_path], options=InputOptions(max_depth=8))) == ["deep"]


def test_a_named_run_folder_is_read_not_walked(tree):
    exp = tree / "study" / "2025-01-01_Agent_on_notes.delete_3"
    (item,) = list(iter_inputs([exp]))
    assert item.gold.completed is True and item.trace.report == "send_msg_to_user('Deleted N7.')"
    assert item.trace.steps[0].observation.text.endswith("RootWebArea 'Notes' (empty)")


def test_referee_readers_lists_every_reader(capsys):
    assert main(["readers"]) == 0
    text = capsys.readouterr().out
    for name in ("browsergym", "openhands", "referee-run", "tau-bench", "openai-chat", "mini-swe-agent", "referee"):
        assert f"  {name}: " in text
    assert "--allow-pickle" in text and "events/<n>.json" in text
    assert main(["readers", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["browsergym"]["sniffs"].startswith("a folder with summary_info.json")
    assert main(["kinds", "--readers"]) == 0 and "openhands" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["referee.audit.ingest.inputs", "referee.audit.ingest.readers.browsergym",
                                  "referee.audit.ingest.readers.openhands", "referee.audit.ingest.readers.safepickle"])
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_a_summary_that_does_not_read_is_said_and_the_run_still_audits(tmp_path, capsys):
    exp = tape_experiment(tmp_path / "runs" / "2025-01-01_Agent_on_notes.delete_3", 1.0)
    tape = json.loads((exp / "tape.json").read_text())
    tape["metadata"] = {}  # the summary is then the only gold
    (exp / "tape.json").write_text(json.dumps(tape))
    (exp / "summary_info.json").write_text('{"n_steps": 2, "cum_reward": 1.')
    out = tmp_path / "a.jsonl"
    rc = main(["audit", str(tmp_path / "runs"), "--out", str(out), "--no-progress", "--gold-out",
               str(tmp_path / "g.jsonl")])
    err = capsys.readouterr().err
    assert rc == 0 and len(out.read_text().splitlines()) == 1
    assert "summary_info.json" in err and "this run has no gold" in err
    assert (tmp_path / "g.jsonl").read_text() == ""
