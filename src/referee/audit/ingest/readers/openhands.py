"""Reader for OpenHands sessions: `sessions/<id>/events/<n>.json`, read in id order; also a trajectory
file (a JSON list of the same events, JSONL, or the export `{"trajectory": [...]}`) and evaluation records that
carry them as `history`.

Events are what OpenHands' `event_to_dict` writes: an action (`action`, `args`, `source`, `id`) or an
observation (`observation`, `content`, `extras`, `cause`: the id of the action it answers).

- task: the first user `message` action;
- actions: the agent's `run` (command), `run_ipython` (code), `read`, `write`, `edit`, `browse` (url),
  `browse_interactive` (its BrowserGym call, e.g. `click('a51')`), MCP and delegate calls, with their
  arguments; `thought` and `message` never go into the args;
- observations, paired with their action by `cause`: `run` output with `[Command finished with exit
  code N]` (a non-zero code marks it `error`, as OpenHands does), `error` (always `error`), file
  contents and edit diffs, page text of `browse`, and user messages that answer an agent message;
- claim channel: every `thought`, the agent's `message`s (narration), and `finish` (its final thought,
  or `outputs.content`) or `reject` as the report; with no finish, the last agent message is the report;
- dropped: `system` and `recall` actions, agent-state, recall/microagent, condensation and `think`
  observations, screenshots, `tool_call_metadata` (the model's raw response: its words) and `llm_metrics`;
- gold: only in evaluation records (`test_result.report.resolved` or `test_result.resolved`), never evidence.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable, Iterator

from pydantic import ValidationError

from referee.audit.ingest.readers import is_openhands_event, trace_readers
from referee.audit.ingest.readers.mini_swe_agent import cap_text
from referee.audit.trace import SHAPE_ERRORS, Gold, Trace, TraceItem, record_error, shape_error, trace_error
from referee.core.jsonio.values import iter_json_values, loads

_EVENT_FILE = re.compile(r"^(\d+)\.json$")
# arguments that are the agent's words or harness settings, never what the action did
_DROP_ARGS = frozenset("thought message security_risk confirmation_state is_confirmed blocking hidden is_static "
                       "impl_source include_extra kernel_init_code wait_for_response browsergym_send_msg_to_user "
                       "return_axtree image_urls images_urls action_suffix timeout".split())
_SILENT_ACTIONS = frozenset("system recall change_agent_state null pause resume stop start summarize condensation "
                            "condensation_request".split())
_SILENT_OBS = frozenset("agent_state_changed null recall microagent workspace_context condense think "
                        "agent_condensation chat".split())
_REPORT_ACTIONS = frozenset({"finish", "reject"})


def event_files(folder: Path) -> list[tuple[int, Path]]:
    """The `<n>.json` event files of a folder, in id order."""
    out = []
    for p in Path(folder).iterdir():
        m = _EVENT_FILE.match(p.name)
        if m and p.is_file():
            out.append((int(m.group(1)), p))
    return sorted(out)


def _events_dir(path: Path) -> Path | None:
    p = Path(path)
    if (p / "events").is_dir() and event_files(p / "events"):
        return p / "events"
    files = event_files(p) if p.is_dir() else []
    if files:
        try:
            first = loads(files[0][1].read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if is_openhands_event(first):
            return p
    return None


def is_session_dir(path: Path) -> bool:
    """An OpenHands session (`sessions/<id>/` holding `events/<n>.json`), or its `events/` folder.

    >>> import tempfile; d = Path(tempfile.mkdtemp()); (d / "events").mkdir()
    >>> is_session_dir(d), (d / "events" / "0.json").write_text('{"action": "message", "args": {}}') > 0
    (False, True)
    >>> is_session_dir(d), is_session_dir(d / "events")
    (True, True)
    """
    return Path(path).is_dir() and _events_dir(path) is not None


def _as_dict(v: Any) -> dict:
    return v if isinstance(v, dict) else {}


def _exit_code(extras: dict) -> int | None:
    meta = extras.get("metadata")
    code = meta.get("exit_code") if isinstance(meta, dict) else None
    if code is None:
        code = extras.get("exit_code")  # before OpenHands moved it into metadata
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _content(v: Any) -> str:
    if isinstance(v, list):
        return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in v)
    return "" if v is None else str(v)


def observation(ev: dict) -> dict | None:
    """The trace v1 observation of one OpenHands observation event (None for those the trace drops).

    >>> o = observation({"observation": "run", "content": "no such file", "extras": {"command": "cat x",
    ...     "metadata": {"exit_code": 1}}})
    >>> o["text"], o["data"]["exit_code"], o["error"]
    ('no such file\\n[Command finished with exit code 1]', 1, True)
    """
    kind = ev.get("observation")
    if kind in _SILENT_OBS:
        return None
    extras = _as_dict(ev.get("extras"))
    text = _content(ev.get("content"))
    data: dict[str, Any] = {}
    error = kind in ("error", "user_rejected")
    if kind == "run":
        code = _exit_code(extras)
        if isinstance(extras.get("command"), str):
            data["command"] = extras["command"]
        if code is not None:
            data["exit_code"] = code
            text = f"{text.rstrip()}\n[Command finished with exit code {code}]" if code != -1 else \
                f"{text.rstrip()}\n[The command has no exit code yet (still running or timed out)]"
            error = code != 0
    elif kind == "browse":
        for key in ("url",):
            if isinstance(extras.get(key), str):
                data[key] = extras[key]
        browser_err = extras.get("last_browser_action_error")
        if isinstance(browser_err, str) and browser_err.strip():
            data["last_browser_action_error"] = browser_err.strip()
            text = f"last browser action error: {browser_err.strip()}\n{text}"
        error = error or extras.get("error") is True or bool(data.get("last_browser_action_error"))
    else:
        for key in ("path", "code", "name", "url"):
            if isinstance(extras.get(key), str):
                data[key] = extras[key]
    if ev.get("success") is False:
        error = True
    text, cut = cap_text(text)
    if cut:
        data["cut_chars"] = cut
    out: dict[str, Any] = {"text": text}
    if data:
        out["data"] = data
    out["error"] = error
    return out


def _action(ev: dict) -> dict:
    """The trace v1 action of one agent action event: its name and the arguments that say what it did."""
    kind = str(ev.get("action"))
    args = {k: v for k, v in _as_dict(ev.get("args")).items() if k not in _DROP_ARGS and v is not None}
    if kind == "browse_interactive":
        code = str(args.get("browser_actions") or "").strip()
        if code and "\n" not in code and re.match(r"^[A-Za-z_]\w*\(.*\)$", code, re.S):
            return {"name": code, "args": {}}  # a single BrowserGym call, read like BrowserGym's own
    if kind in ("read", "edit") and args.get("command") == "view":
        kind = "read"
    return {"name": kind, "args": args}


def _thought(args: dict) -> str:
    t = args.get("thought")
    if isinstance(t, dict):  # newer OpenHands: {"text", "reasoning_content"}
        t = t.get("text") or ""
    return t.strip() if isinstance(t, str) else ""


def _report(ev: dict) -> str:
    args = _as_dict(ev.get("args"))
    outputs = _as_dict(args.get("outputs"))
    if ev.get("action") == "reject":
        reason = outputs.get("reason")
        return "Task is rejected by the agent." + (f" Reason: {reason}" if reason else "")
    for v in (args.get("final_thought"), outputs.get("content"), _thought(args), ev.get("message")):
        if isinstance(v, str) and v.strip():
            return v.strip()
    return "finish()"


def events_to_trace(events: Iterable[dict], *, run_id: str, meta: dict, task: str | None = None) -> dict:
    """A trace v1 dict from OpenHands events in id order (validate it with Trace.model_validate)."""
    steps: list[dict] = []
    by_id: dict[Any, dict] = {}
    pending: list[str] = []  # thoughts waiting for the next step
    waiting: dict | None = None  # the last agent message, until the user answers it
    report = last_message = None
    for ev in events:
        if not isinstance(ev, dict):
            continue
        source = ev.get("source")
        if "action" in ev:
            kind = ev.get("action")
            args = _as_dict(ev.get("args"))
            if kind in _SILENT_ACTIONS:
                continue
            if kind == "message":
                text = _content(args.get("content")) or _content(ev.get("message"))
                if source == "user":
                    if task is None:
                        task = text
                    elif waiting is not None:
                        waiting["observation"] = {"text": f"user: {text}", "error": False}
                        waiting = None
                    else:
                        steps.append({"observation": {"text": f"user: {text}", "error": False}})
                    continue
                step = {"action": {"name": "reply", "args": {}}, "narration": text}
                steps.append(step)
                waiting, last_message = step, text
                continue
            if kind == "think":
                if _thought(args):
                    pending.append(_thought(args))
                continue
            if kind in _REPORT_ACTIONS:
                report = _report(ev)
                step = {"action": {"name": kind, "args": {}}}
            else:
                step = {"action": _action(ev)}
            if _thought(args):
                pending.append(_thought(args))
            if pending:
                step["narration"] = "\n\n".join(pending)
                pending = []
            steps.append(step)
            by_id[ev.get("id")] = step
        elif "observation" in ev:
            obs = observation(ev)
            if obs is None:
                continue
            target = by_id.get(ev.get("cause"))
            if target is None or "observation" in target:
                target = next((s for s in reversed(steps) if "action" in s and "observation" not in s
                               and s["action"]["name"] != "reply"), None)
            if target is None:
                steps.append({"observation": obs})
            else:
                target["observation"] = obs
    if report is None and last_message:
        report = last_message
    if pending and steps:
        steps[-1]["narration"] = "\n\n".join(filter(None, [steps[-1].get("narration"), *pending]))
    return {"trace_version": 1, "run_id": run_id, "task": task or "", "steps": steps, "report": report,
            "meta": meta}


def _session_meta(folder: Path) -> dict:
    meta: dict[str, Any] = {"source": "openhands"}
    for cand in (folder / "metadata.json", folder.parent / "metadata.json"):
        try:
            doc = loads(cand.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict):
            for src, dst in (("llm_model", "model"), ("title", "title"), ("selected_repository", "group")):
                if isinstance(doc.get(src), str) and doc[src]:
                    meta[dst] = doc[src]
        break
    return meta


def _validated(raw: dict, *, file: str, line: int | None, rid: str) -> TraceItem:
    if not raw["task"].strip():
        return TraceItem(file=file, line=line, run_id=rid, error=record_error(
            "openhands: no task (no user message before the agent's first action)", file=file, line=line,
            run_id=rid))
    try:
        return TraceItem(file=file, line=line, run_id=rid, trace=Trace.model_validate(raw))
    except ValidationError as exc:
        return TraceItem(file=file, line=line, run_id=rid,
                         error=trace_error(exc, raw, file=file, line=line, what="openhands"))


def read_session(path: Path) -> TraceItem:
    """The one trace of a session folder (`sessions/<id>/` or its `events/`)."""
    path = Path(path)
    events_dir = _events_dir(path)
    session = path.parent if path.name == "events" and events_dir == path else path
    file, rid = str(path), session.name
    if events_dir is None:
        return TraceItem(file=file, line=None, run_id=rid, error=record_error(
            "openhands: no events/<n>.json in this folder", file=file, line=None, run_id=rid))
    events = []
    for _, f in event_files(events_dir):
        try:
            events.append(loads(f.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            return TraceItem(file=str(f), line=None, run_id=rid, error=record_error(
                f"openhands: an unreadable event ({type(exc).__name__}: {str(exc)[:120]}): the session is not "
                "audited with a gap in it", file=str(f), line=None, run_id=rid))
    try:
        raw = events_to_trace(events, run_id=rid, meta=_session_meta(session))
    except SHAPE_ERRORS as exc:
        return TraceItem(file=file, line=None, run_id=rid, error=shape_error(exc, "openhands", file=file, line=None,
                                                                             run_id=rid))
    return _validated(raw, file=file, line=None, rid=rid)


def _eval_gold(rec: dict) -> Gold | None:
    tr = _as_dict(rec.get("test_result"))
    rep = tr["report"] if isinstance(tr.get("report"), dict) else tr
    resolved = rep.get("resolved") if isinstance(rep, dict) else None
    return Gold(completed=resolved, source="openhands test_result") if isinstance(resolved, bool) else None


def read_file(path: Path) -> Iterator[TraceItem]:
    """Traces of a file: a JSON list (or JSONL) of events, or the trajectory export `{"trajectory": [events]}`, is one
    run; evaluation records with `history` one each."""
    file, stem = str(path), Path(path).name.split(".")[0]
    loose: list[dict] = []
    first_line: int | None = None
    broken = False  # a file of events with an unreadable one is not audited with a gap in it
    for n, jv in enumerate(iter_json_values(path)):
        if jv.error:
            broken = True
            yield TraceItem(file=file, line=jv.line, run_id=stem, error=record_error(
                f"openhands: {jv.error} (a run is not audited with an unreadable event in it)", file=file,
                line=jv.line, run_id=stem))
            continue
        v = jv.value
        if isinstance(v, dict) and isinstance(v.get("trajectory"), list) and v["trajectory"] and all(
                is_openhands_event(e) for e in v["trajectory"]):
            first_line = jv.line if first_line is None else first_line
            loose.extend(v["trajectory"])  # the trajectory export ({"trajectory": [events]}): the events of one run
            continue
        if isinstance(v, dict) and isinstance(v.get("history"), list):
            rid = str(v.get("instance_id") or f"{stem}-{n}")
            meta: dict[str, Any] = {"source": "openhands"}
            if "__" in rid:
                meta["group"] = rid.split("__")[0]
            task = v.get("instruction") if isinstance(v.get("instruction"), str) else None
            try:
                raw = events_to_trace(v["history"], run_id=rid, meta=meta, task=task)
            except SHAPE_ERRORS as exc:
                yield TraceItem(file=file, line=jv.line, run_id=rid,
                                error=shape_error(exc, "openhands", file=file, line=jv.line, run_id=rid))
                continue
            item = _validated(raw, file=file, line=jv.line, rid=rid)
            if item.trace is not None:
                item = TraceItem(file=file, line=jv.line, run_id=rid, trace=item.trace, gold=_eval_gold(v))
            yield item
        elif is_openhands_event(v):
            first_line = jv.line if first_line is None else first_line
            loose.append(v)
        else:
            yield TraceItem(file=file, line=jv.line, run_id=stem, error=record_error(
                "openhands: neither an event (action/observation) nor a record with 'history'", file=file,
                line=jv.line, run_id=stem))
    if loose and not broken:
        if all(isinstance(e.get("id"), int) for e in loose):
            loose.sort(key=lambda e: e["id"])
        try:
            raw = events_to_trace(loose, run_id=stem, meta={"source": "openhands"})
        except SHAPE_ERRORS as exc:
            yield TraceItem(file=file, line=first_line, run_id=stem,
                            error=shape_error(exc, "openhands", file=file, line=first_line, run_id=stem))
            return
        yield _validated(raw, file=file, line=first_line, rid=stem)


@trace_readers.register("openhands")
def read_openhands(path: Path) -> Iterator[TraceItem]:
    """An OpenHands session (events/<n>.json in id order) or trajectory file: one trace each, finish as report."""
    if Path(path).is_dir():
        yield read_session(path)
    else:
        yield from read_file(path)


read_openhands.sniffs = ("a folder holding events/<n>.json (a session) or <n>.json events; a file whose first "
                         "value is an event (action + args, observation + content) or a record with 'history'")
read_openhands.needs = "nothing beyond referee"
