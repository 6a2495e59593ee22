"""A field of another type than a reader expects (an object, a list, a number) costs its record, never the audit.

Black-box, through the CLI: a tau-bench run whose `info` is a string, number, boolean or list is one bad record
naming file, line and what is wrong; a reward, score or `cum_reward` too large for a float is read as the number
it is; a BrowserGym tape whose goal or observation is of another shape is one bad item. The other runs audit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

BIG = "9" * 400  # an integer Python reads, but no float can hold


def tau_run(task_id: int, **over) -> dict:
    run = {"task_id": task_id, "trial": 0, "reward": 1.0,
           "info": {"task": {"user_id": "u1", "instruction": "Cancel reservation ABC123.", "actions": []}},
           "traj": [{"role": "system", "content": "policy"}, {"role": "user", "content": "Hi, cancel ABC123."},
                    {"role": "assistant", "content": None, "tool_calls": [
                        {"id": "t1", "type": "function", "function": {
                            "name": "cancel_reservation", "arguments": "{\"reservation_id\": \"ABC123\"}"}}]},
                    {"role": "tool", "tool_call_id": "t1", "name": "cancel_reservation",
                     "content": "{\"status\": \"cancelled\"}"},
                    {"role": "assistant", "content": "Reservation ABC123 has been cancelled."}]}
    run.update(over)
    return run


def audit(referee_cli, cwd: Path, *args: str):
    rc, out, err = referee_cli("audit", *args, "--out", "a.jsonl", "--no-progress", "--show", "none", cwd=cwd)
    assert "internal error" not in err and "Traceback" not in err, err
    audited = [json.loads(ln)["run_id"] for ln in (cwd / "a.jsonl").read_text().splitlines()]
    skipped = [ln for ln in err.splitlines() if ln.startswith("referee: warning: skipped record")]
    return rc, audited, skipped


@pytest.mark.parametrize("info, said", [
    ("see logs", "'info' is a string, not an object"), (7, "'info' is a number, not an object"),
    (True, "'info' is a boolean, not an object"), (["a"], "'info' is a list, not an object"),
    ({"task": "Cancel ABC123."}, "'info.task' is a string, not an object"),
    (None, "no info.task.instruction (the task text)"),
])
@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_tau_bench_info_that_is_no_object_is_one_bad_record(tmp_path, referee_cli, info, said, workers):
    runs = [tau_run(1), tau_run(2, info=info), tau_run(3)]
    (tmp_path / "tau.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    rc, audited, skipped = audit(referee_cli, tmp_path, "tau.jsonl", "--workers", workers)
    assert rc == 1 and audited == ["task1-trial0", "task3-trial0"]
    assert len(skipped) == 1 and "tau.jsonl:2: run_id task2-trial0: tau-bench: " in skipped[0], skipped
    assert said in skipped[0], skipped[0]


def test_a_tau_bench_reward_too_large_for_a_float_is_not_1(tmp_path, referee_cli):
    runs = [tau_run(1, reward="@BIG@"), tau_run(2, reward=1)]
    (tmp_path / "tau.json").write_text(json.dumps(runs).replace('"@BIG@"', BIG))
    rc, audited, skipped = audit(referee_cli, tmp_path, "tau.json", "--gold-out", "g.jsonl")
    assert rc == 0 and audited == ["task1-trial0", "task2-trial0"] and not skipped
    gold = {g["run_id"]: g["completed"] for g in map(json.loads, (tmp_path / "g.jsonl").read_text().splitlines())}
    assert gold == {"task1-trial0": False, "task2-trial0": True}
    rc, _, err = referee_cli("eval", "gold", "tau.json", "-o", "g2.jsonl", cwd=tmp_path)
    assert rc == 0 and "internal error" not in err, err


def _obs(**over) -> dict:
    obs = {"goal_object": [{"type": "text", "text": "Add oat milk to the shopping list"}], "url": "http://shop/list",
           "axtree_txt": "[a1] button 'Add'", "chat_messages": [], "last_action_error": ""}
    obs.update(over)
    return obs


def _experiment(root: Path, name: str, *, goal: object = None, content: object = None,
                cum_reward: object = 1) -> Path:
    """An AgentLab experiment folder with a JSON tape (no pickle); `goal` replaces the first observation's
    goal_object, `content` its observation's JSON text."""
    d = root / f"2025-01-01_GenericAgent_on_{name}_0"
    d.mkdir(parents=True)
    first = _obs() if goal is None else _obs(goal_object=goal)
    steps = [{"kind": "dict_observation", "content": json.dumps(first) if content is None else content,
              "metadata": {"step": 0}},
             {"kind": "assistant", "content": "click('a1')"},
             {"kind": "dict_observation", "content": json.dumps(_obs()), "metadata": {"step": 1}},
             {"kind": "assistant", "content": "send_msg_to_user('Oat milk is on the list.')"}]
    (d / "tape.json").write_text(json.dumps({"steps": steps, "metadata": {}}))
    (d / "summary_info.json").write_text(json.dumps({"cum_reward": "@R@", "n_steps": 2}).replace(
        '"@R@"', json.dumps(cum_reward) if cum_reward != "BIG" else BIG))
    return d


@pytest.mark.parametrize("bad", [{"goal": True}, {"goal": 5}, {"content": True}, {"content": {"url": 1}}],
                         ids=["goal_bool", "goal_number", "content_bool", "content_object"])
def test_a_browsergym_tape_of_another_shape_is_one_bad_item(tmp_path, referee_cli, bad):
    runs = tmp_path / "runs"
    _experiment(runs, "shop.a")
    _experiment(runs, "shop.b", **bad)
    _experiment(runs, "shop.c", cum_reward="BIG")  # a cum_reward too large for a float: still above 0
    rc, audited, skipped = audit(referee_cli, tmp_path, "runs", "--gold-out", "g.jsonl")
    assert rc == 1
    assert audited == ["2025-01-01_GenericAgent_on_shop.a_0", "2025-01-01_GenericAgent_on_shop.c_0"]
    assert len(skipped) == 1 and "shop.b_0" in skipped[0] and "browsergym: " in skipped[0], skipped
    gold = [json.loads(ln)["completed"] for ln in (tmp_path / "g.jsonl").read_text().splitlines()]
    assert gold == [True, True]


def test_an_inspect_score_too_large_for_a_float_is_past_the_threshold(tmp_path, referee_cli):
    sample = {"id": "s1", "epoch": 1, "input": "Delete the file locked.txt",
              "messages": [{"role": "user", "content": "Delete the file locked.txt"},
                           {"role": "assistant", "content": "I deleted locked.txt."}],
              "output": {"completion": "I deleted locked.txt."}, "scores": {"state_check": {"value": "@BIG@"}}}
    log = {"version": 2, "status": "success", "eval": {"task": "files", "eval_id": "E1"}, "samples": [sample]}
    (tmp_path / "log.json").write_text(json.dumps(log).replace('"@BIG@"', BIG))
    rc, audited, skipped = audit(referee_cli, tmp_path, "log.json", "--gold-scorer", "state_check",
                                 "--gold-out", "g.jsonl")
    assert rc == 0 and audited == ["files/s1/1@E1"] and not skipped
    assert [json.loads(ln)["completed"] for ln in (tmp_path / "g.jsonl").read_text().splitlines()] == [True]
