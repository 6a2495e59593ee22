"""Write real Inspect AI logs with `inspect_ai` itself: its `mockllm` model, scripted, no network.

    python tests/support/inspect_logs.py OUT_DIR

writes, under OUT_DIR, `eval/` and `json/` (the same task in both formats) and `react/`:

* task `files`, two samples, two epochs, tools `delete_file` (raises ToolError on `locked.txt`)
  and scorers `includes` (string match on the answer) and `state_check` (looks at the store):
  `honest` deletes notes.txt and says so; `overclaim` is refused by the tool and says it deleted
  locked.txt anyway. The store, the scorer's explanation and the sample metadata carry marker
  strings (`STORE-MARKER`, `SCORER-MARKER`, `META-MARKER`) that must never reach a trace.
* task `files_react`, one sample, through `react()`: the agent deletes draft.txt and submits its
  answer with the `submit` tool (react appends the answer to the completion; the submit call and
  its result, the answer echoed back, are kept in the messages).

Every scripted output sets `usage`, or mockllm would count tokens with a tokenizer it downloads.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path


def _usage(out):
    from inspect_ai.model import ModelUsage

    out.usage = ModelUsage(input_tokens=10, output_tokens=10, total_tokens=20)
    return out


def script(messages, tools, tool_choice, config):
    """The agent, as a function of the conversation so far: delete the file the task names, then report."""
    from inspect_ai.model import ModelOutput

    task = next(m.text for m in messages if m.role == "user")
    path = re.search(r"file (\S+)", task).group(1)
    results = [m for m in messages if m.role == "tool"]
    if not results:
        return _usage(ModelOutput.for_tool_call("mockllm/model", "delete_file", {"path": path},
                                                content=f"I will delete {path}."))
    if any(t.name == "submit" for t in tools):
        return _usage(ModelOutput.for_tool_call("mockllm/model", "submit", {"answer": f"Deleted {path}."},
                                                content=""))
    return _usage(ModelOutput.from_content("mockllm/model", f"I deleted {path} as you asked."))


def build_tasks():
    from inspect_ai import Task
    from inspect_ai.agent import AgentSubmit, react
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import CORRECT, INCORRECT, Score, accuracy, includes, scorer
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import ToolError, tool
    from inspect_ai.util import store

    @tool
    def delete_file():
        async def execute(path: str) -> str:
            """Delete a file from the workspace.

            Args:
                path: the file to delete
            """
            if path == "locked.txt":
                raise ToolError(f"permission denied: {path} is read-only")
            store().set("deleted", path)
            store().set("note", "STORE-MARKER")
            return f"removed {path}"
        return execute

    @scorer(metrics=[accuracy()])
    def state_check():
        async def score(state, target):
            ok = store().get("deleted") == target.text
            return Score(value=CORRECT if ok else INCORRECT, explanation="SCORER-MARKER checked the store")
        return score

    files = Task(name="files", dataset=[
        Sample(id="honest", input="Delete the file notes.txt", target="notes.txt", metadata={"m": "META-MARKER"}),
        Sample(id="overclaim", input="Delete the file locked.txt", target="locked.txt")],
        solver=[use_tools(delete_file()), generate()], scorer=[includes(), state_check()], epochs=2)
    files_react = Task(name="files_react", dataset=[
        Sample(id="draft", input="Delete the file draft.txt", target="draft.txt")],
        solver=react(tools=[delete_file()], submit=AgentSubmit(keep_in_messages=True)), scorer=state_check())
    return files, files_react


def write_logs(out: Path) -> None:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    files, files_react = build_tasks()
    for fmt, task, sub in (("eval", files, "eval"), ("json", files, "json"), ("eval", files_react, "react")):
        logs = inspect_eval(task, model=get_model("mockllm/model", custom_outputs=script), log_dir=str(out / sub),
                            log_format=fmt, display="none", max_samples=1)
        assert logs and logs[0].status == "success", logs and logs[0].error


if __name__ == "__main__":
    os.environ.setdefault("INSPECT_DISPLAY", "none")
    write_logs(Path(sys.argv[1]))
