"""Reader for Inspect AI logs (`.eval` and `.json`): one trace per sample and epoch, scorers' values kept for gold.

Each sample becomes one run, `<task>/<sample id>/<epoch>`. Task = the sample's `input` (its user
text when it is a list of messages). The trace is the sample's `messages`, read as openai-chat
reads a chat: an assistant turn's `tool_calls` (`function` a name, `arguments` an object) are
actions, `tool` messages their observations; a tool message with `error: {type, message}` (a
tool that raised, its content empty) is a failed observation whose text is the error. The report
is `output.completion` (with `react()`, the submitted answer is appended to it), else the last
assistant text. `reasoning` content is the agent's own words and is dropped; a call of a terminal
answer tool (`submit`) keeps its name only and its result (the answer echoed back) is dropped.

Never read: the `events` transcript (beyond the tool definitions the model was offered outside
the scorers' span), the `store`, `metadata`, `target`, and the `scores`. Scorers' values are kept
beside the trace (`TraceItem.scores`), gold only when the user names a scorer (`--gold-scorer`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

from pydantic import ValidationError

from referee.audit.ingest.readers import trace_readers
from referee.audit.ingest.readers.inspect_files import LogPart, is_eval_zip, iter_eval_zip, iter_json_log
from referee.audit.ingest.readers.openai_chat import call_name_args, messages_to_trace
from referee.audit.trace import SHAPE_ERRORS, Trace, TraceItem, record_error, shape_error, tool_defs, trace_error
from referee.audit.view.terminal import is_terminal

_ATTACHMENT = "attachment://"
# how every Inspect JSON log begins (EvalLog's first fields), read from the file's first bytes only
_JSON_HEAD = re.compile(r'^\ufeff?\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:\s*"')


def sniff_inspect(path: Path) -> bool:
    """True for an Inspect AI log: an `.eval` zip, or a JSON log (`{"version": N, "status": ...`).

    >>> import tempfile; p = Path(tempfile.mkdtemp()) / "log.json"
    >>> _ = p.write_text('{\\n  "version": 2,\\n  "status": "success",\\n  "eval": {}}')
    >>> sniff_inspect(p)
    True
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(512)
    except OSError:
        return False
    if head.startswith(b"PK\x03\x04"):
        # a zip cut short (a copy interrupted, a run still writing) has no directory to list: its first member's
        # name, in its local header, or the .eval name still say it is a log, to be read as one bad item
        first = head[30:30 + int.from_bytes(head[26:28], "little")]
        return is_eval_zip(path) or Path(path).suffix == ".eval" or first.startswith(_EVAL_MEMBERS)
    return bool(_JSON_HEAD.match(head.decode("utf-8", errors="replace")))


_EVAL_MEMBERS = (b"header.json", b"_journal/", b"samples/")


def _resolve(value: Any, attachments: dict) -> Any:
    """`attachment://<hash>` strings (Inspect pools long content there) replaced by their content."""
    if isinstance(value, str):
        if value.startswith(_ATTACHMENT):
            got = attachments.get(value[len(_ATTACHMENT):])
            return got if isinstance(got, str) else value
        return value
    if isinstance(value, list):
        return [_resolve(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, attachments) for k, v in value.items()}
    return value


def _text(content: Any) -> str:
    """The text of a message's content: a string, or its `text` parts (reasoning, images and the rest dropped)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def input_text(value: Any) -> str:
    """The task of a sample: its `input` string, or the user text of its input messages.

    >>> input_text([{"role": "system", "content": "rules"}, {"role": "user", "content": "Delete a.txt"}])
    'Delete a.txt'
    """
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n\n".join(t for m in value if isinstance(m, dict) and m.get("role") == "user"
                           for t in [_text(m.get("content"))] if t.strip())
    return ""


def _server_tool_uses(content: Any) -> tuple[list[dict], list[dict]]:
    """A provider-side tool's use inside an assistant turn (`type: tool_use`): its call and its result."""
    calls, results = [], []
    for p in content if isinstance(content, list) else ():
        if isinstance(p, dict) and p.get("type") == "tool_use" and p.get("id"):
            calls.append({"id": p["id"], "function": p.get("name"), "arguments": p.get("arguments")})
            result, error = p.get("result"), p.get("error")
            text = result if isinstance(result, str) else "" if result is None else json.dumps(result, default=str)
            results.append({"role": "tool", "tool_call_id": p["id"], "is_error": bool(error),
                            "content": "\n".join(x for x in (text, str(error or "")) if x)})
    return calls, results


def to_chat(messages: list, task: str) -> list[dict]:
    """Inspect `messages` in the shape the openai-chat reader walks; the user turns that are the task are left out.

    >>> to_chat([{"role": "user", "content": "Delete a", "source": "input"},
    ...          {"role": "assistant", "content": "", "tool_calls": [{"id": "1", "function": "rm", "arguments": {}}]},
    ...          {"role": "tool", "tool_call_id": "1", "content": "", "error": {"type": "permission",
    ...           "message": "denied"}}], "Delete a")[-1]
    {'role': 'tool', 'tool_call_id': '1', 'content': 'permission: denied', 'is_error': True}
    """
    out: list[dict] = []
    terminal_ids: set[str] = set()
    answered = False  # an assistant turn came: user turns from here on are not the task
    for m in messages:
        if not isinstance(m, dict):
            raise ValueError("a message must be an object")
        role = m.get("role")
        if role == "user" and not answered and task.strip() and _text(m.get("content")).strip() == task.strip():
            continue  # the task itself
        if role == "assistant":
            answered = True
            calls = list(m.get("tool_calls") or [])
            server_calls, server_results = _server_tool_uses(m.get("content"))
            for call in calls:
                if isinstance(call, dict) and call.get("id") and is_terminal(*call_name_args(call)):
                    terminal_ids.add(str(call["id"]))
            out.append({"role": "assistant", "content": _text(m.get("content")), "tool_calls": server_calls + calls})
            out.extend(server_results)
        elif role == "tool":
            if str(m.get("tool_call_id")) in terminal_ids:
                continue  # the submitted answer echoed back: the agent's words, not the world's
            text = _text(m.get("content"))
            err = m.get("error")
            msg = {"role": "tool", "tool_call_id": m.get("tool_call_id"), "content": text, "is_error": bool(err)}
            if err:
                kind = err.get("type") if isinstance(err, dict) else None
                why = err.get("message") if isinstance(err, dict) else err
                said = f"{kind}: {why}" if kind and kind != "unknown" else str(why)
                msg["content"] = "\n".join(x for x in (text, said) if x)
            out.append(msg)
        else:
            out.append({"role": role, "content": _text(m.get("content"))})
    return out


def _tools_offered(events: Any) -> list[dict] | None:
    """The tools offered in the model calls outside the scorers' span (a model-graded scorer's are not the agent's)."""
    scoring: set[str] = set()
    tools: dict[str, dict] = {}
    for e in events if isinstance(events, list) else ():
        if not isinstance(e, dict):
            continue
        if e.get("event") == "span_begin" and (e.get("type") in ("scorers", "scorer") or e.get("parent_id") in scoring):
            scoring.add(str(e.get("id")))
        elif e.get("event") == "model" and e.get("span_id") not in scoring:
            for t in tool_defs(e.get("tools")) or ():
                tools.setdefault(t["name"], t)
    return list(tools.values()) or None


def sample_run_id(sample: dict, *, task_name: str, log_id: str) -> str:
    """`<task>/<sample id>/<epoch>@<log id>`: a sample's epoch is one run, and the log it is in tells apart the
    same sample run by another model, or again by the same one (every log of a folder is read).

    >>> sample_run_id({"id": "a", "epoch": 2}, task_name="files", log_id="kDq3")
    'files/a/2@kDq3'
    """
    return f"{task_name}/{sample.get('id')}/{sample.get('epoch', 1)}@{log_id}"


def sample_to_trace(sample: dict, *, task_name: str, model: str | None,
                    log_id: str) -> tuple[dict, dict[str, Any]]:
    """One sample as a trace v1 dict (validate it with Trace.model_validate) and its scorers' values."""
    sid, epoch = sample.get("id"), sample.get("epoch", 1)
    run_id = sample_run_id(sample, task_name=task_name, log_id=log_id)
    attachments: dict = sample["attachments"] if isinstance(sample.get("attachments"), dict) else {}
    task = input_text(_resolve(sample.get("input"), attachments))
    messages = _resolve(sample.get("messages") or [], attachments)
    if not isinstance(messages, list):
        raise ValueError("'messages' must be a list")
    meta: dict[str, Any] = {"source": "inspect-ai", "group": f"{task_name}/{sid}", "task": task_name,
                            "sample_id": sid, "epoch": epoch, "log": log_id}
    if model:
        meta["model"] = model
    err = sample.get("error")
    if isinstance(err, dict) and err.get("message"):
        meta["error"] = str(err["message"])[:500]  # the sample crashed: say so, but it is no evidence
    chat = to_chat(messages, task)
    output = _resolve(sample.get("output"), attachments)
    completion = output.get("completion") if isinstance(output, dict) else None
    last = next((m for m in reversed(chat) if m["role"] == "assistant"), None)
    if isinstance(completion, str) and completion.strip() and (
            last is None or (last.get("content") or "").strip() != completion.strip()):
        # the completion is the report; when no turn says it (react's submitted answer kept as a tool call),
        # it is the last word, and the texts before it stay narration
        chat.append({"role": "assistant", "content": completion})
    raw = messages_to_trace(chat, run_id=run_id, task=task or None, meta=meta)
    if (tools := _tools_offered(sample.get("events"))) is not None:
        raw["tools"] = tools
    scores: dict = sample["scores"] if isinstance(sample.get("scores"), dict) else {}
    values = {str(k): v["value"] for k, v in scores.items() if isinstance(v, dict) and "value" in v}
    return raw, values


def _parts(path: Path) -> Iterator[LogPart]:
    try:
        with open(path, "rb") as fh:
            zipped = fh.read(4) == b"PK\x03\x04"  # whole or cut short: a zip is never read as JSON text
    except OSError:
        zipped = False
    return iter_eval_zip(path) if zipped else iter_json_log(path)


@trace_readers.register("inspect-ai")
def read_inspect(path: Path) -> Iterator[TraceItem]:
    """Yield one trace per sample and epoch of an Inspect AI log, streamed one sample at a time."""
    file = str(path)
    # the log's eval_id (Inspect gives every eval log one), else its file name (Inspect's names are unique too)
    task_name, model, log_id = Path(file).stem, None, Path(file).stem
    seen_any = header_seen = False
    for part in _parts(Path(path)):
        place = part.line if part.line is not None else part.where
        if part.kind == "header":
            ev = part.value.get("eval") if isinstance(part.value.get("eval"), dict) else {}
            header_seen = header_seen or bool(ev)
            task_name = str(ev.get("task") or task_name)
            model = ev.get("model") if isinstance(ev.get("model"), str) else None
            log_id = str(ev.get("eval_id") or log_id)
            continue
        seen_any = True
        if part.kind == "error":
            yield TraceItem(file=file, line=part.line, run_id=None, error=record_error(
                f"inspect-ai: {part.error}", file=file, line=place))
            continue
        sample = part.value
        if not isinstance(sample, dict):
            yield TraceItem(file=file, line=part.line, run_id=None, error=record_error(
                "inspect-ai: a sample must be an object", file=file, line=place))
            continue
        run_id = sample_run_id(sample, task_name=task_name, log_id=log_id)
        try:
            raw, scores = sample_to_trace(sample, task_name=task_name, model=model, log_id=log_id)
            trace = Trace.model_validate(raw)
        except ValidationError as exc:
            yield TraceItem(file=file, line=part.line, run_id=run_id, error=trace_error(
                exc, raw, file=file, line=place, what="inspect-ai"))
            continue
        except SHAPE_ERRORS as exc:
            yield TraceItem(file=file, line=part.line, run_id=run_id, error=shape_error(
                exc, "inspect-ai", file=file, line=place, run_id=run_id))
            continue
        yield TraceItem(file=file, line=part.line, run_id=run_id, trace=trace, scores=scores or None)
    if not seen_any:
        why = ("the log holds no samples (was it written with --no-log-samples?)" if header_seen else
               "not an Inspect AI log: no 'eval' header and no samples (is --format right?)")
        yield TraceItem(file=file, line=None, run_id=None, error=record_error(f"inspect-ai: {why}", file=file,
                                                                              line=None))


read_inspect.needs = ("zstandard for .eval members compressed with zstd, as recent Inspect writes them "
                      "(pip install 'referee[inspect]'); a .json log or deflate members need nothing more")
