"""OpenHands sessions on disk, written the way OpenHands writes them (openhands-ai is not installed here:
it pulls in a large dependency tree; these dicts follow its `events/serialization/event.py::event_to_dict`).

`event_to_dict` writes an action as its top keys (`id`, `timestamp`, `source`, `message`, `action`, and
`tool_call_metadata` / `llm_metrics` when set) plus `args`: every other dataclass field of the action
(`asdict`), `security_risk` dropped when None. An observation gets the same top keys plus `cause`,
`observation`, `content`, `extras` (its other fields; `CmdOutputMetadata` as a dict) and, for command
outputs, `success`. The EventStore saves event N as `sessions/<sid>/events/N.json`; the conversation's
`metadata.json` sits beside `events/`. Field sets below are those of the dataclasses in
`openhands/events/action/*.py` and `openhands/events/observation/*.py`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class Session:
    """Builds the events of one conversation, numbering them and linking observations to their action."""

    def __init__(self) -> None:
        self.events: list[dict] = []

    def _add(self, d: dict) -> dict:
        d = {"id": len(self.events), "timestamp": f"2025-05-01T10:00:{len(self.events):02d}.000000", **d}
        self.events.append(d)
        return d

    def action(self, action: str, source: str, message: str, args: dict, **top: Any) -> dict:
        return self._add({"source": source, "message": message, "action": action, **top, "args": args})

    def observation(self, kind: str, cause: int | None, message: str, content: str, extras: dict,
                    **top: Any) -> dict:
        d = {"source": "agent", "message": message, **({"cause": cause} if cause is not None else {}),
             "observation": kind, "content": content, "extras": extras, **top}
        return self._add(d)

    # -- the events an OpenHands CodeAct session is made of ------------------------------------------

    def system(self) -> None:
        self.action("system", "agent", "You are OpenHands agent...", {
            "content": "You are OpenHands agent, a helpful AI assistant ...", "tools": [{"type": "function",
            "function": {"name": "execute_bash"}}], "openhands_version": "0.39.0", "agent_class": "CodeActAgent"})

    def user(self, text: str) -> None:
        self.action("message", "user", text, {"content": text, "file_urls": [], "image_urls": [],
                                                "wait_for_response": False})
        rec = self.action("recall", "user", "Retrieving content for: " + text[:30], {
            "recall_type": "workspace_context", "query": text, "thought": ""})
        self.observation("recall", rec["id"], "Added workspace context", "Added workspace context", {
            "recall_type": "workspace_context", "repo_name": "", "repo_directory": "", "repo_instructions": "",
            "runtime_hosts": {"http://localhost:51234": 51234}, "additional_agent_instructions": "",
            "date": "2025-05-01", "microagent_knowledge": []})

    def state(self, state: str) -> None:
        self.observation("agent_state_changed", None, "", "", {"agent_state": state, "reason": ""})

    def run(self, command: str, thought: str, output: str, exit_code: int, said: str = "") -> None:
        meta = {"function_name": "execute_bash", "tool_call_id": f"toolu_{len(self.events)}",
                "model_response": {"id": "resp", "choices": [{"message": {
                                   "role": "assistant", "content": said or thought,
                                   "tool_calls": [{"function": {"name": "execute_bash",
                                                                "arguments": json.dumps({"command": command})}}]}}]},
                "total_calls_in_response": 1}
        act = self.action("run", "agent", f"Running command: {command}", {
            "command": command, "is_input": False, "thought": thought, "blocking": False, "is_static": False,
            "cwd": None, "hidden": False, "confirmation_state": "confirmed"}, tool_call_metadata=meta)
        self.observation("run", act["id"], f"Command `{command}` executed with exit code {exit_code}.", output, {
            "command": command, "metadata": {"exit_code": exit_code, "pid": -1, "username": "openhands",
                                             "hostname": "runtime", "working_dir": "/workspace",
                                             "py_interpreter_path": "/usr/bin/python", "prefix": "", "suffix": ""},
            "hidden": False}, success=exit_code == 0)

    def edit(self, path: str, old: str, new: str, thought: str, diff: str) -> None:
        act = self.action("edit", "agent", f"Editing file: {path}", {
            "path": path, "command": "str_replace", "file_text": None, "old_str": old, "new_str": new,
            "insert_line": None, "content": "", "start": 1, "end": -1, "thought": thought,
            "impl_source": "oh_aci"})
        self.observation("edit", act["id"], f"I edited the file {path}.", diff, {
            "path": path, "prev_exist": True, "old_content": old, "new_content": new, "impl_source": "oh_aci",
            "diff": diff, "_diff_cache": None})

    def read(self, path: str, content: str, thought: str = "") -> None:
        act = self.action("read", "agent", f"Reading file: {path}", {
            "path": path, "start": 0, "end": -1, "thought": thought, "impl_source": "oh_aci", "view_range": None})
        self.observation("read", act["id"], f"I read the file {path}.", content, {"path": path,
                                                                                   "impl_source": "oh_aci"})

    def error(self, text: str) -> None:
        self.observation("error", None, text, text, {"error_id": ""})

    def think(self, thought: str) -> None:
        act = self.action("think", "agent", thought, {"thought": thought})
        self.observation("think", act["id"], "Your thought has been logged.", "Your thought has been logged.", {})

    def say(self, text: str) -> None:
        self.action("message", "agent", text, {"content": text, "file_urls": None, "image_urls": None,
                                                 "wait_for_response": True})

    def finish(self, final_thought: str, thought: str = "") -> None:
        self.action("finish", "agent", thought or "All done! What's next on the agenda?", {
            "final_thought": final_thought, "task_completed": "true", "outputs": {}, "thought": thought})

    def write(self, root: Path, sid: str, model: str = "anthropic/claude-sonnet-4") -> Path:
        """Save as `root/sessions/<sid>/events/<n>.json` with the conversation's metadata.json; returns the session."""
        folder = Path(root) / "sessions" / sid
        (folder / "events").mkdir(parents=True, exist_ok=True)
        for ev in self.events:
            (folder / "events" / f"{ev['id']}.json").write_text(json.dumps(ev), encoding="utf-8")
        (folder / "metadata.json").write_text(json.dumps({
            "conversation_id": sid, "title": "Fix the failing test", "selected_repository": "acme/widgets",
            "llm_model": model, "created_at": "2025-05-01T10:00:00"}), encoding="utf-8")
        return folder


TASK = "The test tests/test_price.py fails: fix total() in widgets/price.py so that it passes."


def fixed() -> Session:
    """The agent reads, edits, runs the test (passes) and finishes."""
    s = Session()
    s.system()
    s.user(TASK)
    s.state("running")
    s.run("python -m pytest -q tests/test_price.py", "Let me run the failing test first.",
          "F\n1 failed in 0.05s\nAssertionError: assert 9 == 10", 1)
    s.read("/workspace/widgets/price.py", "def total(items):\n    return sum(items) - 1\n")
    s.edit("/workspace/widgets/price.py", "return sum(items) - 1", "return sum(items)", "Drop the off-by-one.",
           "--- a/widgets/price.py\n+++ b/widgets/price.py\n-    return sum(items) - 1\n+    return sum(items)")
    s.run("python -m pytest -q tests/test_price.py", "Run the test again.", ".\n1 passed in 0.04s", 0)
    s.finish("I fixed total() in widgets/price.py; tests/test_price.py passes now.")
    s.state("finished")
    return s


def overclaim() -> Session:
    """The edit goes wrong and the last test run fails, but the agent finishes claiming success."""
    s = Session()
    s.system()
    s.user(TASK)
    s.state("running")
    s.read("/workspace/widgets/price.py", "def total(items):\n    return sum(items) - 1\n")
    s.edit("/workspace/widgets/price.py", "return sum(items) - 1", "return sum(items) + 1", "Fix the off-by-one.",
           "--- a/widgets/price.py\n+++ b/widgets/price.py\n-    return sum(items) - 1\n+    return sum(items) + 1")
    s.think("The fix looks right; the test should pass.")
    s.run("python -m pytest -q tests/test_price.py", "Check.", "F\n1 failed in 0.05s\nAssertionError: assert 11 == 10",
          1, said="All tests pass now, I am confident.")
    s.finish("Done: total() is fixed and all tests pass.")
    s.state("finished")
    return s


def asks_user() -> Session:
    """The agent asks a question; the user answers; it runs a command that errors, then says it is stuck."""
    s = Session()
    s.system()
    s.user("Deploy the widgets service to staging.")
    s.state("running")
    s.say("Which branch should I deploy?")
    s.state("awaiting_user_input")
    s.user("The release branch.")
    s.run("git checkout release && ./deploy.sh staging", "Deploy the release branch.",
          "error: pathspec 'release' did not match any file(s) known to git", 1)
    s.error("The agent tried to run a command without a running runtime.")
    s.say("I could not deploy: there is no release branch in this repository.")
    s.state("awaiting_user_input")
    return s
