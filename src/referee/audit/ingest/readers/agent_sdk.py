"""Reader for Anthropic agent sessions: Claude Agent SDK message streams and Managed Agents session event logs.

Two shapes, one session each (several sessions in one file are read one after another):

- **Claude Agent SDK** (and `claude -p --output-format stream-json`): one message a line,
  `{"type": "system", "subtype": "init", "session_id", "tools", "model"}`, `{"type": "assistant",
  "message": {Anthropic message}}` (its `text` and `tool_use` blocks), `{"type": "user", "message":
  ...}` (a prompt, or `tool_result` blocks), and `{"type": "result", "result": "final text",
  "is_error", "num_turns"}`. Messages of a subagent (`parent_tool_use_id` set) are its own work,
  not the session's: left out.
- **Managed Agents** session events (`GET /v1/sessions/{id}/events`: a JSON page `{"data":
  [...]}`, a list, or JSONL): `user.message`, `agent.message`, `agent.tool_use` /
  `agent.mcp_tool_use` / `agent.custom_tool_use` and their results (`agent.tool_result`,
  `agent.mcp_tool_result`, `user.custom_tool_result`, `is_error`), `session.error`. Thinking,
  status, span and sub-agent thread events are not read.

Both become chat messages that `sessions.session_items` splits into one run per prompt. Claude's
tools get names that say what they do (`Bash` -> bash, `Edit`/`MultiEdit` -> edit_file, `Write` ->
write_file, `Read` -> read_file, `Grep` -> search_files, `Glob` -> list_files, `TodoWrite` ->
plan, the agent's own notes), so a shell run, an edit and a read are seen as such.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

from referee.audit.ingest.readers import ReadOptions, trace_readers
from referee.audit.ingest.readers.sessions import session_items
from referee.audit.trace import TraceItem, record_error
from referee.core.jsonio.values import iter_json_values

# Claude's tool names (Claude Code, the Agent SDK, the managed-agent toolset) -> names that say what they do
CLAUDE_TOOLS = {"bash": "bash", "edit": "edit_file", "multiedit": "edit_file", "write": "write_file",
                "read": "read_file", "notebookedit": "edit_notebook", "notebookread": "read_notebook",
                "grep": "search_files", "glob": "list_files", "ls": "list_files", "webfetch": "fetch_url",
                "web_fetch": "fetch_url", "websearch": "web_search", "todowrite": "plan", "todoread": "plan",
                "exitplanmode": "plan", "bashoutput": "read_shell_output", "killshell": "kill_shell"}
_MANAGED = re.compile(r"^(?:user|agent|session|span)\.[a-z_]+$")
_CALLS = {"agent.tool_use", "agent.mcp_tool_use", "agent.custom_tool_use"}
_RESULTS = {"agent.tool_result": "tool_use_id", "agent.mcp_tool_result": "mcp_tool_use_id",
            "user.custom_tool_result": "custom_tool_use_id", "user.tool_result": "tool_use_id"}
_SDK_TYPES = frozenset({"system", "assistant", "user", "result", "stream_event"})


def tool_name(name: Any, args: Any = None) -> str:
    """The name a Claude tool is audited by (`CLAUDE_TOOLS`); the text editor tool by its `command`.

    >>> tool_name("Bash"), tool_name("MultiEdit"), tool_name("TodoWrite"), tool_name("my_tool")
    ('bash', 'edit_file', 'plan', 'my_tool')
    >>> tool_name("str_replace_based_edit_tool", {"command": "view", "path": "a.py"})
    'read_file'
    """
    text = str(name or "unknown_tool")
    if text.startswith("str_replace") and isinstance(args, dict):
        return "read_file" if args.get("command") == "view" else "edit_file"
    return CLAUDE_TOOLS.get(text.lower(), text)


def is_managed_event(v: Any) -> bool:
    """A Managed Agents session event: a `type` of the form `user.message`, `agent.tool_use`, ...

    >>> is_managed_event({"id": "sevt_1", "type": "agent.tool_use", "name": "bash"}), is_managed_event({"type": "x"})
    (True, False)
    """
    return isinstance(v, dict) and isinstance(v.get("type"), str) and bool(_MANAGED.match(v["type"]))


def is_sdk_message(v: Any) -> bool:
    """A Claude Agent SDK message as its stream writes it: `type` system/assistant/user/result with a snake-case
    `session_id` (newer streams add a `uuid`); Claude Code's own transcripts say `sessionId`: not this reader's.

    >>> is_sdk_message({"type": "system", "subtype": "init", "session_id": "s", "uuid": "u"})
    True
    >>> is_sdk_message({"type": "user", "sessionId": "s", "uuid": "u", "message": {}})
    False
    """
    return (isinstance(v, dict) and v.get("type") in _SDK_TYPES and "session_id" in v
            and not any(k in v for k in ("sessionId", "parentUuid", "leafUuid")))


def sniff_agent_sdk(v: Any) -> bool:
    """Whether a file's first record says agent-sdk: an SDK message, a session event, or a page of events."""
    if isinstance(v, dict) and isinstance(v.get("data"), list) and v["data"]:
        v = v["data"][0]
    return is_sdk_message(v) or is_managed_event(v)


def _blocks_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _result_text(content: Any) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list) and all(isinstance(b, dict) and b.get("type") in ("text", "image", "document")
                                         for b in content):
        return _blocks_text(content)
    return json.dumps(content, ensure_ascii=False, default=str)


class _Session:
    """One session's messages as they are read, in the chat shape `session_items` takes."""

    def __init__(self, sid: str, line: int | None) -> None:
        self.sid, self.line = sid, line
        self.messages: list[dict] = []
        self.meta: dict[str, Any] = {}
        self.tools: list[dict] | None = None

    def say(self, text: str) -> None:
        if text.strip():
            self.messages.append({"role": "assistant", "content": text})

    def call(self, cid: Any, name: Any, args: Any) -> None:
        call = {"id": cid, "function": {"name": tool_name(name, args), "arguments": args if args is not None else {}}}
        last = self.messages[-1] if self.messages else None
        if last is not None and last.get("role") == "assistant":  # the text before a call narrates it
            last.setdefault("tool_calls", []).append(call)
        else:
            self.messages.append({"role": "assistant", "content": None, "tool_calls": [call]})

    def result(self, cid: Any, content: Any, is_error: Any) -> None:
        self.messages.append({"role": "tool", "tool_call_id": cid, "content": _result_text(content),
                              "is_error": bool(is_error)})

    def prompt(self, text: str, line: int | None) -> None:
        self.messages.append({"role": "user", "content": text, "_line": line})


def _sdk(s: _Session, v: dict, line: int | None) -> None:
    kind = v.get("type")
    if v.get("parent_tool_use_id"):  # a subagent's own turn: its work is reported back as the Task result
        return
    if kind == "system" and v.get("subtype") == "init":
        for k in ("model", "cwd", "permissionMode"):
            if isinstance(v.get(k), str):
                s.meta[k] = v[k]
        if isinstance(v.get("tools"), list):
            s.tools = [{"name": tool_name(t)} for t in v["tools"] if isinstance(t, str)]
        return
    message = v["message"] if isinstance(v.get("message"), dict) else {}
    content = message.get("content")
    if kind == "assistant":
        for b in content if isinstance(content, list) else [{"type": "text", "text": _blocks_text(content)}]:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "text":
                s.say(str(b.get("text", "")))
            elif str(b.get("type", "")).endswith("tool_use"):
                s.call(b.get("id"), b.get("name"), b.get("input"))
    elif kind == "user":
        if isinstance(content, list):
            for b in content:
                if isinstance(b, dict) and str(b.get("type", "")).endswith("tool_result"):
                    s.result(b.get("tool_use_id"), b.get("content"), b.get("is_error"))
            text = _blocks_text([b for b in content if isinstance(b, dict) and b.get("type") == "text"])
            if text.strip():
                s.prompt(text, line)
        elif isinstance(content, str):
            s.prompt(content, line)
    elif kind == "result":
        for k in ("subtype", "num_turns", "is_error"):
            if v.get(k) is not None:
                s.meta[f"result_{k}"] = v[k]
        final = v.get("result")
        said = [m for m in s.messages if m.get("role") == "assistant" and (m.get("content") or "").strip()]
        if isinstance(final, str) and final.strip() and (not said or said[-1]["content"].strip() != final.strip()):
            s.say(final)  # the SDK's final text, when the stream did not carry it as a message


def _managed(s: _Session, v: dict, line: int | None) -> None:
    kind = v["type"]
    if v.get("session_thread_id"):  # cross-posted from a sub-agent's thread
        return
    if kind == "user.message":
        s.prompt(_blocks_text(v.get("content")), line)
    elif kind == "agent.message":
        s.say(_blocks_text(v.get("content")))
    elif kind in _CALLS:
        s.call(v.get("id"), v.get("name") or v.get("tool_name"), v.get("input"))
    elif kind in _RESULTS:
        s.result(v.get(_RESULTS[kind]) or v.get("tool_use_id"), v.get("content"), v.get("is_error"))
    elif kind == "session.error":
        err = v.get("error")
        text = err.get("message") if isinstance(err, dict) else err
        s.messages.append({"role": "tool", "content": f"Error: session error: {text or json.dumps(v)[:300]}",
                           "is_error": True})


def _records(path: Path) -> Iterator[tuple[int | None, Any, str | None]]:
    """(line, record, error) of a file; a page of events (`{"data": [...]}`) gives its events."""
    for jv in iter_json_values(path):
        if jv.error:
            yield jv.line, None, jv.error
        elif isinstance(jv.value, dict) and isinstance(jv.value.get("data"), list):
            for ev in jv.value["data"]:
                yield jv.line, ev, None
        else:
            yield jv.line, jv.value, None


def read_agent_sdk(path: Path, options: ReadOptions | None = None) -> Iterator[TraceItem]:
    """One run per prompt of each Claude Agent SDK session or Managed Agents session event log in the file."""
    file, mode = str(path), (options or ReadOptions()).session_runs
    sessions: dict[str, _Session] = {}
    for line, v, error in _records(Path(path)):
        if error is not None:
            yield TraceItem(file=file, line=line, run_id=None, error=record_error(f"agent-sdk: {error}", file=file,
                                                                                  line=line))
            continue
        if not (is_sdk_message(v) or is_managed_event(v)):
            shown = v.get("type") if isinstance(v, dict) else type(v).__name__
            err = record_error(f"agent-sdk: not a Claude Agent SDK message or a Managed Agents session event "
                               f"(type {shown!r})", file=file, line=line)
            yield TraceItem(file=file, line=line, run_id=None, error=err)
            continue
        sid = str(v.get("session_id") or Path(path).name.split(".")[0])
        s = sessions.get(sid)
        if s is None:
            s = sessions[sid] = _Session(sid, line)
        (_sdk if is_sdk_message(v) else _managed)(s, v, line)
    for s in sessions.values():
        meta = {"source": "agent-sdk", **s.meta}
        yield from session_items(s.messages, session_id=s.sid, file=file, what="agent-sdk", mode=mode, line=s.line,
                                 meta=meta, tools=s.tools)


read_agent_sdk.takes_options = True  # type: ignore[attr-defined]
read_agent_sdk.sniffs = ("a record with type system/assistant/user/result and session_id (an Agent SDK stream), "  # type: ignore[attr-defined]
                         "or a session event typed user.* / agent.* / session.* / span.* (a list, JSONL, or a "
                         "page {\"data\": [...]})")
trace_readers.register("agent-sdk")(read_agent_sdk)
