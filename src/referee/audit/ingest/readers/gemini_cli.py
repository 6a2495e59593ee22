"""Reader for Gemini CLI sessions: `--output-format stream-json` output and saved chats, a run per prompt.

stream-json (`gemini -p "..." --output-format stream-json > run.jsonl`) writes one event a line:
`init` (session_id, model), `message` (role user or assistant; the assistant's text comes in
`delta` chunks, joined here), `tool_use` (tool_name, tool_id, parameters), `tool_result` (tool_id,
status success|error, output, error), `error` (a warning of the CLI's) and `result` (status and
stats). Each `init` starts a session, so runs appended to one file stay apart.

Saved chats (`~/.gemini/tmp/<project_hash>/chats/session-*.json`) are one object
`{"sessionId", "messages": [{"type": "user" | "gemini" | "info" | "error" | "warning", "content",
"toolCalls": [{"id", "name", "args", "result", "status", "error"?}]}]}` (JSONL with a line per
message in newer versions); a checkpoint (`/chat save`, `checkpoints/checkpoint-<tag>.json`) is the
model's history, `[{"role": "user" | "model", "parts": [{"text"} | {"functionCall"} |
{"functionResponse"}]}]`. `thoughts` are the agent's own words and are never read; `info`,
`error` and `warning` lines are the CLI's, not the user's, and are not prompts.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

from referee.audit.ingest.readers import DEFAULT_OPTIONS, ReadOptions, trace_readers
from referee.audit.ingest.readers.sessions import session_items
from referee.audit.trace import SHAPE_ERRORS, TraceItem, record_error, shape_error
from referee.core.jsonio.values import iter_json_values

STREAM_TYPES = frozenset({"init", "message", "tool_use", "tool_result", "error", "result"})
TOOL_DEFS = {
    "run_shell_command": "Run a shell command and return its output and exit code.",
    "replace": "Edit a file: replace text in it.",
    "write_file": "Write a file to the local filesystem.",
    "read_file": "Read a file from the local filesystem.",
    "read_many_files": "Read several files.",
    "list_directory": "List the files in a directory.",
    "glob": "Find files whose names match a glob pattern.",
    "search_file_content": "Search file contents with a regular expression.",
    "web_fetch": "Fetch a URL and read its content.",
    "google_web_search": "Search the web.",
    "save_memory": "Save a fact to the agent's memory file.",
}
# the first user turn of a checkpoint's history: the CLI's own description of the workspace
_SETUP = "This is the Gemini CLI. We are setting up the context"


def is_stream_event(v: Any) -> bool:
    """A Gemini CLI stream-json event: `init` with session_id, or message/tool_use/tool_result/result in its shape.

    >>> is_stream_event({"type": "init", "session_id": "s", "model": "gemini-2.5-pro"})
    True
    >>> is_stream_event({"type": "message", "role": "user", "content": "hi"}), is_stream_event({"role": "user"})
    (True, False)
    """
    if not isinstance(v, dict) or not isinstance(v.get("type"), str) or v["type"] not in STREAM_TYPES:
        return False
    t = v["type"]
    return (t == "init" and "session_id" in v) or (t == "message" and isinstance(v.get("role"), str)) or \
        (t == "tool_use" and "tool_name" in v) or (t == "tool_result" and "tool_id" in v) or \
        (t == "result" and "stats" in v) or (t == "error" and "severity" in v)


def is_saved_chat(v: Any) -> bool:
    """A saved chat: `{"sessionId", "messages": [{"type": "user" | "gemini", ...}]}`, one such message alone (a
    JSONL chat), or a turn of a checkpoint (`{"role": "user" | "model", "parts": [...]}`).

    >>> is_saved_chat({"sessionId": "s", "messages": []}), is_saved_chat({"role": "model", "parts": []})
    (True, True)
    >>> is_saved_chat({"messages": []}), is_saved_chat({"role": "user", "content": "hi"})
    (False, False)
    """
    if isinstance(v, dict) and "sessionId" in v and (isinstance(v.get("messages"), list) or (
            "startTime" in v and "type" not in v)):
        return True  # the whole chat, or a JSONL chat's first line (its header)
    if isinstance(v, dict) and isinstance(v.get("type"), str) and v["type"] in ("user", "gemini") and \
            "content" in v and "id" in v and "timestamp" in v and "message" not in v:
        return True
    return is_history_turn(v)


def is_history_turn(v: Any) -> bool:
    """One turn of the model's history as a checkpoint stores it: `{"role": "user" | "model", "parts": [...]}`."""
    return isinstance(v, dict) and isinstance(v.get("role"), str) and v["role"] in ("user", "model") and \
        isinstance(v.get("parts"), list)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # a PartListUnion
        return "".join(p["text"] if isinstance(p, dict) and isinstance(p.get("text"), str) else
                       p if isinstance(p, str) else "" for p in content)
    return ""


def _output_text(output: Any) -> str:
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False, default=str)


_EXIT = re.compile(r"^Exit Code: (-?\d+)\s*$", re.M)


def _shell_failed(text: str) -> bool:
    """run_shell_command reports `status: success` for a command that ran and exited non-zero: its output's
    `Exit Code: N` line says whether the command itself failed."""
    m = _EXIT.search(text)
    return m is not None and m.group(1) != "0"


def _stream_sessions(events: list[tuple[int | None, dict]]) -> list[tuple[str | None, int | None, list[dict]]]:
    """stream-json events as sessions of chat messages (one per `init`)."""
    sessions: list[tuple[str | None, int | None, list[dict]]] = []
    msgs: list[dict] = []
    for line, e in events:
        t = e.get("type")
        if t == "init" or not sessions:
            msgs = []
            sessions.append((e.get("session_id") if t == "init" else None, line, msgs))
            if t == "init":
                continue
        if t == "message":
            role = "user" if e.get("role") == "user" else "assistant"
            text = _text(e.get("content"))
            if role == "assistant" and e.get("delta") and msgs and msgs[-1]["role"] == "assistant" and \
                    not msgs[-1].get("tool_calls"):
                msgs[-1]["content"] += text
            else:
                msgs.append({"role": role, "content": text, "_line": line})
        elif t == "tool_use":
            call = {"id": e.get("tool_id"), "function": {"name": str(e.get("tool_name") or "unknown_tool"),
                                                         "arguments": e.get("parameters") or {}}}
            msgs.append({"role": "assistant", "content": None, "tool_calls": [call], "_line": line})
        elif t == "tool_result":
            err = e.get("error")
            text = _output_text(e.get("output")) if e.get("output") is not None else ""
            if isinstance(err, dict) and err.get("message"):
                text = (text + "\n" if text else "") + f"Error: {err['message']}"
            msgs.append({"role": "tool", "tool_call_id": e.get("tool_id"), "content": text,
                         "is_error": e.get("status") == "error" or bool(err) or _shell_failed(text)})
    return sessions


def _call_result(call: dict) -> tuple[str, bool]:
    """A saved chat's tool call result: its functionResponse output (or the error), and whether it failed."""
    parts = []
    for r in call.get("result") or []:
        resp = r.get("functionResponse", {}).get("response") if isinstance(r, dict) else None
        if isinstance(resp, dict):
            parts.append(_output_text(resp.get("output", resp.get("error", resp))))
    text = "\n".join(parts)
    if call.get("error") and str(call["error"]) not in text:
        text = (text + "\n" if text else "") + f"Error: {call['error']}"
    if not text and isinstance(call.get("resultDisplay"), str):
        text = call["resultDisplay"]
    return text, call.get("status") in ("error", "cancelled") or bool(call.get("error")) or _shell_failed(text)


def _chat_messages(records: list[tuple[int | None, dict]]) -> list[dict]:
    out: list[dict] = []
    for line, m in records:
        kind = m.get("type")
        if kind == "user":
            text = _text(m.get("content"))
            if text.strip():  # a user turn of function responses only carries no words of the user's
                out.append({"role": "user", "content": text, "_line": line})
        elif kind == "gemini":
            calls = [c for c in m.get("toolCalls") or [] if isinstance(c, dict)]
            text = _text(m.get("content"))
            out.append({"role": "assistant", "content": text or None, "_line": line, "tool_calls": [
                {"id": c.get("id"), "function": {"name": str(c.get("name") or "unknown_tool"),
                                                 "arguments": c.get("args") or {}}} for c in calls]})
            for c in calls:
                text, failed = _call_result(c)
                out.append({"role": "tool", "tool_call_id": c.get("id"), "content": text, "is_error": failed})
    return out


def _checkpoint_messages(history: list[dict]) -> list[dict]:
    out: list[dict] = []
    for n, m in enumerate(history):
        parts = [p for p in m.get("parts") or [] if isinstance(p, dict) and not p.get("thought")]
        if m.get("role") == "model":
            calls = [p["functionCall"] for p in parts if isinstance(p.get("functionCall"), dict)]
            text = "".join(p.get("text", "") for p in parts if isinstance(p.get("text"), str))
            out.append({"role": "assistant", "content": text or None, "tool_calls": [
                {"id": c.get("id") or f"call-{n}-{i}", "function": {"name": str(c.get("name") or "unknown_tool"),
                                                                    "arguments": c.get("args") or {}}}
                for i, c in enumerate(calls)]})
            continue
        responses = [p["functionResponse"] for p in parts if isinstance(p.get("functionResponse"), dict)]
        for r in responses:
            resp = r.get("response") if isinstance(r.get("response"), dict) else {}
            failed = "error" in resp
            out.append({"role": "tool", "content": _output_text(resp.get("output", resp.get("error", resp))),
                        "is_error": failed, "name": r.get("name")})
        text = "".join(p.get("text", "") for p in parts if isinstance(p.get("text"), str))
        if text.strip() and not responses:  # the CLI opens the history with its own setup turn: not a prompt
            out.append({"role": "user", "content": text, **({"_prompt": False} if text.startswith(_SETUP) else {})})
    return out


def _defs(messages: list[dict]) -> list[dict] | None:
    used = {c["function"]["name"] for m in messages for c in m.get("tool_calls") or ()}
    return [{"name": n, "description": d} for n, d in sorted(TOOL_DEFS.items()) if n in used] or None


def read_gemini_cli(path: Path, options: ReadOptions = DEFAULT_OPTIONS) -> Iterator[TraceItem]:
    """Yield one run per user prompt of a Gemini CLI session (`<session>#<n>`), or one per session."""
    file = str(path)
    stream: list[tuple[int | None, dict]] = []
    chat: list[tuple[int | None, dict]] = []
    sessions: list[tuple[str | None, int | None, list[dict]]] = []
    history: list[dict] = []
    history_line: int | None = None
    saved: list[tuple[Any, int | None, list]] = []  # saved chats as one object: converted after the reading
    for jv in iter_json_values(path):
        if jv.error is not None:
            yield TraceItem(file=file, line=jv.line, run_id=None, error=record_error(jv.error, file=file, line=jv.line))
            continue
        v = jv.value
        if is_stream_event(v):
            stream.append((jv.line, v))
        elif isinstance(v, dict) and isinstance(v.get("messages"), list):
            saved.append((v.get("sessionId"), jv.line, v["messages"]))
        elif is_history_turn(v):  # a checkpoint: a JSON list whose turns come one by one
            history.append(v)
            history_line = jv.line if history_line is None else history_line
        elif isinstance(v, dict) and str(v.get("type")) in ("user", "gemini", "info", "error", "warning") and \
                "content" in v:
            chat.append((jv.line, v))
        elif isinstance(v, dict) and "sessionId" in v:
            sessions.append((v["sessionId"], jv.line, []))  # a JSONL chat's first line: the session's own record
        elif isinstance(v, dict) and isinstance(v.get("$set"), dict):
            # a JSONL chat's patch: it bumps lastUpdated, or (once) sets the first messages
            patched = v["$set"].get("messages")
            if isinstance(patched, list):
                chat.extend((jv.line, m) for m in patched if isinstance(m, dict))
    try:
        sessions[:0] = [(sid, line, _chat_messages([(line, m) for m in msgs if isinstance(m, dict)]))
                        for sid, line, msgs in saved]
        if chat:
            if sessions and not sessions[-1][2]:
                sid, line, _ = sessions.pop()
                sessions.append((sid, line, _chat_messages(chat)))
            else:
                sessions.append((None, chat[0][0], _chat_messages(chat)))
        if history:
            sessions.append((None, history_line, _checkpoint_messages(history)))
        sessions.extend(_stream_sessions(stream))
    except SHAPE_ERRORS as exc:
        yield TraceItem(file=file, line=None, run_id=None, error=shape_error(exc, "gemini-cli", file=file, line=None))
        return
    stem = Path(file).stem
    for n, (sid, line, messages) in enumerate(sessions):
        session = str(sid) if sid else (stem if len(sessions) == 1 else f"{stem}-{n}")
        meta = {"agent": "gemini-cli", "source": file}
        yield from session_items(messages, session_id=session, file=file, what="gemini-cli",
                                 mode=options.session_runs, line=line, meta=meta, tools=_defs(messages))


read_gemini_cli.takes_options = True  # type: ignore[attr-defined]
read_gemini_cli.sniffs = ("a stream-json line (type init with session_id, message with role, tool_use, tool_result, "  # type: ignore[attr-defined]
                          "result with stats); a saved chat {sessionId, messages: [{type: user|gemini}]}; a "
                          "checkpoint [{role: user|model, parts}]")
trace_readers.register("gemini-cli")(read_gemini_cli)
