"""Never a silent misread: a file read as runs that cannot be what it holds, or mostly refused, is said in one line.

A reader that takes a file of another tool's shape can make runs of nothing: an empty task, no
action although the file is full of tool calls, or a refusal per line. `watching` passes a file's
items through and, at its end, adds one bad record that counts what looks wrong and says what the
file looks like (`looks_like`), so the audit exits 1 unless the user passes `--on-error skip`.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Iterator

from referee.audit.trace import TraceItem, record_error
from referee.core.jsonio.undecodable import Count, counting, first_bad_line

SCAN_BYTES = 64 << 20  # of a file, searched for tool calls when a run of it has no action
HEAD_BYTES = 1 << 16  # of a file, read to tell what it looks like
MOST_REFUSED = 5  # refused records, more than half of a file's, that make it look misread (a few say their own why)
_CALL_MARKS = re.compile(rb'"(?:tool_use|tool_calls|function_call|functionCall|toolCall|tool_call|agent\.tool_use|'
                         rb'agent\.mcp_tool_use|custom_tool_call|shell_call|local_shell_call|apply_patch_call)"')


def tool_calls_in(path: str | Path, limit: int = SCAN_BYTES) -> int:
    """How many tool-call marks (`"tool_use"`, `"tool_calls"`, `"function_call"`, `"functionCall"`, ...) the first
    `limit` bytes of a file hold; 0 for a file that cannot be read.

    >>> import tempfile; p = Path(tempfile.mkdtemp()) / "t.json"
    >>> _ = p.write_text('[{"type": "tool_use"}, {"functionCall": {}}]'); tool_calls_in(p)
    2
    """
    try:
        with open(path, "rb") as fh:
            return len(_CALL_MARKS.findall(fh.read(limit)))
    except OSError:
        return 0


# (what a record has, what it is, the format that reads it); checked on a file's first records
_SIGNATURES: tuple[tuple[str, str, str | None], ...] = (
    ("codex", "a Codex CLI rollout (session_meta / response_item / event_msg lines)", "codex-cli"),
    ("claude", "a Claude Code project transcript (type user/assistant with message, uuid, sessionId)", "claude-code"),
    ("gemini", "a Gemini CLI log (stream-json events or a saved chat of role/parts)", "gemini-cli"),
    ("sdk", "a Claude Agent SDK stream or Managed Agents session events", "agent-sdk"),
    ("oai", "an OpenAI Agents SDK trace export or input list", "openai-agents"),
)


def _kind(v: object) -> str | None:
    if isinstance(v, list) and v:
        v = v[0]
    if not isinstance(v, dict):
        return None
    t = v.get("type")
    if t in ("session_meta", "response_item", "event_msg", "turn_context") and "payload" in v:
        return "codex"
    if t in ("system", "assistant", "user", "result") and "session_id" in v:
        return "sdk"  # a stream (newer ones add a uuid), not a transcript (sessionId)
    if t in ("user", "assistant", "summary", "system") and ("sessionId" in v or "uuid" in v or "leafUuid" in v):
        return "claude"
    if ("parts" in v and v.get("role") in ("user", "model")) or (t in ("init", "message", "tool_use", "tool_result")
                                                                  and ("tool_id" in v or "tool_name" in v
                                                                       or "timestamp" in v)):
        return "gemini"
    if (t in ("system", "assistant", "user", "result") and "session_id" in v) or (
            isinstance(t, str) and re.match(r"^(?:user|agent|session|span)\.", t)):
        return "sdk"
    if v.get("object") in ("trace", "trace.span") or t in ("function_call", "function_call_output"):
        return "oai"
    return None


def looks_like(path: str | Path) -> str | None:
    """What a file looks like when it is a session log of a known tool, with the --format that reads it; None else.

    >>> import tempfile; p = Path(tempfile.mkdtemp()) / "rollout.jsonl"
    >>> _ = p.write_text('{"type": "session_meta", "payload": {"id": "x"}}\\n'); looks_like(p)
    'a Codex CLI rollout (session_meta / response_item / event_msg lines): --format codex-cli'
    >>> _ = p.write_text("\\n# aider chat started at 2026-01-01 10:00:00\\n"); looks_like(p)
    'an Aider chat history (.aider.chat.history.md): --format aider'
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEAD_BYTES).decode("utf-8", "replace")
    except OSError:
        return None
    if head.lstrip().startswith("# aider chat started at"):
        return "an Aider chat history (.aider.chat.history.md): --format aider"
    dec = json.JSONDecoder()
    text = head.lstrip()
    if text.startswith("["):
        text = text[1:].lstrip()
    for _ in range(5):  # the first few records: a header line may say nothing
        try:
            v, end = dec.raw_decode(text)
        except ValueError:
            return None
        if (k := _kind(v)) is not None:
            what, fmt = next((w, f) for key, w, f in _SIGNATURES if key == k)
            return f"{what}: --format {fmt}" if fmt else what
        text = text[end:].lstrip().lstrip(",").lstrip()
    return None


def watching(items: Iterator[TraceItem], fmt: str | None = None) -> Iterator[TraceItem]:
    """A file's items as read, then one bad record when they look misread: runs with an empty task, runs with no
    action while the file holds tool calls, or most records refused. `fmt`: the reader that read it, when known."""
    file: str | None = None
    runs = empty = idle = refused = 0
    for item in items:
        file = file or item.file
        if item.trace is not None:
            runs += 1
            empty += not item.trace.task.strip()
            idle += not any(s.action is not None for s in item.trace.steps)
        elif item.error is not None:
            refused += 1
        yield item
    if file is None or Path(file).is_dir():
        return
    wrong = []
    if empty:
        wrong.append(f"{empty} with an empty task")
    calls = tool_calls_in(file) if runs and idle == runs else 0  # one chat-only run among many is no sign
    if calls:
        wrong.append(f"{idle} with no action although the file holds {calls} tool call{'s' * (calls > 1)}")
    most = refused >= MOST_REFUSED and refused * 2 > refused + runs
    if not wrong and not most:
        return
    said = (f"read as {fmt}: " if fmt else "read as ") + f"{runs} run{'s' * (runs != 1)}"
    said += f" ({', '.join(wrong)})" if wrong else ""
    if refused:
        said += f", {refused} of {refused + runs} records refused"
    seems = looks_like(file)
    err = record_error(f"this file looks misread: {said}" + (f"; it looks like {seems}" if seems else ""),
                       file=file, line=None)
    # ends in " or pass --on-error skip", which the CLI drops when skipping was asked for: what is left is a sentence
    err.fix = ("pass the --format that reads it (`referee readers` lists them) or convert it to trace v1 or pass "
               "--on-error skip")
    yield TraceItem(file=file, line=None, run_id=None, error=err)


def noting_undecodable(items: Iterator[TraceItem], count: Count | None = None) -> Iterator[TraceItem]:
    """`items`; the first item of a file read after bytes that are not UTF-8 carries a note that says so and
    shows where the first of them is (the decoder reads ahead: they are in that item's text or after it).
    `count`: what reading the file has replaced already (a sniff that read its first records).

    >>> import tempfile, pathlib
    >>> from referee.audit.ingest.readers import read_traces
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.jsonl"
    >>> _ = p.write_bytes(b'{"run_id": "a", "task": "caf\\xe9", "steps": []}\\n')
    >>> [item] = read_traces(p); item.trace.task
    'caf\ufffd'
    >>> print(item.notes[0])  # doctest: +ELLIPSIS
    /.../t.jsonl: 1 byte that is not UTF-8 was read as U+FFFD (the first: ..."task": "caf\\xe9", "steps"...
    """
    items = watching(items)
    count, seen, noted = count if count is not None else Count(), 0, set()
    while True:
        with counting(count):
            item = next(items, None)
        if item is None:
            return
        if count.n > seen and item.file not in noted:
            noted.add(item.file)
            n = count.n - seen
            near = repr(count.first)[2:-1] if count.first is not None else "?"
            line = first_bad_line(item.file)
            where = f"line {line}, " if line is not None else ""
            note = (f"{item.file}: {n} byte{'s that are' if n > 1 else ' that is'} not UTF-8 "
                    f"{'were' if n > 1 else 'was'} read as U+FFFD (the first: {where}...{near}...); referee reads "
                    "UTF-8: convert the file (e.g. iconv -f LATIN1 -t UTF-8) to audit the text as written")
            item = replace(item, notes=(*item.notes, note))
            count.first = None
        seen = count.n
        yield item
