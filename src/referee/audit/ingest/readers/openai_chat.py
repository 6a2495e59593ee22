"""Reader for OpenAI chat transcripts: tool calls become actions, tool results and user turns observations.

The last assistant text is the report; assistant text before it is narration. Calls to a
thinking tool (`think`, `scratchpad`, ...) are the agent's own words too, so their arguments
go to narration. User turns after the last agent action can only react to the report, so they
are left out of the trace (they would carry the claim into the claim-blind view).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from pydantic import ValidationError

from referee.audit.ingest.readers import trace_readers
from referee.audit.ingest.readers.shellout import output_failed
from referee.audit.trace import SHAPE_ERRORS, Gold, Trace, TraceItem, record_error, shape_error, tool_defs, trace_error
from referee.core.jsonio.values import JsonValue, iter_json_values, loads
from referee.errors import TraceError

NARRATION_TOOLS = frozenset({"think", "thought", "thinking", "reason", "reasoning", "scratchpad", "note_to_self",
                             "reflect", "plan"})
_ERROR_RE = re.compile(r"^\s*(error|exception|traceback|failed|failure)\b", re.I)


def message_text(content: Any) -> str | None:
    """A chat message's content as text: a string as it is, content parts joined, None for none.

    >>> message_text([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])
    'ab'
    """
    if content is None:
        return None
    if isinstance(content, list):  # content parts
        content = "".join(_part_text(p) for p in content if isinstance(p, dict))
    return str(content)


def _part_text(part: dict) -> str:
    """A content part's words: its `text`, or an assistant's `{"type": "refusal", "refusal": ...}` (its own words)."""
    if "text" not in part and part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
        return part["refusal"]
    return part.get("text", "")


def _with_refusal(m: dict) -> dict:
    """An assistant message whose words are only in `refusal` (OpenAI writes `content: null` beside it), with
    them as its content: a refusal is the agent's own word, the report when it is the last."""
    refusal = m.get("refusal")
    if m.get("role") == "assistant" and isinstance(refusal, str) and refusal.strip() and \
            not (message_text(m.get("content")) or "").strip():
        return {**m, "content": refusal}
    return m


def _is_call_block(b: Any) -> bool:
    # tool_use, and the server-side and MCP calls (server_tool_use, mcp_tool_use)
    return isinstance(b, dict) and isinstance(b.get("type"), str) and b["type"].endswith("tool_use")


def _is_result_block(b: Any) -> bool:
    # tool_result, mcp_tool_result, and server tools' results (web_search_tool_result, code_execution_tool_result, ...)
    return isinstance(b, dict) and isinstance(b.get("type"), str) and b["type"].endswith("tool_result")


def _result_message(b: dict) -> dict:
    """A tool result block as a `tool` message: its text (structured results as JSON) and whether it failed.
    A server tool reports failure in its content (`{"type": "..._error", "error_code": ...}`, a non-zero
    `return_code`) rather than with `is_error`."""
    content = b.get("content")
    parts = content if isinstance(content, list) else []
    if content is None or isinstance(content, str) or (parts and all(
            isinstance(p, dict) and p.get("type") in ("text", "image", "document") for p in parts)):
        text = message_text(content) or ""
    else:
        text = json.dumps(content, ensure_ascii=False, default=str)
    failed = bool(b.get("is_error")) or (isinstance(content, dict) and (
        str(content.get("type", "")).endswith("_error") or "error_code" in content
        or content.get("return_code") not in (None, 0)))
    return {"role": "tool", "tool_call_id": b.get("tool_use_id"), "content": text, "is_error": failed}


def _from_content_blocks(msgs: list[dict]) -> list[dict]:
    """Rewrite messages whose content is a list of typed blocks (the Anthropic Messages shape:
    `tool_use` in assistant turns, `tool_result` in user turns; a server tool's call and result
    both in the assistant turn) into the OpenAI shape this reader walks. `thinking` and
    `redacted_thinking` blocks are the agent's own words and are dropped: never evidence.

    >>> call, result = _from_content_blocks([{"role": "assistant", "content": [{"type": "text", "text": "ok"},
    ...     {"type": "tool_use", "id": "t1", "name": "rm", "input": {"path": "a"}}]},
    ...     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "done"}]}])
    >>> call["role"], call["content"], call["tool_calls"]
    ('assistant', 'ok', [{'id': 't1', 'function': {'name': 'rm', 'arguments': {'path': 'a'}}}])
    >>> result
    {'role': 'tool', 'tool_call_id': 't1', 'content': 'done', 'is_error': False}
    """
    out: list[dict] = []
    for m in msgs:
        blocks = m.get("content")
        if not (isinstance(blocks, list) and any(_is_call_block(b) or _is_result_block(b) for b in blocks)):
            out.append(m)
            continue
        if m.get("role") == "assistant":
            # a server tool's call and result share the turn: each result closes a segment, so the text
            # after it (the answer drawn from it) is a turn of its own
            texts: list[str] = []
            calls: list[dict] = []
            results: list[dict] = []
            for b in [*blocks, None]:
                if b is None or (results and not _is_result_block(b)):
                    if texts or calls:
                        out.append({"role": "assistant", "content": "".join(texts) or None, "tool_calls": calls})
                    out.extend(results)
                    texts, calls, results = [], [], []
                if _is_call_block(b):
                    calls.append({"id": b.get("id"), "function": {"name": b.get("name"),
                                                                  "arguments": b.get("input") or {}}})
                elif _is_result_block(b):
                    results.append(_result_message(b))
                elif isinstance(b, dict) and b.get("type") == "text":
                    texts.append(b.get("text", ""))
            continue
        texts = [b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
        out.extend(_result_message(b) for b in blocks if _is_result_block(b))
        if "".join(texts).strip():
            out.append({"role": m.get("role", "user"), "content": "".join(texts)})
    return out


def _parse_args(raw: Any) -> dict:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            val = loads(raw) if raw.strip() else {}
        except ValueError:
            return {"_raw": raw}
        return val if isinstance(val, dict) else {"_value": val}
    return {} if raw is None else {"_value": raw}


def _tool_observation(msg: dict) -> dict:
    text = message_text(msg.get("content")) or ""
    # a shell's status written into its output (an exit code line, a test runner's failing summary) is a failure too
    obs: dict[str, Any] = {"text": text, "error": bool(_ERROR_RE.match(text)) or bool(msg.get("is_error"))
                           or output_failed(text)}
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            obs["data"] = loads(stripped)
        except ValueError:
            pass
    return obs


def _tool_calls(msg: dict) -> list[dict]:
    raw = msg.get("tool_calls") or []
    if isinstance(raw, dict):  # one call written bare, not in a list
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(c, dict) for c in raw):
        raise ValueError("tool_calls must be a list of call objects")
    calls = list(raw)
    if msg.get("function_call"):  # the older single-call form
        calls.append({"id": None, "function": msg["function_call"]})
    return calls


def call_name_args(call: dict) -> tuple[str, dict]:
    """A tool call's name and parsed arguments, whichever way the writer spelled it: OpenAI's
    `function: {name, arguments}`, Inspect AI's `function: "name"` beside `arguments`, or a flat
    `{name, arguments | input}`.

    >>> call_name_args({"function": {"name": "rm", "arguments": "{\\"path\\": \\"a\\"}"}})
    ('rm', {'path': 'a'})
    >>> call_name_args({"id": "c1", "function": "rm", "arguments": {"path": "a"}})
    ('rm', {'path': 'a'})
    """
    fn = call.get("function")
    if isinstance(fn, dict):
        name, args = fn.get("name"), fn.get("arguments")
    elif isinstance(fn, str) or fn is None:
        name, args = fn or call.get("name"), call.get("arguments", call.get("input"))
    else:
        raise ValueError(f"a tool call's function must be a name or an object, got {type(fn).__name__}")
    if name is not None and not isinstance(name, str):
        raise ValueError(f"a tool call's name must be a string, got {type(name).__name__}")
    return name or "unknown_tool", _parse_args(args)


# a closing has no . ! or ? in it: the lookahead says so once, so no `[^.!?]*` below runs to a stop again and again
_COURTESY = re.compile(
    r"^(?=[^.!?]*+$)"
    r"(?:you'?re (?:very )?welcome|(?:thank(?:s| you)[^.!?]*)|(?:have|enjoy) an? (?:\w+ )?(?:day|trip|flight|"
    r"journey|evening|weekend|time)[^.!?]*|safe travels[^.!?]*|take care[^.!?]*|good ?bye|bye|cheers|"
    r"(?:i'?m )?(?:glad|happy) (?:i could|to) (?:help|assist)[^.!?]*|talk to you soon|looking forward[^.!?]*|"
    r"(?:if|should) you (?:have|need)[^.!?]*(?:question|assist|help|anything)[^.!?]*|"
    r"(?:please |don'?t hesitate to |feel free to )[^.!?]*(?:reach out|contact|ask|let me know)[^.!?]*|"
    r"(?:is there )?anything else[^.!?]*|i hope[^.!?]*)$", re.I)


def is_courtesy(text: str | None) -> bool:
    """True for a closing that only thanks, wishes well or offers more help: it states no outcome.

    >>> is_courtesy("You're welcome! If you have any other questions, feel free to reach out. Safe travels!")
    True
    >>> is_courtesy("Your booking is confirmed. Have a great day!")
    False
    """
    sentences = [x.strip(" *_-") for x in re.split(r"(?<=[.!?])\s+|\n+", (text or "").strip()) if x.strip(" *_-")]
    return bool(sentences) and all(_COURTESY.match(x.rstrip(".!?").strip()) for x in sentences)


def _report_span(convo: list[dict], report_idx: int | None, last_action_idx: int) -> list[int]:
    """The assistant turns that make up the final report.

    Usually the last assistant text alone. When that text is only a courtesy closing ("You're
    welcome! Safe travels!"), the report reaches back to the last assistant text after the last
    action that does state something, so the claim reader sees the agent's actual claim.
    """
    if report_idx is None:
        return []
    start = report_idx
    if is_courtesy(message_text(convo[report_idx].get("content"))):
        for i in range(report_idx - 1, last_action_idx, -1):
            m = convo[i]
            if m.get("role") == "assistant" and not _tool_calls(m) and (message_text(m.get("content")) or "").strip():
                start = i
                if not is_courtesy(message_text(m.get("content"))):
                    break
        else:
            start = report_idx
        if is_courtesy(message_text(convo[start].get("content"))):
            start = report_idx
    return [i for i in range(start, report_idx + 1)
            if convo[i].get("role") == "assistant" and (message_text(convo[i].get("content")) or "").strip()]


def messages_to_trace(messages: list[dict], *, run_id: str, task: str | None = None,
                      meta: dict | None = None) -> dict:
    """Turn OpenAI chat messages into a trace v1 dict (validate it with Trace.model_validate).

    >>> t = messages_to_trace([{"role": "user", "content": "delete file a"},
    ...     {"role": "assistant", "content": None, "tool_calls": [{"id": "1", "function":
    ...         {"name": "rm", "arguments": "{\\"path\\": \\"a\\"}"}}]},
    ...     {"role": "tool", "tool_call_id": "1", "content": "ok"},
    ...     {"role": "assistant", "content": "Deleted a."}], run_id="r")
    >>> t["task"], t["steps"][0]["action"], t["report"]
    ('delete file a', {'name': 'rm', 'args': {'path': 'a'}}, 'Deleted a.')
    """
    msgs = _from_content_blocks([_with_refusal(m) for m in messages if isinstance(m, dict)])
    system = [(message_text(m.get("content")) or "") for m in msgs if m.get("role") in ("system", "developer")]
    convo = [m for m in msgs if m.get("role") not in ("system", "developer")]
    report_idx = None
    for i, m in enumerate(convo):
        if m.get("role") == "assistant" and (message_text(m.get("content")) or "").strip():
            report_idx = i
    last_action_idx = max((i for i, m in enumerate(convo) if m.get("role") == "assistant" and _tool_calls(m)),
                          default=-1)
    # the view is cut by where the agent's messages are, never by what they say: reaching back past a courtesy
    # closing (below) is the claim reader's business, and must not change which steps the view holds. A user turn
    # after the agent's first text after its last action answers a claim (or a closing): not evidence
    final_idx = report_idx
    report_parts = _report_span(convo, report_idx, last_action_idx)
    cut = final_idx if last_action_idx < 0 else next(
        (i for i in range(last_action_idx + 1, len(convo)) if convo[i].get("role") == "assistant"
         and (message_text(convo[i].get("content")) or "").strip()), None)
    initial: dict[str, Any] = {}
    if system:
        initial["data"] = {"system": "\n\n".join(system)}
    steps: list[dict] = []
    pending: dict[str, dict] = {}  # tool_call_id -> the step waiting for its result
    order: list[dict] = []         # steps waiting for a result, in call order (results without ids)
    first_user_used = False
    last_reply: dict | None = None  # a text-only assistant turn waiting for the user's answer
    for i, m in enumerate(convo):
        role = m.get("role")
        if role == "assistant":
            text = message_text(m.get("content"))
            narration = None if i in report_parts else (text if text and text.strip() else None)
            calls = _tool_calls(m)
            last_reply = None
            for j, call in enumerate(calls):
                name, args = call_name_args(call)
                step: dict[str, Any] = {"action": {"name": name, "args": args}}
                if name.lower() in NARRATION_TOOLS:
                    # the agent's thoughts are its own words: claim channel, not evidence
                    step["action"]["args"] = {}
                    thought = json.dumps(args, ensure_ascii=False) if args else None
                    step["narration"] = "\n".join(x for x in (narration, thought) if x) or None
                    narration = None
                elif j == 0 and narration:
                    step["narration"] = narration
                    narration = None
                steps.append(step)
                if call.get("id"):
                    pending[call["id"]] = step
                order.append(step)
            if not calls and i != final_idx:
                step = {"action": {"name": "reply", "args": {}}, "narration": narration}
                steps.append(step)
                last_reply = step
        elif role in ("tool", "function"):
            call_id = m.get("tool_call_id")
            answered = pending.pop(call_id, None) if call_id else None
            if answered is None:
                answered = next((s for s in order if "observation" not in s), None)
            if answered is None:  # a result nobody asked for: keep it as a bare observation
                answered = {}
                steps.append(answered)
            if answered in order:
                order.remove(answered)
            answered["observation"] = _tool_observation(m)
        elif role == "user":
            text = message_text(m.get("content")) or ""
            if not first_user_used and not steps:
                first_user_used = True
                if task is None:
                    task = text
                else:
                    initial["text"] = text
                continue
            if cut is not None and i > cut and i > last_action_idx:
                continue  # a reaction to the claim (above)
            obs = {"text": text, "data": {"role": "user"}}
            if last_reply is not None and "observation" not in last_reply:
                last_reply["observation"] = obs
            else:
                steps.append({"observation": obs})
            last_reply = None
    report = "\n\n".join(message_text(convo[i].get("content")) or "" for i in report_parts) if report_parts else None
    return {"trace_version": 1, "run_id": run_id, "task": task or "",
            "initial_observation": initial or None, "steps": steps, "report": report, "meta": meta or {}}


def is_message(v: Any) -> bool:
    """A chat message written as a record of its own (a file that is one conversation: a JSON list of messages,
    or JSONL with a message a line), not a record that holds messages.

    >>> is_message({"role": "user", "content": "hi"}), is_message({"messages": [], "role": "x"})
    (True, False)
    """
    return isinstance(v, dict) and isinstance(v.get("role"), str) and "messages" not in v and "request" not in v


def _conversations(values: Iterable[JsonValue]) -> Iterator[JsonValue]:
    """The records of a chat file, with consecutive bare messages gathered into one record (a list of messages,
    at the line of the first): a JSON array of messages is one run, never a run per message. A conversation with
    a message that does not parse is not audited with a gap in it: that message's error stands for it."""
    group: list[Any] = []
    first, broken = 0, False
    for jv in values:
        if jv.error is None and is_message(jv.value):
            first = jv.line if not group else first
            group.append(jv.value)
            continue
        if group and jv.error is not None:
            broken = True
            yield jv
            continue
        if group and not broken:
            yield JsonValue(line=first, value=group)
        group, broken = [], False
        yield jv
    if group and not broken:
        yield JsonValue(line=first, value=group)


def request_response(obj: dict) -> dict | str:
    """An OpenAI chat-completions log pair `{"request": {messages, tools?}, "response": {choices: [{message}]}}` as
    one record: the request's messages with the response's message after them (the agent's last turn).

    >>> r = request_response({"run_id": "r", "request": {"messages": [{"role": "user", "content": "hi"}]},
    ...     "response": {"choices": [{"message": {"role": "assistant", "content": "Hello."}}]}})
    >>> r["run_id"], [m["content"] for m in r["messages"]]
    ('r', ['hi', 'Hello.'])
    """
    request = obj["request"]
    if not isinstance(request.get("messages"), list):
        return "openai-chat: a request/response pair whose request has no 'messages' list"
    messages = list(request["messages"])
    response = obj.get("response")
    choices = response.get("choices") if isinstance(response, dict) else None
    message = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(
        choices[0], dict) else None
    if isinstance(message, dict):
        messages.append({"role": "assistant", **message})
    out = {k: obj[k] for k in ("run_id", "id", "task", "meta", "gold") if k in obj}
    out["messages"] = messages
    if "tools" in request:
        out["tools"] = request["tools"]
    return out


def _openai_record(obj: Any) -> dict | str:
    if isinstance(obj, list):
        obj = {"messages": obj}
    if isinstance(obj, dict) and not isinstance(obj.get("messages"), list) and isinstance(obj.get("request"), dict):
        return request_response(obj)
    if not isinstance(obj, dict) or not isinstance(obj.get("messages"), list):
        hint = " (this is an Inspect AI log: leave out --format, or pass --format inspect-ai)" \
            if isinstance(obj, dict) and isinstance(obj.get("eval"), dict) else ""
        return f"openai-chat: expected a list of messages or an object with 'messages'{hint}"
    return obj


def read_chat_records(path: Path, what: str, normalize: Callable[[Any], dict | str]) -> Iterator[TraceItem]:
    """One trace per record of a chat log; `normalize` turns a record into {"messages", "run_id"?, "task"?,
    "meta"?, "gold"?, "tools"?} with messages this reader walks, or says why it cannot."""
    file = str(path)
    for n, jv in enumerate(_conversations(iter_json_values(path))):
        if jv.error:
            yield TraceItem(file=file, line=jv.line, run_id=None, error=record_error(jv.error, file=file, line=jv.line))
            continue
        try:
            obj = normalize(jv.value)
        except SHAPE_ERRORS as exc:
            yield TraceItem(file=file, line=jv.line, run_id=None,
                            error=shape_error(exc, what, file=file, line=jv.line))
            continue
        if isinstance(obj, str):
            yield TraceItem(file=file, line=jv.line, run_id=None, error=record_error(obj, file=file, line=jv.line))
            continue
        gold = None
        run_id = str(obj.get("run_id") or obj.get("id") or f"{Path(file).stem}-{n}")
        g = obj.get("gold")
        if isinstance(g, dict) and isinstance(g.get("completed"), bool):
            gold = Gold(completed=g["completed"], source="record")
        try:
            raw = messages_to_trace(obj["messages"], run_id=run_id, task=obj.get("task"), meta=obj.get("meta"))
        except SHAPE_ERRORS as exc:
            yield TraceItem(file=file, line=jv.line, run_id=run_id,
                            error=shape_error(exc, what, file=file, line=jv.line, run_id=run_id))
            continue
        if not raw["steps"] and not raw["task"].strip():  # nothing read: never audited as an empty run
            yield TraceItem(file=file, line=jv.line, run_id=run_id,
                            error=_nothing_read(obj["messages"], what, file=file, line=jv.line, run_id=run_id))
            continue
        if (tools := tool_defs(obj.get("tools"))) is not None:
            raw["tools"] = tools
        try:
            trace = Trace.model_validate(raw)
        except ValidationError as exc:
            yield TraceItem(file=file, line=jv.line, run_id=run_id,
                            error=trace_error(exc, raw, file=file, line=jv.line, what=what))
            continue
        yield TraceItem(file=file, line=jv.line, run_id=run_id, trace=trace, gold=gold)


def _nothing_read(messages: list, what: str, *, file: str, line: int | None, run_id: str) -> TraceError:
    """The error for a chat record that gave no task and no step: what was missing, and how to give it."""
    turns = [m for m in messages if isinstance(m, dict)]
    if not turns:
        why = "it has no messages"
    elif not any(isinstance(m.get("role"), str) for m in turns):
        keys = ", ".join(sorted(turns[0])[:6])
        why = f"its messages have no 'role' (user, assistant, tool; the first has {keys}): not a chat in this shape"
    else:
        why = "no user text (the task) and no tool call in its messages"
    err = record_error(f"{what}: no task and no step read: {why}", file=file, line=line, run_id=run_id)
    err.fix = "convert the run to trace v1 (run_id, task, steps: see docs/auditor.md) or pass --on-error skip"
    return err


@trace_readers.register("openai-chat")
def read_openai_chat(path: Path) -> Iterator[TraceItem]:
    """Yield one trace per record: a list of messages, or {"messages": [...], "run_id"?, "task"?, "meta"?, "gold"?}."""
    return read_chat_records(path, "openai-chat", _openai_record)
