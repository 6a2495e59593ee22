"""Reader for Claude Code project transcripts (`~/.claude/projects/<project>/<session>.jsonl`), a run per prompt.

Each line is one event: `user` and `assistant` lines carry an Anthropic Messages message under
`message` (`text`, `tool_use`, `tool_result`, `thinking` blocks); `summary`, `system`,
`file-history-snapshot`, `queue-operation` and other bookkeeping lines are not read. An
assistant message streamed over several lines (one `message.id`) is joined back into one turn.
Tool results arrive in `user` lines: they are observations of the same prompt, never a prompt
(`sessions.py` splits the session). `isMeta` lines (skill text, caveats) are not prompts; a
slash command is one only when the agent then acts on it (`/clear`, `/model` are not). The
summary Claude Code writes after compacting the context (`isCompactSummary`) is the agent's own
account of the work so far: dropped, never evidence. Sidechain lines (`isSidechain`, a `Task`
subagent's work) in a session that has a main thread are part of the prompt that started them:
their tool calls and results are steps; their prompt and words are left out (the subagent's
report reaches the main thread as the Task result); so are the lines of a subagent's own file beside the
session (`<session>/subagents/agent-*.jsonl`, Claude Code 2.x), matched to the Task call by the prompt
it was given. A file that holds only sidechain lines
(a subagent's own `agent-*.jsonl`) is read as that subagent's session, but for the compaction agent's
(`agent-acompact-*`: the model summarising the session, no task of the user's), which is an error
saying so. `thinking` is never read.

The exported role/content form (one `{"role", "content"}` message a line, or a JSON list of them,
with Claude Code's tools) is read the same way, a run per prompt.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

from referee.audit.ingest.readers import DEFAULT_OPTIONS, ReadOptions, trace_readers
from referee.audit.ingest.readers.sessions import session_items
from referee.audit.trace import SHAPE_ERRORS, TraceItem, record_error, shape_error
from referee.core.jsonio.values import iter_json_values

EVENT_TYPES = frozenset({"user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation",
                         "progress", "attachment", "custom-title", "tag"})
# Claude Code's own tools, described by what they do (first word a verb the extractor knows): the rules read
# `Grep`, `Glob`, `LS` as reads and `Task` as a delegation, which their names alone do not say
TOOL_DEFS: dict[str, str] = {
    "Bash": "Run a shell command and return its output and exit code.",
    "BashOutput": "Read the output of a background shell command.",
    "KillShell": "Stop a background shell command.",
    "Read": "Read a file from the local filesystem.",
    "Write": "Write a file to the local filesystem.",
    "Edit": "Edit a file: replace an exact string in it.",
    "MultiEdit": "Edit a file: make several replacements in it.",
    "NotebookEdit": "Edit a cell of a Jupyter notebook.",
    "Grep": "Search file contents with a regular expression.",
    "Glob": "Find files whose names match a glob pattern.",
    "LS": "List the files in a directory.",
    "WebFetch": "Fetch a URL and read its content.",
    "WebSearch": "Search the web.",
    "Task": "Delegate a piece of work to a subagent, which answers with its own report.",
    "TodoWrite": "The agent's own to-do list (its words, not an action).",
}
CLAUDE_TOOLS = frozenset(TOOL_DEFS) - {"BashOutput", "KillShell", "WebFetch", "WebSearch"}
# the name without its outer blanks; a blank run joins the name only before a non-blank (possessive: one pass, where
# `\s*([^<]*?)\s*` tried each split of a blank run, cubic)
_COMMAND = re.compile(r"<command-name>\s*+((?:[^<\s]++|\s++(?=[^<\s]))*+)\s*+</command-name>", re.I)
# the first opening only (atomic): a closing after a later opening is after the first one too (linear)
_ARGS = re.compile(r"\A(?>.*?<command-args>)(.*?)</command-args>", re.I | re.S)


def is_claude_event(v: Any) -> bool:
    """A Claude Code transcript line: a known event `type` with the transcript's own fields (`sessionId`,
    `parentUuid`, `leafUuid`, `messageId`), not a chat message or an SDK stream event (`session_id`).

    >>> is_claude_event({"type": "user", "sessionId": "s", "message": {"role": "user", "content": "hi"}})
    True
    >>> is_claude_event({"type": "user", "session_id": "s", "message": {}}), is_claude_event({"role": "user"})
    (False, False)
    """
    return isinstance(v, dict) and isinstance(v.get("type"), str) and v["type"] in EVENT_TYPES and any(
        k in v for k in ("sessionId", "parentUuid", "leafUuid", "messageId"))


def is_claude_export(messages: list[Any]) -> bool:
    """Messages in the role/content form whose tool calls are Claude Code's own tools (two or more of them)."""
    names = {b.get("name") for m in messages if isinstance(m, dict) and isinstance(m.get("content"), list)
             for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_use"}
    return len(names & CLAUDE_TOOLS) >= 2


def _blocks(content: Any) -> list:
    return content if isinstance(content, list) else [{"type": "text", "text": content}] if isinstance(
        content, str) else []


def _command_prompt(text: str) -> str:
    """A slash command line as the user typed it: `/name args`."""
    name = _COMMAND.search(text)
    args = _ARGS.search(text)
    return " ".join(x for x in ((name.group(1) if name else ""), (args.group(1).strip() if args else "")) if x)


def _convert(events: list[tuple[int | None, dict]]) -> list[dict]:
    """The session's lines as messages for `sessions.py`: tool results as their own `user` blocks (the chat
    reader turns them into `tool` messages), prompts marked, sidechain words and compaction summaries left out."""
    main = any(not e.get("isSidechain") for _, e in events)
    out: list[dict] = []
    last_id: str | None = None
    for line, e in events:
        kind = e.get("type")
        msg = e.get("message")
        if kind not in ("user", "assistant") or not isinstance(msg, dict):
            continue  # hook progress, system notes: an assistant message streamed around them is still one turn
        side = bool(e.get("isSidechain")) and main
        blocks = _blocks(msg.get("content"))
        if kind == "assistant":
            if side:  # a subagent's calls are steps; its words are not the main agent's report
                blocks = [b for b in blocks if isinstance(b, dict) and b.get("type") != "text"]
                if not blocks:
                    continue
            mid = msg.get("id")
            if mid is not None and mid == last_id and out and out[-1]["role"] == "assistant":
                out[-1]["content"].extend(blocks)  # one message streamed over several lines
            else:
                out.append({"role": "assistant", "content": list(blocks), "_line": line})
            last_id = mid
            continue
        last_id = None
        if e.get("isCompactSummary") or e.get("isVisibleInTranscriptOnly"):
            continue  # the agent's own summary of the work so far: never evidence
        results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        if results:
            out.append({"role": "user", "content": results, "_line": line, "_prompt": False})
        text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
        if not text.strip() or side:
            continue
        prompt = None  # decided by its text
        if e.get("isMeta"):
            prompt = False
            if out and out[-1].get("_command"):  # a slash command's expanded prompt belongs to the command
                out[-1]["content"] += "\n\n" + text
                continue
        elif _COMMAND.search(text):
            out.append({"role": "user", "content": _command_prompt(text), "_line": line, "_prompt": False,
                        "_command": True})
            continue
        out.append({"role": "user", "content": text, "_line": line, **({} if prompt is None else {"_prompt": prompt})})
    # a slash command is a prompt when the agent acted on it before the next user text
    for i, m in enumerate(out):
        if m.pop("_command", False):
            nxt = next((x for x in out[i + 1:] if x["role"] == "assistant" or (
                x["role"] == "user" and x.get("_prompt") is not False)), None)
            m["_prompt"] = nxt is not None and nxt["role"] == "assistant"
    return out


def _tools_used(messages: list[dict]) -> list[dict] | None:
    used = {str(b.get("name")) for m in messages if m["role"] == "assistant" for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_use"}
    defs = [{"name": n, "description": TOOL_DEFS[n]} for n in sorted(used & set(TOOL_DEFS))]
    return defs or None


def _prompt_of(e: dict) -> str:
    """The text of a user line (its string content, or its text blocks)."""
    msg = e.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    return "".join(b.get("text", "") for b in _blocks(content) if isinstance(b, dict)
                   and isinstance(b.get("text"), str)).strip()


def _subagent_files(path: Path) -> dict[str, list[tuple[int | None, dict]]]:
    """The subagents' own transcripts beside a session (`<session>/subagents/agent-*.jsonl`, Claude Code 2.x), by
    the prompt each was given: their work is part of the prompt whose Task call started them. The compaction
    agent's file is not a subagent's work. A line that does not parse is left out here (read alone, the file says
    so)."""
    folder = path.parent / path.stem / "subagents"
    found: dict[str, list[tuple[int | None, dict]]] = {}
    if path.suffix != ".jsonl" or not folder.is_dir():
        return found
    for f in sorted(folder.glob("agent-*.jsonl")):
        if f.name.startswith("agent-acompact") or not f.is_file():
            continue
        lines = [(jv.line, jv.value) for jv in iter_json_values(f) if jv.error is None and is_claude_event(jv.value)]
        first = next((_prompt_of(e) for _, e in lines if e.get("type") == "user" and _prompt_of(e)), "")
        if first:
            found.setdefault(first, [(line, {**e, "isSidechain": True}) for line, e in lines])
    return found


def _with_subagents(events: list[tuple[int | None, dict]],
                    agents: dict[str, list[tuple[int | None, dict]]]) -> list[tuple[int | None, dict]]:
    """The session's lines with each subagent's lines after the Task call that gave it its prompt."""
    if not agents:
        return events
    out: list[tuple[int | None, dict]] = []
    for line, e in events:
        out.append((line, e))
        msg = e.get("message") if e.get("type") == "assistant" else None
        for b in _blocks(msg.get("content")) if isinstance(msg, dict) else ():
            prompt = b.get("input", {}).get("prompt") if isinstance(b, dict) and b.get("type") == "tool_use" and \
                isinstance(b.get("input"), dict) else None
            if isinstance(prompt, str) and prompt.strip() in agents:
                out.extend(agents.pop(prompt.strip()))
    return out


def _from_export(records: list[tuple[int | None, dict]]) -> list[tuple[int | None, dict]]:
    """Role/content lines as transcript events."""
    return [(line, {"type": r.get("role"), "message": r}) for line, r in records
            if r.get("role") in ("user", "assistant")]


def read_claude_code(path: Path, options: ReadOptions = DEFAULT_OPTIONS) -> Iterator[TraceItem]:
    """Yield one run per user prompt of a Claude Code session (`<session>#<n>`), or one per session."""
    file = str(path)
    events: list[tuple[int | None, dict]] = []
    export: list[tuple[int | None, dict]] = []
    for jv in iter_json_values(path):
        if jv.error is not None:
            yield TraceItem(file=file, line=jv.line, run_id=None, error=record_error(jv.error, file=file, line=jv.line))
            continue
        values = jv.value if isinstance(jv.value, list) else [jv.value]
        for v in values:
            if is_claude_event(v):
                events.append((jv.line, v))
            elif isinstance(v, dict) and isinstance(v.get("role"), str):
                export.append((jv.line, v))
    if not events:
        events = _from_export(export)
    elif any(not e.get("isSidechain") for _, e in events):
        events = _with_subagents(events, _subagent_files(Path(file)))
    session = Path(file).stem if Path(file).suffix == ".jsonl" else Path(file).name
    sid = next((e["sessionId"] for _, e in events if isinstance(e.get("sessionId"), str)), None)
    if sid and not re.fullmatch(r"agent-[\w-]+", session):
        session = sid
    meta: dict[str, Any] = {"agent": "claude-code", "source": file}
    for _, e in events:
        for k in ("cwd", "gitBranch", "version"):
            if k in e and k not in meta:
                meta[k] = e[k]
    turns = [e for _, e in events if e.get("type") in ("user", "assistant")]
    if turns and all(str(e.get("agentId", "")).startswith("acompact") for e in turns):
        err = record_error(f"claude-code: {Path(file).name} is Claude Code's compaction of session {sid or '?'}: the "
                           "agent summarising its own work, no task of the user's to audit", file=file,
                           line=events[0][0], run_id=session)
        err.fix = "audit the session it summarises (<session-id>.jsonl); leave this file out with --include, or pass " \
                  "--on-error skip"
        yield TraceItem(file=file, line=events[0][0], run_id=session, error=err)
        return
    try:
        messages = _convert(events)
    except SHAPE_ERRORS as exc:
        yield TraceItem(file=file, line=None, run_id=None, error=shape_error(exc, "claude-code", file=file, line=None))
        return
    first = events[0][0] if events else None
    yield from session_items(messages, session_id=session, file=file, what="claude-code", mode=options.session_runs,
                             line=first, meta=meta, tools=_tools_used(messages))


read_claude_code.takes_options = True  # type: ignore[attr-defined]
read_claude_code.sniffs = ("a line with type user/assistant/summary/system/... and Claude Code's sessionId or "  # type: ignore[attr-defined]
                           "parentUuid; role/content messages whose tool_use blocks are Claude Code's tools "
                           "(Bash, Edit, Read, Write, ...)")
trace_readers.register("claude-code")(read_claude_code)
