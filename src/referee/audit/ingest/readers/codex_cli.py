"""Reader for Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`), a run per prompt.

Each line is `{"timestamp", "type", "payload"}`: `session_meta` (the session id, cwd, the
AGENTS.md instructions: kept as the system text), `response_item` (the model's conversation:
`message`, `function_call` / `function_call_output`, `custom_tool_call` / `custom_tool_call_output`
(apply_patch), `local_shell_call`, `web_search_call`, `reasoning`), `event_msg` (what the UI showed:
`user_message`, `exec_command_end` with the exit code, `patch_apply_end`, token counts), `turn_context`
and `compacted`. Older rollouts write the response items bare, after a first line with the session
`id` and `instructions`; both are read.

Prompts are the user messages the user typed: where the file has `event_msg` `user_message` events,
a user `response_item` is a prompt only when one of them carries its text (the harness's own user
messages, `<environment_context>`, `<user_instructions>`, AGENTS.md, are not); else by its text.
Shell calls (`shell`, `exec_command`, `local_shell_call`) become a shell action with the command as
one string (`bash -lc` unwrapped) and the exit code in the observation (from the output's metadata,
its "Exit code:" line, or the `exec_command_end` event); `apply_patch` is a file edit whose result
fails when the patch did not apply. `reasoning` and `agent_reasoning` are the agent's own words and
are never read; the summary a `compacted` line holds is the agent's too, and is dropped.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

from referee.audit.ingest.readers import DEFAULT_OPTIONS, ReadOptions, trace_readers
from referee.audit.ingest.readers.sessions import session_items
from referee.audit.ingest.readers.shellout import exit_code_in
from referee.audit.trace import SHAPE_ERRORS, TraceItem, record_error, shape_error
from referee.core.jsonio.values import iter_json_values, loads

LINE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
ITEM_TYPES = frozenset({"message", "function_call", "function_call_output", "custom_tool_call",
                        "custom_tool_call_output", "local_shell_call", "reasoning", "web_search_call",
                        "ghost_snapshot"})
SHELL_TOOLS = frozenset({"shell", "container.exec", "exec_command", "local_shell", "shell_command"})
TOOL_DEFS = {"apply_patch": "Edit files: apply a patch that adds, updates or deletes them.",
             "shell": "Run a shell command and return its output and exit code.",
             "exec_command": "Run a shell command and return its output and exit code.",
             "local_shell": "Run a shell command and return its output and exit code.",
             "view_image": "Read an image file from the local filesystem.",
             "web_search": "Search the web."}
# user messages Codex writes itself (the project's AGENTS.md): never a prompt, whatever the version
_HARNESS_USER = ("# AGENTS.md instructions for", "<user_instructions>", "<environment_context>")


def is_rollout_line(v: Any) -> bool:
    """A Codex rollout line: `{"type": "session_meta" | "response_item" | ..., "payload": {...}}`.

    >>> is_rollout_line({"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}}), is_rollout_line({})
    (True, False)
    """
    return isinstance(v, dict) and isinstance(v.get("type"), str) and v["type"] in LINE_TYPES and \
        isinstance(v.get("payload"), dict)


def is_rollout_header(v: Any) -> bool:
    """An older rollout's first line: `{"id", "timestamp", "instructions"}` (its response items follow bare).

    >>> is_rollout_header({"id": "0198", "timestamp": "2025-08-01T10:00:00Z", "instructions": None})
    True
    """
    return isinstance(v, dict) and "type" not in v and "role" not in v and \
        {"id", "timestamp", "instructions"} <= v.keys()


def _legacy_item(v: Any) -> bool:
    return isinstance(v, dict) and isinstance(v.get("type"), str) and v["type"] in ITEM_TYPES and "payload" not in v


def _parts_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _command(args: dict) -> dict:
    """Shell arguments with the command as one string: ["bash", "-lc", "pytest -q"] is "pytest -q"."""
    cmd = args.get("command", args.get("cmd"))
    if isinstance(cmd, list) and all(isinstance(x, str) for x in cmd):
        cmd = cmd[2] if len(cmd) == 3 and cmd[1] in ("-lc", "-c") and cmd[0].rsplit("/", 1)[-1] in (
            "bash", "sh", "zsh") else " ".join(cmd)
    out = {k: v for k, v in args.items() if k not in ("command", "cmd")}
    return {"command": cmd, **out} if cmd is not None else args


def _output(raw: Any, exit_code: int | None) -> tuple[str, bool]:
    """A call's output as text and whether it failed: Codex writes a JSON string with `output` and
    `metadata.exit_code`, plain text with an "Exit code: N" line, or `{"content", "success"}`."""
    failed = False
    text = raw if isinstance(raw, str) else ""
    if isinstance(raw, dict):
        text = _parts_text(raw.get("content")) or json.dumps(raw, ensure_ascii=False)
        failed = raw.get("success") is False
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            data = loads(stripped)
        except ValueError:
            data = None
        if isinstance(data, dict) and "output" in data:
            meta = data.get("metadata")
            rc = meta.get("exit_code") if isinstance(meta, dict) else None
            if exit_code is None and isinstance(rc, int):
                exit_code = rc
            text = str(data["output"])
    said = exit_code_in(text[:500])  # an "Exit code: N" / "Process exited with code N" line of the output's own
    exit_code = said if exit_code is None else exit_code
    if exit_code is not None:
        failed = failed or exit_code != 0
        if said is None:
            text = f"Exit code: {exit_code}\n{text}"
    return text, failed


# `apply_patch <<'EOF'\n*** Begin Patch ...\nEOF` as a shell script (after an optional `cd DIR &&`)
_PATCH_HEREDOC = re.compile(r"\A\s*(?:cd\s+\S+\s*&&\s*)?(?:apply_patch|applypatch)\s*<<-?\s*(['\"]?)(\w+)\1[^\n]*\n"
                            r"(.*?\*\*\* End Patch[^\n]*)\n\2\s*\Z", re.S)


def _shell_patch(args: dict) -> str | None:
    """The patch of a shell call that runs Codex's apply_patch (`["apply_patch", patch]`, or a heredoc under
    `bash -lc`): Codex applies it as the apply_patch tool, so it is a file edit, not a command.

    >>> _shell_patch({"command": ["apply_patch", "*** Begin Patch\\n*** End Patch"]})
    '*** Begin Patch\\n*** End Patch'
    >>> _shell_patch({"command": ["bash", "-lc", "apply_patch <<'EOF'\\n*** Begin Patch\\n*** End Patch\\nEOF"]})
    '*** Begin Patch\\n*** End Patch'
    >>> _shell_patch({"command": ["bash", "-lc", "apply_patch --help"]}) is None
    True
    """
    cmd = args.get("command", args.get("cmd"))
    if isinstance(cmd, list) and len(cmd) == 2 and cmd[0] in ("apply_patch", "applypatch") and isinstance(cmd[1], str):
        return cmd[1] if "*** Begin Patch" in cmd[1] else None
    script = _command(args).get("command")
    if isinstance(script, str) and "*** Begin Patch" in script and (m := _PATCH_HEREDOC.match(script)):
        return m.group(3)
    return None


def _call(name: str, args: dict, call_id: Any, line: int | None) -> dict:
    if name in SHELL_TOOLS:
        patch = _shell_patch(args)
        name, args = ("apply_patch", {"input": patch}) if patch is not None else (name, _command(args))
    return {"role": "assistant", "content": None, "_line": line,
            "tool_calls": [{"id": call_id, "function": {"name": name, "arguments": args}}]}


def _messages(lines: list[tuple[int | None, dict]]) -> tuple[list[dict], dict]:
    """The rollout as chat messages for sessions.py, and the session's meta."""
    meta: dict[str, Any] = {"agent": "codex-cli"}
    typed = Counter(p["message"].strip() for _, t, p in _items(lines)
                    if t == "event_msg" and p.get("type") == "user_message" and isinstance(p.get("message"), str))
    if not any(typed[_parts_text(p.get("content")).strip()] for _, t, p in _items(lines)
               if t == "response_item" and p.get("type") == "message" and p.get("role") == "user"):
        typed = Counter()  # the typed texts match no user item (another version's wording): judge by the text
    exit_codes: dict[Any, int] = {}
    patch_ok: dict[Any, bool] = {}
    for _, t, p in _items(lines):
        if t == "event_msg" and p.get("type") == "exec_command_end" and isinstance(p.get("exit_code"), int):
            exit_codes[p.get("call_id")] = p["exit_code"]
        if t == "event_msg" and p.get("type") == "patch_apply_end" and isinstance(p.get("success"), bool):
            patch_ok[p.get("call_id")] = p["success"]
    has_agent_items = any(t == "response_item" and p.get("type") == "message" and p.get("role") == "assistant"
                          for _, t, p in _items(lines))
    out: list[dict] = []
    for line, t, p in _items(lines):
        kind = p.get("type")
        if t == "session_meta":
            for k in ("id", "cwd", "cli_version", "originator", "model_provider"):
                if isinstance(p.get(k), (str, int)):
                    meta.setdefault("session_id" if k == "id" else k, p[k])
            if isinstance(p.get("instructions"), str) and p["instructions"].strip():
                out.append({"role": "system", "content": p["instructions"]})
            continue
        if t == "turn_context":
            if isinstance(p.get("model"), str):
                meta.setdefault("model", p["model"])
            continue
        if t == "event_msg":
            if kind == "agent_message" and not has_agent_items and isinstance(p.get("message"), str):
                out.append({"role": "assistant", "content": p["message"], "_line": line})
            continue
        if t != "response_item":
            continue  # compacted: the agent's own summary, never evidence
        if kind == "message":
            role, text = p.get("role"), _parts_text(p.get("content"))
            if role == "user":
                prompt = False if text.lstrip().startswith(_HARNESS_USER) else None
                if typed:
                    prompt = typed[text.strip()] > 0
                    if prompt:
                        typed[text.strip()] -= 1
                out.append({"role": "user", "content": text, "_line": line,
                            **({} if prompt is None else {"_prompt": prompt})})
            elif role in ("developer", "system"):
                out.append({"role": "system", "content": text})
            elif role == "assistant" and text.strip():
                out.append({"role": "assistant", "content": text, "_line": line})
        elif kind == "function_call":
            args = p.get("arguments")
            try:
                parsed = loads(args) if isinstance(args, str) and args.strip().startswith("{") else args
            except ValueError:  # arguments cut short: kept as written
                parsed = None
            out.append(_call(str(p.get("name") or "unknown_tool"), parsed if isinstance(parsed, dict) else
                             {"_raw": args}, p.get("call_id"), line))
        elif kind == "custom_tool_call":
            name = str(p.get("name") or "unknown_tool")
            out.append(_call(name, {"input": p.get("input")}, p.get("call_id"), line))
        elif kind == "local_shell_call":
            action = p["action"] if isinstance(p.get("action"), dict) else {}
            args = {k: v for k, v in action.items() if k != "type"}
            out.append(_call("local_shell", args, p.get("call_id") or p.get("id"), line))
        elif kind == "web_search_call":
            action = p["action"] if isinstance(p.get("action"), dict) else {}
            out.append(_call("web_search", {k: v for k, v in action.items() if k != "type"}, p.get("id"), line))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            call_id = p.get("call_id")
            text, failed = _output(p.get("output"), exit_codes.get(call_id))
            failed = failed or patch_ok.get(call_id) is False
            out.append({"role": "tool", "tool_call_id": call_id, "content": text, "is_error": failed})
    return out, meta


def _items(lines: list[tuple[int | None, dict]]) -> Iterator[tuple[int | None, str, dict]]:
    for line, v in lines:
        if is_rollout_line(v):
            yield line, v["type"], v["payload"]
        elif _legacy_item(v):
            yield line, "response_item", v
        elif is_rollout_header(v):
            yield line, "session_meta", v


def read_codex_cli(path: Path, options: ReadOptions = DEFAULT_OPTIONS) -> Iterator[TraceItem]:
    """Yield one run per user prompt of a Codex CLI rollout (`<session>#<n>`), or one per session."""
    file = str(path)
    lines: list[tuple[int | None, dict]] = []
    for jv in iter_json_values(path):
        if jv.error is not None:
            yield TraceItem(file=file, line=jv.line, run_id=None, error=record_error(jv.error, file=file, line=jv.line))
        elif isinstance(jv.value, dict):
            lines.append((jv.line, jv.value))
    try:
        messages, meta = _messages(lines)
    except SHAPE_ERRORS as exc:
        yield TraceItem(file=file, line=None, run_id=None, error=shape_error(exc, "codex-cli", file=file, line=None))
        return
    meta["source"] = file
    session = str(meta.pop("session_id", "") or Path(file).stem)
    used = {c["function"]["name"] for m in messages for c in m.get("tool_calls") or ()}
    defs = [{"name": n, "description": d} for n, d in sorted(TOOL_DEFS.items()) if n in used] or None
    yield from session_items(messages, session_id=session, file=file, what="codex-cli", mode=options.session_runs,
                             line=lines[0][0] if lines else None, meta=meta, tools=defs)


read_codex_cli.takes_options = True  # type: ignore[attr-defined]
read_codex_cli.sniffs = ("a line {type: session_meta|response_item|event_msg|turn_context, payload: {...}}, or an "  # type: ignore[attr-defined]
                         "older rollout's bare response items (message, function_call, ...) after {id, timestamp}")
trace_readers.register("codex-cli")(read_codex_cli)
