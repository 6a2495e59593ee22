"""Reader for OpenAI Agents SDK runs: trace exports (trace and span records) and `RunResult.to_input_list()` items.

- **Trace exports** (what a tracing processor or the backend exporter writes: JSONL, a list, or
  `{"data": [...]}`): `{"object": "trace", "id", "workflow_name"}` and `{"object": "trace.span",
  "trace_id", "started_at", "span_data": {...}, "error"}` records. Spans are read in time order:
  a `generation` span's input gives the user's prompts (each once), its output the agent's text; a
  `function` span is one tool call with its `input` (JSON arguments) and `output`, failed when the
  span has an `error`, or (a function tool that returns its command's output raises nothing) when the
  output text shows a failed command: a non-zero exit code, a test runner's failing summary (`shellout`,
  read for every chat-shaped reader). `agent`, `handoff`, `guardrail` and `custom` spans say nothing the trace
  lacks. A `response` span carries its input and output only when the exporter kept them (the SDK
  does not by default): a trace with no prompt in it cannot be audited, and says so.
- **Input lists** (`result.to_input_list()` saved as JSON): user and assistant `message` items,
  `function_call` / `function_call_output`, and the built-in tools' calls and outputs
  (`shell_call`, `local_shell_call`, `apply_patch_call`, `custom_tool_call`, `computer_call`, ...).
  `reasoning` items are the model's own words and are never read.

Each trace (or input list) is one session, split into one run per user prompt by `sessions`.
Function tools keep their own names (`run_tests`, `write_file`): the auditor reads them by verb;
the shell tools become `shell` with their command (an exit code in the output text), `apply_patch`
says which file it creates, updates or deletes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from referee.audit.ingest.readers import ReadOptions, trace_readers
from referee.audit.ingest.readers.sessions import session_items
from referee.audit.trace import TraceItem, record_error
from referee.core.jsonio.values import iter_json_values

_CALL_TYPES = frozenset({"function_call", "custom_tool_call", "shell_call", "local_shell_call", "apply_patch_call",
                         "computer_call", "web_search_call", "file_search_call", "code_interpreter_call",
                         "mcp_call", "image_generation_call"})
_OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output", "shell_call_output",
                           "local_shell_call_output", "apply_patch_call_output", "computer_call_output"})
ITEM_TYPES = _CALL_TYPES | _OUTPUT_TYPES | {"reasoning"}


def is_trace_record(v: Any) -> bool:
    """A trace or span as the Agents SDK exports it (`object` trace / trace.span).

    >>> is_trace_record({"object": "trace.span", "span_data": {"type": "function"}}), is_trace_record({"object": 1})
    (True, False)
    """
    return isinstance(v, dict) and v.get("object") in ("trace", "trace.span")


def is_input_list(items: Any) -> bool:
    """A list of Responses input items, as `to_input_list()` gives them: a call or output item, or a typed message.

    >>> is_input_list([{"role": "user", "content": "hi"}, {"type": "function_call", "name": "f", "call_id": "c"}])
    True
    >>> is_input_list([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])
    False
    """
    return isinstance(items, list) and any(
        isinstance(i, dict) and (i.get("type") in ITEM_TYPES or (i.get("type") == "message" and "role" in i))
        for i in items[:200])


def sniff_openai_agents(v: Any) -> bool:
    """Whether a file's first record says openai-agents: a trace or span, a page of them, an input item of a
    Responses type (a bare message says nothing: its neighbours tell, `is_input_list`), or a list of items."""
    if isinstance(v, dict) and isinstance(v.get("data"), list) and v["data"]:
        return is_trace_record(v["data"][0])
    if isinstance(v, dict):
        return is_trace_record(v) or v.get("type") in ITEM_TYPES or (v.get("type") == "message" and "role" in v)
    return is_input_list(v)


def _dict(v: Any) -> dict:
    return v if isinstance(v, dict) else {}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict)
                       and p.get("type") in ("input_text", "output_text", "text", None))
    return "" if content is None else json.dumps(content, ensure_ascii=False, default=str)


def _shell_output(item: dict) -> str:
    """A shell call's output as text, its exit code said the way the shell layer reads it."""
    out = item.get("output")
    if isinstance(out, list):
        parts, code = [], None
        for o in out:
            if isinstance(o, dict):
                parts.append(str(o.get("stdout") or "") + str(o.get("stderr") or ""))
                outcome = o.get("outcome")
                if isinstance(outcome, dict) and outcome.get("exit_code") is not None:
                    code = outcome["exit_code"]
        return "".join(parts) + (f"\nexit code: {code}" if code is not None else "")
    text = _text(out)
    if isinstance(item.get("exit_code"), int):
        text += f"\nexit code: {item['exit_code']}"
    return text


def _call(item: dict) -> tuple[str, Any]:
    """The name and arguments a call item is audited by."""
    kind = item.get("type")
    action = _dict(item.get("action"))
    if kind == "function_call":
        return str(item.get("name") or "unknown_tool"), item.get("arguments")
    if kind == "custom_tool_call":
        return str(item.get("name") or "unknown_tool"), {"input": item.get("input")}
    if kind in ("shell_call", "local_shell_call"):
        cmd = action.get("commands") or action.get("command") or []
        return "shell", {"command": "\n".join(cmd) if kind == "shell_call" and isinstance(cmd, list)
                         else " ".join(cmd) if isinstance(cmd, list) else str(cmd)}
    if kind == "apply_patch_call":
        op = _dict(item.get("operation"))
        name = "delete_file" if op.get("type") == "delete_file" else "apply_patch"
        return name, {"path": op.get("path"), "operation": op.get("type"), "diff": op.get("diff")}
    return str(kind).removesuffix("_call"), action or {k: v for k, v in item.items() if k not in ("type", "id")}


def items_to_messages(items: list[Any]) -> list[dict]:
    """Responses input items as chat messages for `sessions` (reasoning left out).

    >>> [m["role"] for m in items_to_messages([{"role": "user", "content": "fix it"},
    ...     {"type": "function_call", "call_id": "c1", "name": "run_tests", "arguments": "{}"},
    ...     {"type": "function_call_output", "call_id": "c1", "output": "2 failed"},
    ...     {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}])]
    ['user', 'assistant', 'tool', 'assistant']
    """
    out: list[dict] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind in _CALL_TYPES:
            name, args = _call(item)
            call = {"id": item.get("call_id") or item.get("id"), "function": {"name": name, "arguments": args}}
            last = out[-1] if out else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind in _OUTPUT_TYPES:
            text = _shell_output(item) if kind in ("shell_call_output", "local_shell_call_output") \
                else _text(item.get("output"))
            failed = item.get("status") in ("failed", "incomplete") or bool(item.get("is_error"))
            out.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": text, "is_error": failed})
        elif item.get("role") in ("user", "assistant", "system", "developer") and kind in (None, "message"):
            out.append({"role": item["role"], "content": _text(item.get("content")), "_line": item.get("_line")})
    return out


def _span_messages(spans: list[dict]) -> list[dict]:
    """One trace's spans (in time order) as chat messages: prompts from generation inputs (each once), the
    agent's text from their outputs, each function span a call with its result."""
    out: list[dict] = []
    seen_user: set[str] = set()
    for span in spans:
        data = _dict(span.get("span_data"))
        kind = data.get("type")
        if kind in ("generation", "response"):
            given = data.get("input")
            for m in given if isinstance(given, list) else ([{"role": "user", "content": given}]
                                                            if isinstance(given, str) else []):
                if isinstance(m, dict) and m.get("role") == "user":
                    text = _text(m.get("content"))
                    if text.strip() and text not in seen_user:
                        seen_user.add(text)
                        out.append({"role": "user", "content": text, "_line": span.get("_line")})
            got = _dict(data.get("response")).get("output", data.get("output")) if kind == "response" \
                else data.get("output")
            for m in got if isinstance(got, list) else []:
                if isinstance(m, dict) and m.get("role") == "assistant" and _text(m.get("content")).strip():
                    out.append({"role": "assistant", "content": _text(m.get("content"))})
        elif kind == "function":
            cid = span.get("id")
            out.append({"role": "assistant", "content": None,
                        "tool_calls": [{"id": cid, "function": {"name": str(data.get("name") or "unknown_tool"),
                                                                "arguments": data.get("input")}}]})
            err = span.get("error")
            text = _text(data.get("output"))
            if isinstance(err, dict) and not text:
                text = f"Error: {err.get('message', '')}"
            out.append({"role": "tool", "tool_call_id": cid, "content": text, "is_error": bool(err)})
    return out


def _values(path: Path) -> Iterator[tuple[int | None, Any, str | None]]:
    for jv in iter_json_values(path):
        if jv.error:
            yield jv.line, None, jv.error
        elif isinstance(jv.value, dict) and isinstance(jv.value.get("data"), list):
            for v in jv.value["data"]:
                yield jv.line, v, None
        else:
            yield jv.line, jv.value, None


def read_openai_agents(path: Path, options: ReadOptions | None = None) -> Iterator[TraceItem]:
    """One run per user prompt of each trace (trace/span export) or input list (`to_input_list()`) in the file."""
    file, mode, stem = str(path), (options or ReadOptions()).session_runs, Path(path).name.split(".")[0]
    traces: dict[str, dict[str, Any]] = {}  # trace_id -> {"spans", "name", "line"}
    items: list[Any] = []  # bare input items (a JSON array of them, or JSONL of items)
    first_item_line: int | None = None
    lists = 0
    for line, v, error in _values(Path(path)):
        if error is not None:
            yield TraceItem(file=file, line=line, run_id=None,
                            error=record_error(f"openai-agents: {error}", file=file, line=line))
        elif is_trace_record(v):
            tid = str(v.get("trace_id") or v.get("id") or stem)
            t = traces.setdefault(tid, {"spans": [], "name": None, "line": line})
            if v["object"] == "trace":
                t["name"] = v.get("workflow_name")
            else:
                t["spans"].append({**v, "_line": line})
        elif isinstance(v, list):  # a line or record that is a whole input list: one session of its own
            lists += 1
            msgs = items_to_messages([{**i, "_line": line} if isinstance(i, dict) else i for i in v])
            yield from session_items(msgs, session_id=f"{stem}-{lists}" if lists > 1 else stem, file=file,
                                     what="openai-agents", mode=mode, line=line, meta={"source": "openai-agents"})
        elif isinstance(v, dict):
            first_item_line = line if first_item_line is None else first_item_line
            items.append({**v, "_line": line})
        else:
            yield TraceItem(file=file, line=line, run_id=None, error=record_error(
                "openai-agents: expected a trace, a span or a Responses input item", file=file, line=line))
    if items:
        yield from session_items(items_to_messages(items), session_id=stem, file=file, what="openai-agents",
                                 mode=mode, line=first_item_line, meta={"source": "openai-agents"})
    for tid, t in traces.items():
        spans = sorted(t["spans"], key=lambda s: str(s.get("started_at") or ""))
        meta = {"source": "openai-agents", "trace_id": tid, **({"workflow": t["name"]} if t["name"] else {})}
        msgs = _span_messages(spans)
        if not any(m["role"] == "user" for m in msgs):
            err = record_error(f"openai-agents: trace {tid} holds no user prompt (its generation/response spans carry "
                               f"no input: the SDK exports none by default)", file=file, line=t["line"], run_id=tid)
            err.fix = "save `result.to_input_list()` of the run as JSON and audit that, or pass --on-error skip"
            yield TraceItem(file=file, line=t["line"], run_id=tid, error=err)
            continue
        yield from session_items(msgs, session_id=tid, file=file, what="openai-agents", mode=mode, line=t["line"],
                                 meta=meta)


read_openai_agents.takes_options = True  # type: ignore[attr-defined]
read_openai_agents.sniffs = ("a record with object trace / trace.span (a trace export), or Responses input items "  # type: ignore[attr-defined]
                             "(function_call, function_call_output, typed messages: to_input_list())")
trace_readers.register("openai-agents")(read_openai_agents)
