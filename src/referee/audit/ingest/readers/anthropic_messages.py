"""Reader for Anthropic Messages logs: a run's messages as content blocks `text`, `tool_use`, `tool_result`.

A record is what an agent sends to the Messages API at its last turn, with the answer it got:
`{"system"?, "messages": [...], "tools"?}` (the request body), `{"request": {...}, "response":
{...}}` (a request/response log; the response is the run's last assistant turn), or a bare list of
messages. `run_id`, `task`, `meta` and `gold: {"completed": bool}` may sit beside them, as in
openai-chat. Assistant turns' `tool_use` blocks (and server tools' `server_tool_use`, MCP's
`mcp_tool_use`) are actions; `tool_result` blocks are observations, failed when `is_error` (or a
server tool's result is an error object); `text` before a call is narration; the last assistant
text is the report. `thinking` and `redacted_thinking` blocks are the agent's own words and are
never read. The top-level `system` prompt is kept as the initial observation's `data.system`,
as a system message is in openai-chat; `tools` (`name`, `description`, `input_schema`) are the
tool definitions. Usage, stop reasons and model settings are not read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from referee.audit.ingest.readers import trace_readers
from referee.audit.ingest.readers.openai_chat import read_chat_records
from referee.audit.trace import TraceItem

# block types only the Anthropic shape has (OpenAI content parts are text, image_url, input_audio, refusal, file)
ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use",
                              "mcp_tool_use", "mcp_tool_result", "document"})


def _block_types(messages: Any, limit: int = 200) -> set[str]:
    types: set[str] = set()
    for m in messages[:limit] if isinstance(messages, list) else ():
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list):
            types.update(b["type"] for b in content if isinstance(b, dict) and isinstance(b.get("type"), str))
    return types


def looks_anthropic(record: Any) -> bool:
    """True for a record in the Anthropic Messages shape: a request/response pair, a top-level
    `system` beside `messages`, tools with `input_schema`, or Anthropic-only content blocks.

    >>> looks_anthropic({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}]})
    True
    >>> looks_anthropic({"messages": [{"role": "user", "content": "hi"}]})
    False
    >>> looks_anthropic({"request": {"messages": []}, "response": {"choices": [{"message": {}}]}})
    False
    """
    if isinstance(record, list):
        record = {"messages": record}
    if not isinstance(record, dict):
        return False
    request = record.get("request")
    if isinstance(request, dict) and isinstance(request.get("messages"), list) and isinstance(
            record.get("response"), dict):
        return "choices" not in record["response"]  # OpenAI's response holds `choices`, Anthropic's its content
    messages = record.get("messages")
    if not isinstance(messages, list):
        return False
    if "system" in record:
        return True
    tools = record.get("tools")
    if isinstance(tools, list) and any(isinstance(t, dict) and "input_schema" in t for t in tools):
        return True
    types = _block_types(messages)
    return bool(types & ANTHROPIC_BLOCKS) or any(t.endswith(("_tool_use", "_tool_result")) for t in types)


def _system_text(system: Any) -> str | None:
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "".join(b.get("text", "") for b in system if isinstance(b, dict) and b.get("type") == "text")
    return None


def anthropic_record(obj: Any) -> dict | str:
    """A record as {"messages", "tools", ...} in the shape the chat reader walks, or why it is not one.

    >>> r = anthropic_record({"request": {"system": "Be brief.", "messages": [{"role": "user", "content": "hi"}],
    ...     "tools": [{"name": "rm", "description": "Remove a file.", "input_schema": {}}]},
    ...     "response": {"role": "assistant", "content": [{"type": "text", "text": "Hello."}]}})
    >>> [m["role"] for m in r["messages"]], r["tools"]
    (['system', 'user', 'assistant'], [{'name': 'rm', 'description': 'Remove a file.', 'parameters': {}}])
    """
    if isinstance(obj, list):
        obj = {"messages": obj}
    if not isinstance(obj, dict):
        return "anthropic-messages: expected a list of messages, a request body with 'messages', or " \
               "{'request': ..., 'response': ...}"
    body = obj
    response = None
    if isinstance(obj.get("request"), dict) and not isinstance(obj.get("messages"), list):
        body, response = obj["request"], obj.get("response")
    messages = body.get("messages")
    if not isinstance(messages, list):
        return "anthropic-messages: no 'messages' list (a request body, or {'request': ..., 'response': ...})"
    messages = list(messages)
    system = _system_text(body.get("system"))
    if system:
        messages.insert(0, {"role": "system", "content": system})
    if isinstance(response, dict) and response.get("content") is not None:
        messages.append({"role": response.get("role") or "assistant", "content": response["content"]})
    out = {k: obj[k] for k in ("run_id", "id", "task", "meta", "gold") if k in obj}
    out["messages"] = messages
    tools = body.get("tools")
    if isinstance(tools, list):
        out["tools"] = [{**{k: v for k, v in t.items() if k != "input_schema"}, "parameters": t.get("input_schema")}
                        if isinstance(t, dict) else t for t in tools]
    return out


@trace_readers.register("anthropic-messages")
def read_anthropic_messages(path: Path) -> Iterator[TraceItem]:
    """Yield one trace per record (request body, request/response pair, or list of messages)."""
    return read_chat_records(path, "anthropic-messages", anthropic_record)
