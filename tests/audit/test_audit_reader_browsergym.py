"""BrowserGym / AgentLab experiment folders: written by BrowserGym's own experiment loop (tests/support/
browsergym_fake.py, run in its own process), audited with no --format; pickles refused without
--allow-pickle, and read through the allow-list otherwise; the JSON tape read without any pickle."""

from __future__ import annotations

import gzip
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from referee.audit.ingest.readers import read_traces, sniff_dir
from referee.audit.ingest.readers.safepickle import PickleRefused, load_file, loads
from referee.audit.view.blind import build_view, canonical_json
from referee.audit.view.terminal import split_call
from referee.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
pytest.importorskip("browsergym.experiments", reason="browsergym-core/-experiments: `make setup` installs them")


@pytest.fixture(scope="module")
def experiments(tmp_path_factory) -> dict[str, Path]:
    """One experiment folder per scenario, made by BrowserGym's ExpArgs.run in a child process."""
    out = tmp_path_factory.mktemp("bgym") / "study"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-m", "tests.support.browsergym_fake", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    made = json.loads(proc.stdout.strip().splitlines()[-1])
    return {k: Path(v) for k, v in made.items()}


def one(path: Path, **kw):
    items = list(read_traces(path, **kw))
    assert len(items) == 1
    return items[0]


def copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_folder_is_what_browsergym_writes(experiments):
    d = experiments["added"]
    names = {p.name for p in d.iterdir()}
    assert {"summary_info.json", "goal_object.pkl.gz", "step_0.pkl.gz", "step_3.pkl.gz", "screenshot_step_3.png",
            "exp_args.pkl"} <= names
    assert sniff_dir(d) == "browsergym" and sniff_dir(d.parent) is None


def test_pickles_are_refused_without_allow_pickle(experiments, tmp_path, capsys):
    item = one(experiments["added"])
    assert item.trace is None and "--allow-pickle" in str(item.error) and "\n" not in str(item.error)
    out = tmp_path / "a.jsonl"
    rc = main(["audit", str(experiments["added"]), "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and not out.exists()
    line = err.strip()
    assert "\n" not in line and "Traceback" not in line
    assert line.startswith("referee: error: ") and "pickle" in line and "run code" in line and "--allow-pickle" in line


def test_action_n_is_paired_with_the_observation_of_step_n_plus_1(experiments):
    t = one(experiments["added"], allow_pickle=True).trace
    assert t.task == "Add 'oat milk' to the shopping list."
    names = [s.action.name for s in t.steps]
    assert names == ["fill('b12', 'oat milk')", "click('b13')",
                     'send_msg_to_user("I added oat milk to the shopping list.")']
    # step_0 holds the page before any action; the page after fill() shows the typed text, not the item
    assert "value=''" in t.initial_observation.text and "listitem 'oat milk'" not in t.initial_observation.text
    assert "value='oat milk'" in t.steps[0].observation.text
    assert "listitem 'oat milk'" not in t.steps[0].observation.text
    assert "listitem 'oat milk'" in t.steps[1].observation.text  # after click('b13'): step_2's page
    assert [s.observation.screenshot for s in t.steps] == [f"screenshot_step_{n}.png" for n in (1, 2, 3)]
    assert [s.narration for s in t.steps] == ["Type the item.", "Press Add.", "It is on the list now."]


def test_report_is_the_last_message_call_and_the_view_is_claim_blind(experiments):
    item = one(experiments["overclaim"], allow_pickle=True)
    t = item.trace
    assert t.report == 'send_msg_to_user("Done: oat milk is on the shopping list.")'
    view = canonical_json(build_view(t).as_json())
    # the agent's words (its message, its thoughts, its chat messages) are nowhere in the view
    assert "Done: oat milk" not in view and "Press Add." not in view and "UI assistant" not in view
    assert '"send_msg_to_user"' in view  # the call's name stays: the agent did end the run with a message
    # the failed click is an error observation naming the error
    bad = t.steps[1]
    assert bad.action.name == "click('b99')" and bad.observation.error
    assert 'Could not find element with bid "b99"' in bad.observation.text
    # gold from summary_info (cum_reward 0), never in the view
    assert item.gold.completed is False and "cum_reward" not in view


def test_infeasible_and_raw_axtree(experiments):
    t = one(experiments["infeasible"], allow_pickle=True).trace
    assert t.report == "report_infeasible('There is no way to add items on this page.')"
    assert "[b13] button 'Add'" in t.initial_observation.text  # the raw axtree_object, flattened


def test_crashed_experiment_ends_with_an_error_observation(experiments):
    item = one(experiments["crashed"], allow_pickle=True)
    last = item.trace.steps[-1]
    assert last.action is None and last.observation.error
    assert "RuntimeError" in last.observation.text and item.gold.completed is False
    # the agent never sent a message: BrowserGym's own greeting in the chat is not taken for its report
    assert item.trace.report is None


def test_a_message_only_in_the_chat_is_the_report(experiments, tmp_path):
    from referee.audit.ingest.readers.browsergym import _Entry, entries_to_trace

    greeting = {"role": "assistant", "message": "Hi! I am your UI assistant."}
    first = {"goal": "g", "chat_messages": [greeting]}
    last = {"goal": "g", "chat_messages": [greeting, {"role": "user", "message": "g"},
                                           {"role": "infeasible", "message": "No such page."}]}
    raw = entries_to_trace([_Entry(0, first, "noop()"), _Entry(1, last)], run_id="r", task="g", meta={})
    assert raw["report"] == 'report_infeasible("No such page.")'
    assert "No such page" not in json.dumps(raw["steps"]) and "user: g" in raw["steps"][0]["observation"]["text"]


def test_audit_cli_walks_a_study_folder_with_no_format(experiments, tmp_path, capsys):
    out, gold = tmp_path / "audit.jsonl", tmp_path / "gold.jsonl"
    rc = main(["audit", str(experiments["added"].parent), "--allow-pickle", "--out", str(out),
               "--gold-out", str(gold), "--no-progress"])
    assert rc == 0
    recs = {json.loads(line)["run_id"].split("_")[-4]: json.loads(line) for line in out.read_text().splitlines()}
    assert set(recs) == {"Scripted-added", "Scripted-overclaim", "Scripted-infeasible", "Scripted-crashed"}
    assert all(r["source"] == "browsergym" and r["group"] == "referee-todo" for r in recs.values())
    assert recs["Scripted-added"]["claim"]["label"] == "success" and recs["Scripted-added"]["disposition"] == "pass"
    assert recs["Scripted-infeasible"]["claim"]["label"] == "failure_or_incomplete"
    # the overclaim (success claimed, reward 0) is not passed silently
    assert recs["Scripted-overclaim"]["claim"]["label"] == "success"
    assert recs["Scripted-overclaim"]["disposition"] in ("flag", "review")
    rows = {r["run_id"].split("_")[-4]: r["completed"] for r in map(json.loads, gold.read_text().splitlines())}
    assert rows == {"Scripted-added": True, "Scripted-overclaim": False, "Scripted-infeasible": False,
                    "Scripted-crashed": False}


# ---- the restricted unpickler ----

class _Evil:
    def __reduce__(self):
        return (os.system, (f"touch {os.environ['REFEREE_PWNED']}",))


def test_a_pickle_that_runs_code_is_refused_and_nothing_runs(experiments, tmp_path, monkeypatch):
    marker = tmp_path / "pwned"
    monkeypatch.setenv("REFEREE_PWNED", str(marker))
    d = copy(experiments["added"], tmp_path / "exp")
    with gzip.open(d / "step_2.pkl.gz", "wb") as f:
        pickle.dump(_Evil(), f)
    item = one(d, allow_pickle=True)
    assert item.trace is None and not marker.exists()
    msg = str(item.error)
    assert "step_2.pkl.gz" in msg and "posix.system" in msg and "allow-list" in msg and "\n" not in msg
    rc = main(["audit", str(d), "--allow-pickle", "--out", str(tmp_path / "a.jsonl"), "--on-error", "stop",
               "--no-progress"])
    assert rc == 2 and not marker.exists()


def test_unknown_classes_are_refused_even_harmless_ones(tmp_path):
    with pytest.raises(PickleRefused, match=r"pathlib\.PosixPath"):
        loads(pickle.dumps({"obs": Path("/x")}))
    bad = tmp_path / "x.pkl.gz"
    bad.write_bytes(b"not gzip at all")
    with pytest.raises(PickleRefused, match="not a readable gzip pickle"):
        load_file(bad)


def test_browsergym_classes_load_as_inert_stand_ins(experiments):
    info = load_file(experiments["added"] / "step_1.pkl.gz")
    assert info.pickled_class == "browsergym.experiments.loop.StepInfo"
    assert info.action == "click('b13')" and info.obs["url"].startswith("http://127.0.0.1")
    assert info.agent_info.pickled_class == "browsergym.experiments.agent.AgentInfo"
    assert not hasattr(info, "save_step_info")  # none of BrowserGym's methods exist on it
    assert type(info).__module__ == "referee.audit.ingest.readers.safepickle"


# ---- the JSON tape: no pickle needed ----

def _calls(trace) -> list:
    return [split_call(s.action.name, {}) for s in trace.steps if s.action is not None]


def _observed(trace) -> list:
    return [s.observation.text if s.observation else None for s in trace.steps]


@pytest.mark.parametrize("exporter", ["browsergym_tape", "agentlab_tape"])
def test_tape_reads_like_the_pickles_without_allow_pickle(experiments, tmp_path, exporter):
    sys.path.insert(0, str(ROOT))
    from tests.support import browsergym_fake

    for name in ("added", "overclaim"):
        d = copy(experiments[name], tmp_path / exporter / name)
        from_pickles = one(d, allow_pickle=True)
        getattr(browsergym_fake, exporter)(d)
        for f in d.glob("*.pkl*"):
            f.unlink()  # the tape alone must do
        from_tape = one(d)
        assert from_tape.error is None and from_tape.trace.meta["read_from"] == "tape"
        a, b = from_pickles.trace, from_tape.trace
        assert b.task == a.task and _calls(b) == _calls(a) and _observed(b) == _observed(a)
        assert b.initial_observation.text == a.initial_observation.text
        assert split_call(b.report, {}) == split_call(a.report, {})
        assert from_tape.gold == from_pickles.gold
