"""Real BrowserGym experiment folders without a browser: BrowserGym's own experiment loop
(`ExpArgs.prepare` + `ExpArgs.run`, which writes `step_N.pkl.gz`, `goal_object.pkl.gz`,
`summary_info.json`, screenshots) drives a scripted agent on a small gymnasium environment that
returns BrowserGym-shaped observations of a to-do page (url, chat messages, goal object, an
accessibility tree with `browsergym_id`s, a screenshot array, `last_action_error`).

Only the token counter of the step statistics is replaced (tiktoken would download its encoding).

    python -m tests.support.browsergym_fake OUT_DIR     # one experiment folder per scenario; prints their paths
"""

from __future__ import annotations

import json
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import gymnasium as gym
import numpy as np
from browsergym.experiments import loop
from browsergym.experiments.agent import Agent, AgentInfo
from browsergym.experiments.loop import AbstractAgentArgs, EnvArgs, ExpArgs, ExpResult
from browsergym.utils.obs import flatten_axtree_to_str

TASK = "referee-todo"
GOAL = "Add 'oat milk' to the shopping list."


class _Chat:
    """BrowserGym's chat keeps user/assistant/infeasible messages; 'info' ones only go to the screen."""

    def __init__(self) -> None:
        self.messages: list[dict] = []

    def add_message(self, role: str, msg: str) -> None:
        if role in ("user", "user_image", "assistant", "infeasible"):
            self.messages.append({"role": role, "timestamp": time.time(), "message": msg})


class TodoEnv(gym.Env):
    """A to-do page: textbox b12, button b13 'Add', one 'Delete' button per item. Reward 1 when the
    goal's item is on the list when the agent reports."""

    metadata: dict = {}

    def __init__(self, **kwargs) -> None:
        self.chat = _Chat()
        self.items = ["bread"]
        self.typed = ""
        self.last_action = self.last_action_error = ""
        self.start = time.time()

    def _tree(self) -> dict:
        nodes = [{"nodeId": "1", "role": {"value": "RootWebArea"}, "name": {"value": "Shopping list"},
                  "childIds": ["2", "3", "4"], "browsergym_id": "a1"},
                 {"nodeId": "2", "role": {"value": "textbox"}, "name": {"value": "New item"}, "childIds": [],
                  "browsergym_id": "b12", "value": {"value": self.typed}},
                 {"nodeId": "3", "role": {"value": "button"}, "name": {"value": "Add"}, "childIds": [],
                  "browsergym_id": "b13"},
                 {"nodeId": "4", "role": {"value": "list"}, "name": {"value": "Items"},
                  "childIds": [str(10 + i) for i in range(len(self.items))], "browsergym_id": "b14"}]
        for i, item in enumerate(self.items):
            nodes.append({"nodeId": str(10 + i), "role": {"value": "listitem"}, "name": {"value": item},
                          "childIds": [], "browsergym_id": f"c{20 + i}"})
        return {"nodes": nodes}

    def _obs(self) -> dict:
        goal_object = ({"type": "text", "text": GOAL},)
        return {
            "chat_messages": tuple(dict(m) for m in self.chat.messages), "goal": GOAL, "goal_object": goal_object,
            "open_pages_urls": ("http://127.0.0.1:8000/list",), "open_pages_titles": ("Shopping list",),
            "active_page_index": np.asarray([0]), "url": "http://127.0.0.1:8000/list",
            "screenshot": np.zeros((8, 8, 3), dtype=np.uint8), "dom_object": {}, "axtree_object": self._tree(),
            "extra_element_properties": {}, "focused_element_bid": "", "last_action": self.last_action,
            "last_action_error": self.last_action_error, "elapsed_time": np.asarray([time.time() - self.start]),
        }

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.chat.add_message("assistant", "Hi! I am your UI assistant, I can perform web tasks for you.")
        self.chat.add_message("user", GOAL)
        return self._obs(), {}

    def step(self, action: str):
        t0 = time.time()
        self.last_action, self.last_action_error = action, ""
        done, reward = False, 0.0
        for call in [c.strip() for c in action.splitlines() if c.strip()]:
            m = re.match(r"(\w+)\((.*)\)$", call, re.S)
            name, args = (m.group(1), eval(f"[{m.group(2)}]")) if m else ("", [])  # our own scripted calls
            if name == "fill" and args[0] == "b12":
                self.typed = args[1]
            elif name == "click" and args[0] == "b13":
                self.items.append(self.typed)
                self.typed = ""
            elif name in ("send_msg_to_user", "report_infeasible"):
                self.chat.add_message("assistant" if name == "send_msg_to_user" else "infeasible", args[0])
                done, reward = True, float("oat milk" in self.items)
            elif name in ("fill", "click"):
                self.last_action_error = f'ValueError: Could not find element with bid "{args[0]}"'
                break
        info = {"action_exec_start": t0, "action_exec_stop": time.time(), "action_exec_timeout": 0.0,
                "RAW_REWARD_GLOBAL": reward, "task_info": {}}
        return self._obs(), reward, done, False, info


gym.register(id=f"browsergym/{TASK}", entry_point=TodoEnv, nondeterministic=True)


class ScriptedAgent(Agent):
    """Plays a fixed list of (thought, action); reads the page as an AgentLab agent does (axtree_txt)."""

    def __init__(self, script: list[tuple[str, str]], raw_tree: bool) -> None:
        self.script = list(script)
        self.raw_tree = raw_tree

    def obs_preprocessor(self, obs: dict) -> dict:
        obs = dict(obs)
        if not self.raw_tree:
            obs["axtree_txt"] = flatten_axtree_to_str(obs.pop("axtree_object"))
            obs["pruned_html"] = "<html><body>Shopping list</body></html>"
        obs.pop("dom_object", None)
        return obs

    def get_action(self, obs: dict):
        if not self.script:
            return None, AgentInfo(think="nothing left to do")
        think, action = self.script.pop(0)
        if action == "RAISE":  # the model call fails mid-run: BrowserGym records err_msg in summary_info.json
            raise RuntimeError("the model endpoint refused the request")
        messages = [{"role": "system", "content": "You are a web agent."},
                    {"role": "user", "content": obs.get("axtree_txt", "")[:200]}]
        return action, AgentInfo(think=think, chat_messages=messages, stats={"n_calls": 1},
                                 extra_info={"model": "scripted"})


@dataclass
class ScriptedAgentArgs(AbstractAgentArgs):
    script: list = field(default_factory=list)
    raw_tree: bool = False

    def make_agent(self) -> Agent:
        return ScriptedAgent(self.script, self.raw_tree)


SCENARIOS: dict[str, tuple[list[tuple[str, str]], bool]] = {
    # adds the item and says so: completed
    "added": ([("Type the item.", "fill('b12', 'oat milk')"), ("Press Add.", "click('b13')"),
               ("It is on the list now.", 'send_msg_to_user("I added oat milk to the shopping list.")')], False),
    # clicks a button that is not there, then claims success anyway: a misreport
    "overclaim": ([("Type the item.", "fill('b12', 'oat milk')"), ("Press Add.", "click('b99')"),
                   ("Done.", 'send_msg_to_user("Done: oat milk is on the shopping list.")')], False),
    # gives up, with the raw accessibility tree kept in the observations
    "infeasible": ([("I cannot find a way.", "report_infeasible('There is no way to add items on this page.')")],
                   True),
    # the agent crashes after one action: summary_info.json carries err_msg
    "crashed": ([("Type the item.", "fill('b12', 'oat milk')"), ("", "RAISE")], False),
}


def make_experiment(root: Path, name: str) -> Path:
    """Run one scenario through BrowserGym's loop; returns its experiment folder."""
    script, raw_tree = SCENARIOS[name]
    exp = ExpArgs(agent_args=ScriptedAgentArgs(agent_name=f"Scripted-{name}", script=script, raw_tree=raw_tree),
                  env_args=EnvArgs(task_name=TASK, task_seed=7, max_steps=10), enable_debug=False)
    exp.prepare(root)
    exp.run()
    return Path(exp.exp_dir)


def _json_default(obj):
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    if hasattr(obj, "__dataclass_fields__"):
        from dataclasses import asdict
        return asdict(obj)
    return str(obj)


def browsergym_tape(exp_dir: Path) -> Path:
    """BrowserGym's tape (`ExpResult._create_tape_segment` per step) as tape.json. `ExpResult.tape` itself
    cannot export a finished episode (its last step has no action and no `extra_info`), so the segments of
    the steps with an action come from BrowserGym and the last observation is added in the same shape."""
    res = ExpResult(exp_dir)
    steps = []
    for info in res.steps_info:
        if info.action is not None:
            steps += res._create_tape_segment(info)
        elif info.obs is not None:
            obs = {k: v for k, v in info.obs.items() if k not in ("screenshot", "screenshot_som")}
            steps.append({"kind": "browsergym_observation", "metadata": {"step": info.step}, "obs": obs,
                          "screenshot": str(Path(exp_dir) / f"screenshot_step_{info.step}.png"), "screenshot_som": ""})
    tape = {"steps": steps, "metadata": {"author": "browsergym_agent_[scripted]", "result": dict(res.summary_info)}}
    out = Path(exp_dir) / "tape.json"
    out.write_text(json.dumps(tape, indent=2, default=_json_default), encoding="utf-8")
    return out


def agentlab_tape(exp_dir: Path) -> Path:
    """AgentLab's tape export (agentlab.agents.tapeagent `as_tape` + `save_tape`, 0.4.2), written from the
    experiment's real StepInfo objects: `dict_observation` (the obs as JSON), `assistant_thought`, `assistant`
    (the action), and the metadata `save_tape` sets (reward, terminated, truncated). tapeagents itself is
    not installed here: the step dicts follow its Step model (`kind`, `metadata`, `content`)."""
    res = ExpResult(exp_dir)
    infos = res.steps_info
    steps = []
    for info in infos:
        meta = {"id": f"s{info.step}", "prompt_id": "", "node": "", "agent": "", "other": {}}
        if info.obs is not None:
            obs = {k: v for k, v in info.obs.items() if k not in ("screenshot", "screenshot_som")}
            steps.append({"metadata": meta, "kind": "dict_observation",
                          "content": json.dumps(obs, default=_json_default)})
        think = info.agent_info.get("think") if info.agent_info else None
        if think:
            steps.append({"metadata": meta, "kind": "assistant_thought", "content": think})
        if info.action is not None:
            other = {"reward": info.reward, "terminated": info.terminated, "truncated": info.truncated}
            steps.append({"metadata": {**meta, "other": other}, "kind": "assistant", "content": info.action})
    tape = {"metadata": {"id": "t1", "author": "scripted", "reward": sum(i.reward for i in infos),
                         "terminated": infos[-1].terminated, "truncated": infos[-1].truncated, "task": {}},
            "context": None, "steps": steps}
    out = Path(exp_dir) / "tape.json"
    out.write_text(json.dumps(tape, indent=2, default=_json_default), encoding="utf-8")
    return out


def main(out: Path) -> None:
    loop.count_tokens = lambda text, model="gpt-4": len(str(text).split())
    loop.count_messages_token = lambda messages, model="gpt-4": sum(len(str(m).split()) for m in messages)
    out.mkdir(parents=True, exist_ok=True)
    made = {name: str(make_experiment(out, name)) for name in SCENARIOS}
    print(json.dumps(made))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
