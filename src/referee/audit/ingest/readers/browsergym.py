"""Reader for BrowserGym / AgentLab experiment folders: one run per folder, gold from `summary_info.json`.

What an experiment folder holds (BrowserGym's `ExpArgs.run`, AgentLab's copy of it):
`summary_info.json` (`cum_reward`, `err_msg`, `terminated`, `truncated`), `step_N.pkl.gz` (a
`StepInfo`: `obs`, `action`, `agent_info`, `reward`), `goal_object.pkl.gz`, `screenshot_step_N.png`,
and, where it was exported, a JSON tape (`tape.json`). Step N holds the observation that *followed*
action N-1 and the action chosen on it, so action N is paired with the observation of step N+1;
step 0's observation is the initial one.

- task: the goal (`goal_object` text parts, else the legacy `goal` string);
- actions: the action strings as written (`click('a51')`, `fill('b12', 'hi')`), one step per call;
- observations: the page after each action: url, `last_action_error` (which marks the step
  `error`), user chat messages that came in, and the accessibility tree (`axtree_txt`, else the
  raw `axtree_object` flattened, else pruned HTML); the screenshot as a file name. A crashed
  experiment (`err_msg`) ends the trace with an `error` observation, since it can only count against a claim;
- claim channel: the last `send_msg_to_user(...)` / `report_infeasible(...)` call is the report
  (as written, so the claim reader sees which one); `agent_info.think` is narration. The agent's
  own chat messages and `last_action` are never put in an observation: they repeat its words;
- gold: `cum_reward > 0` means completed (never evidence); dropped: `agent_info.chat_messages` (the
  prompt), stats, profiling, `exp_args.pkl` (never loaded: it pickles the agent's own classes).

Pickles are read only with `--allow-pickle`, through `safepickle` (an allow-list of data classes);
a folder with a JSON tape is read from the tape and needs no pickle.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from pydantic import ValidationError

from referee.audit.ingest.readers import ReadOptions, trace_readers
from referee.audit.ingest.readers.mini_swe_agent import cap_text
from referee.audit.ingest.readers.safepickle import PickleRefused, load_file
from referee.audit.trace import SHAPE_ERRORS, Gold, Trace, TraceItem, record_error, shape_error, trace_error
from referee.core.jsonio.values import loads

STEP_RE = re.compile(r"^step_(\d+)\.pkl\.gz$")
TAPE_NAMES = ("tape.json",)
REPORT_CALLS = ("send_msg_to_user", "report_infeasible")
_DIR_NAME = re.compile(r"_on_(?P<task>.+?)(?:_(?P<seed>\d+))?(?:_\d+)?$")


def step_files(path: Path) -> list[tuple[int, Path]]:
    """The `step_N.pkl.gz` files of an experiment folder, in step order."""
    out = []
    for p in Path(path).iterdir():
        m = STEP_RE.match(p.name)
        if m:
            out.append((int(m.group(1)), p))
    return sorted(out)


def is_experiment_dir(path: Path) -> bool:
    """A BrowserGym / AgentLab experiment folder: `summary_info.json`, step pickles, or a JSON tape.

    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> is_experiment_dir(d), (d / "summary_info.json").write_text("{}") > 0, is_experiment_dir(d)
    (False, True, True)
    """
    p = Path(path)
    if not p.is_dir():
        return False
    if (p / "summary_info.json").is_file() or (p / "step_0.pkl.gz").is_file():
        return True
    return any((p / n).is_file() for n in TAPE_NAMES) and _tape_kind(p / TAPE_NAMES[0]) is not None


def needs_pickle(path: Path) -> bool:
    """True when the folder can only be read from its pickles (no JSON tape beside them)."""
    p = Path(path)
    return not _tape_file(p) and bool(step_files(p))


def _tape_file(path: Path) -> Path | None:
    for n in TAPE_NAMES:
        if (path / n).is_file() and _tape_kind(path / n) is not None:
            return path / n
    return None


def _tape_kind(path: Path) -> str | None:
    """Which export a tape file is: BrowserGym's `ExpResult.tape` or AgentLab's `as_tape`; None if neither."""
    try:
        head = path.read_bytes()[:200_000].decode("utf-8", errors="replace")
    except OSError:
        return None
    if '"browsergym_observation"' in head or '"browsergym_action"' in head:
        return "browsergym"
    if '"dict_observation"' in head:
        return "agentlab"
    return None


# -- one step of the experiment, whatever it was read from ------------------------------------------

@dataclass
class _Entry:
    """Step N: the observation it starts with, and the action chosen on it (and the thought before it)."""

    step: int
    obs: dict | None = None
    action: str | None = None
    think: str | None = None
    screenshot: str | None = None


def split_actions(code: str) -> list[str]:
    """The calls of one BrowserGym action string (a multi-action is one call per line), each as written.

    >>> split_actions("fill('b12', 'milk')\\nclick('b13')")
    ["fill('b12', 'milk')", "click('b13')"]
    >>> split_actions("click(")
    ['click(']
    """
    code = code.strip()
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return [code] if code else []
    calls = []
    for node in tree.body:
        seg = ast.get_source_segment(code, node)
        if seg and seg.strip():
            calls.append(seg.strip())
    return calls or ([code] if code else [])


def _call_name(call: str) -> str:
    m = re.match(r"\s*([A-Za-z_][\w.]*)\s*\(", call)
    return m.group(1).rsplit(".", 1)[-1] if m else ""


def goal_text(goal_object: Any, goal: Any = None) -> tuple[str, int]:
    """The task from a BrowserGym goal: the text parts of `goal_object` (OpenAI-style content parts), else
    the legacy `goal` string; and how many image parts were left out.

    >>> goal_text(({"type": "text", "text": "Add milk."}, {"type": "image_url", "image_url": "data:..."}))
    ('Add milk.', 1)
    """
    texts, images = [], 0
    if isinstance(goal_object, str):
        goal_object = [goal_object]
    for part in goal_object if isinstance(goal_object, (list, tuple)) else ():  # a goal of another shape: no parts
        if isinstance(part, dict):
            if part.get("type") == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif "image" in str(part.get("type", "")):
                images += 1
        elif isinstance(part, str):
            texts.append(part)
    text = "\n".join(t for t in texts if t.strip())
    if not text.strip() and isinstance(goal, str):
        text = goal
    return text.strip(), images


def flatten_axtree(ax: Any, limit: int = 4000) -> str:
    """A raw accessibility tree (`{"nodes": [...]}` as the Chrome DevTools protocol gives it) as
    `[bid] role 'name'` lines, indented by depth, the form BrowserGym agents read.

    >>> flatten_axtree({"nodes": [{"nodeId": "1", "role": {"value": "RootWebArea"}, "name": {"value": "Shop"},
    ...     "childIds": ["2"]}, {"nodeId": "2", "role": {"value": "button"}, "name": {"value": "Buy"},
    ...     "browsergym_id": "a7", "childIds": []}]})
    "RootWebArea 'Shop'\\n\\t[a7] button 'Buy'"
    """
    nodes = ax.get("nodes") if isinstance(ax, dict) else None
    if not isinstance(nodes, list) or not nodes:
        return ""
    by_id = {str(n.get("nodeId")): n for n in nodes if isinstance(n, dict)}
    lines: list[str] = []
    stack: list[tuple[Any, int]] = [(nodes[0], 0)]
    seen: set[int] = set()
    while stack and len(lines) < limit:
        node, depth = stack.pop()
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        role = node["role"].get("value") if isinstance(node.get("role"), dict) else None
        name = node["name"].get("value") if isinstance(node.get("name"), dict) else None
        shown = not node.get("ignored") and role not in (None, "none", "generic", "InlineTextBox") and \
            (name or role == "RootWebArea")
        if shown:
            bid = node.get("browsergym_id")
            lines.append("\t" * depth + (f"[{bid}] " if bid else "") + f"{role} {str(name or '')!r}")
        kids = [by_id.get(str(c)) for c in node.get("childIds") or []]
        stack.extend((k, depth + (1 if shown else 0)) for k in reversed(kids) if k is not None)
    return "\n".join(lines)


def _page(obs: dict) -> str:
    for key in ("axtree_txt", "axtree"):
        if isinstance(obs.get(key), str) and obs[key].strip():
            return obs[key]
    flat = flatten_axtree(obs.get("axtree_object"))
    if flat:
        return flat
    for key in ("pruned_html", "dom_txt"):
        if isinstance(obs.get(key), str) and obs[key].strip():
            return obs[key]
    return ""


def _user_messages(obs: dict) -> list[str]:
    """The user's chat messages in an observation (cumulative); the agent's own ones are claim channel."""
    out = []
    for m in obs.get("chat_messages") or ():
        if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("message"), str):
            out.append(m["message"])
    return out


def observe(obs: dict, seen_user: int, screenshot: str | None) -> tuple[dict, int]:
    """One observation (trace v1 dict) from a BrowserGym `obs`; `seen_user` user messages were shown before."""
    url = obs["url"] if isinstance(obs.get("url"), str) else None
    err = str(obs["last_action_error"]) if isinstance(obs.get("last_action_error"), str) else ""
    users = _user_messages(obs)
    lines = [f"url: {url}"] if url else []
    if err.strip():
        lines.append(f"last action error: {err.strip()}")
    lines += [f"user: {m}" for m in users[seen_user:]]
    page = _page(obs)
    if page:
        lines.append(page)
    text, cut = cap_text("\n".join(lines))
    data: dict[str, Any] = {}
    if url:
        data["url"] = url
    pages = obs.get("open_pages_urls")
    if isinstance(pages, (list, tuple)) and len(pages) > 1:
        data["open_pages_urls"] = [str(u) for u in pages]
    if err.strip():
        data["last_action_error"] = err.strip()
    if cut:
        data["cut_chars"] = cut
    out: dict[str, Any] = {"text": text, "error": bool(err.strip())}
    if data:
        out["data"] = data
    if screenshot:
        out["screenshot"] = screenshot
    return out, max(seen_user, len(users))


def _agent_chat(obs: dict | None) -> list[dict]:
    return [m for m in (obs or {}).get("chat_messages") or () if isinstance(m, dict)
            and m.get("role") in ("assistant", "infeasible") and isinstance(m.get("message"), str)]


def _report_from_chat(first: dict | None, last: dict | None) -> str | None:
    """The agent's last chat message, as the call that sent it, when no action string shows one. Messages
    already in the first observation are the environment's greeting, not the agent's."""
    said = _agent_chat(last)[len(_agent_chat(first)):]
    if not said:
        return None
    m = said[-1]
    name = "send_msg_to_user" if m["role"] == "assistant" else "report_infeasible"
    return f"{name}({json.dumps(m['message'], ensure_ascii=False)})"


def entries_to_trace(entries: list[_Entry], *, run_id: str, task: str, meta: dict,
                     err_msg: str | None = None) -> dict:
    """A trace v1 dict from the experiment's steps: action N paired with the observation of step N+1."""
    seen = 0
    initial = None
    if entries and entries[0].obs is not None:
        initial, seen = observe(entries[0].obs, 0, entries[0].screenshot)
    steps: list[dict] = []
    report = None
    for k, e in enumerate(entries):
        if e.action is None or not str(e.action).strip():
            continue
        nxt = entries[k + 1] if k + 1 < len(entries) else None
        after = None
        if nxt is not None and nxt.obs is not None:
            after, seen = observe(nxt.obs, seen, nxt.screenshot)
        calls = split_actions(str(e.action))
        for i, call in enumerate(calls):
            step: dict[str, Any] = {"action": {"name": call, "args": {}}}
            if i == 0 and e.think and e.think.strip():
                step["narration"] = e.think.strip()
            if i == len(calls) - 1 and after is not None:
                step["observation"] = after
            steps.append(step)
            if _call_name(call) in REPORT_CALLS:
                report = call
    if report is None and entries:
        report = _report_from_chat(entries[0].obs, entries[-1].obs)
    if err_msg:
        first = err_msg.strip().splitlines()
        steps.append({"observation": {"text": "the experiment ended with an error: " + " ".join(first[:3])[:500],
                                      "error": True}})
    return {"trace_version": 1, "run_id": run_id, "task": task, "initial_observation": initial, "steps": steps,
            "report": report, "meta": meta}


# -- reading an experiment folder ---------------------------------------------------------------------

def _summary(path: Path) -> tuple[dict, str | None]:
    f = path / "summary_info.json"
    if not f.is_file():
        return {}, None
    try:
        doc = loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return {}, f"summary_info.json: {exc}"
    return (doc if isinstance(doc, dict) else {}), None


def _shot(path: Path, n: int) -> str | None:
    for ext in ("png", "jpg"):
        if (path / f"screenshot_step_{n}.{ext}").is_file():
            return f"screenshot_step_{n}.{ext}"
    return None


def _from_pickles(path: Path) -> tuple[list[_Entry], Any]:
    """Entries from the step pickles, and the goal object (from goal_object.pkl.gz when a step points there)."""
    entries: list[_Entry] = []
    goal_object: Any = None
    for n, f in step_files(path):
        try:
            info = load_file(f)
        except PickleRefused as exc:
            raise PickleRefused(f"{f.name}: {exc}") from None
        obs = getattr(info, "obs", None)
        obs = dict(obs) if isinstance(obs, dict) else None
        agent_info: Any = getattr(info, "agent_info", None)
        think = agent_info.get("think") if hasattr(agent_info, "get") else None
        action = getattr(info, "action", None)
        if obs is not None and "goal_object" in obs and obs["goal_object"] is None and goal_object is None \
                and (path / "goal_object.pkl.gz").is_file():
            try:
                goal_object = load_file(path / "goal_object.pkl.gz")
            except PickleRefused as exc:
                raise PickleRefused(f"goal_object.pkl.gz: {exc}") from None
        entries.append(_Entry(step=n, obs=obs, action=action if isinstance(action, str) else None,
                              think=think if isinstance(think, str) else None, screenshot=_shot(path, n)))
    return entries, goal_object


def _from_tape(tape_file: Path) -> tuple[list[_Entry], dict]:
    """Entries from a JSON tape: BrowserGym's `browsergym_observation/_thought/_action` steps or AgentLab's
    `dict_observation` / `assistant_thought` / `assistant` steps; and the tape's metadata."""
    doc = loads(tape_file.read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or not isinstance(doc.get("steps"), list):
        raise ValueError("a tape is an object with a 'steps' list")
    entries: list[_Entry] = []
    think: list[str] = []
    for n, s in enumerate(doc["steps"]):
        if not isinstance(s, dict):
            continue
        kind = str(s.get("kind", ""))
        step_no = s["metadata"].get("step") if isinstance(s.get("metadata"), dict) else None
        if kind in ("browsergym_observation", "dict_observation"):
            content = s.get("content")
            if kind == "dict_observation" and not isinstance(content, (str, type(None))):
                raise ValueError(f"tape step {n}: a dict_observation's content is {type(content).__name__}, "
                                 "not JSON text")
            obs = s.get("obs") if kind == "browsergym_observation" else loads(content or "null")
            shot = s.get("screenshot")
            entries.append(_Entry(step=int(step_no) if isinstance(step_no, int) else len(entries),
                                  obs=obs if isinstance(obs, dict) else None,
                                  screenshot=Path(shot).name if isinstance(shot, str) and shot else None))
            think = []
        elif kind in ("browsergym_thought", "assistant_thought"):
            text = s.get("text") if kind == "browsergym_thought" else s.get("content")
            if isinstance(text, str):
                think.append(text)
        elif kind in ("browsergym_action", "assistant"):
            if kind == "assistant":
                call = s.get("content") if isinstance(s.get("content"), str) else None
            else:
                args: list = s["arguments"] if isinstance(s.get("arguments"), list) else []
                call = f"{s.get('name')}({', '.join(repr(a) for a in args)})"
            if call is None:
                continue
            if not entries:
                entries.append(_Entry(step=0))
            e = entries[-1]
            e.action = call if e.action is None else f"{e.action}\n{call}"
            if think:
                e.think = "\n".join(think)
    meta = doc["metadata"] if isinstance(doc.get("metadata"), dict) else {}
    return entries, meta


def _gold(summary: dict, tape_meta: dict) -> Gold | None:
    reward = summary.get("cum_reward")
    source = "browsergym summary_info cum_reward"
    if not isinstance(reward, (int, float)) or isinstance(reward, bool):
        result = tape_meta["result"] if isinstance(tape_meta.get("result"), dict) else {}
        reward = result.get("cum_reward", tape_meta.get("reward"))
        source = "browsergym tape reward"
    if isinstance(reward, (int, float)) and not isinstance(reward, bool):
        return Gold(completed=reward > 0, source=source)  # compared as it is: an integer too large for a float too
    return None


def _sniffed_as(path: Path) -> str:
    """How a file given to a folder reader would be read without --format, in a few words."""
    from referee.audit.ingest.readers import sniff_format

    try:
        return f"it reads as {sniff_format(path)}"
    except Exception:  # noqa: BLE001 (the hint only: the file's own reader says what is wrong with it)
        return "its format is sniffed from its content"


def read_experiment(path: Path, options: ReadOptions | None = None) -> TraceItem:
    """The one TraceItem of an experiment folder (an item with `error` when it cannot be read)."""
    path = Path(path)
    file, rid = str(path), path.name
    options = options or ReadOptions()

    def bad(msg: str, fix: str = "fix the folder or pass --on-error skip") -> TraceItem:
        err = record_error(f"browsergym: {msg}", file=file, line=None, run_id=rid)
        err.fix = fix
        return TraceItem(file=file, line=None, run_id=rid, error=err)

    if not path.is_dir():  # --format browsergym given a file
        return bad("reads an experiment folder (summary_info.json, step_*.pkl.gz or tape.json), not a file",
                   f"give the experiment's folder, or leave out --format ({_sniffed_as(path)})")
    summary, summary_problem = _summary(path)
    tape = _tape_file(path)
    goal_object: Any = None
    tape_meta: dict = {}
    try:
        if tape is not None:
            entries, tape_meta = _from_tape(tape)
            for e in entries:
                e.screenshot = e.screenshot or _shot(path, e.step)
        elif step_files(path):
            if not options.allow_pickle:
                return bad("the steps are only in pickles (step_*.pkl.gz), and loading a pickle can run code",
                           "pass --allow-pickle to read them with referee's restricted unpickler (data classes only), "
                           "or export the experiment's JSON tape (tape.json)")
            entries, goal_object = _from_pickles(path)
        else:
            return bad("no steps: neither step_*.pkl.gz nor a JSON tape (tape.json)"
                       + (f"; {summary_problem}" if summary_problem else ""))
    except PickleRefused as exc:
        return bad(f"pickle refused: {exc}", "read only experiment folders you trust the origin of; referee loads "
                   "no class outside its allow-list")
    except (OSError, *SHAPE_ERRORS) as exc:  # a tape of an unexpected shape: this folder, never the audit
        return bad(f"{type(exc).__name__}: {str(exc)[:200]}")
    first = next((e.obs for e in entries if e.obs is not None), None) or {}
    task, images = goal_text(first.get("goal_object") or goal_object, first.get("goal"))
    if not task:
        return bad("no goal in the first observation (goal_object or goal)")
    m = _DIR_NAME.search(rid)
    meta: dict[str, Any] = {"source": "browsergym", "exp_dir": file}
    if m:
        meta["group"] = meta["task_name"] = m.group("task")
    for key in ("n_steps", "cum_reward", "terminated", "truncated"):
        if key in summary:
            meta[key] = summary[key]
    if images:
        meta["goal_images_dropped"] = images
    meta["read_from"] = "tape" if tape is not None else "pickles"
    err_msg = summary.get("err_msg") if isinstance(summary.get("err_msg"), str) else None
    try:
        raw = entries_to_trace(entries, run_id=rid, task=task, meta=meta, err_msg=err_msg)
        trace = Trace.model_validate(raw)
    except ValidationError as exc:
        return TraceItem(file=file, line=None, run_id=rid,
                         error=trace_error(exc, {"run_id": rid}, file=file, line=None, what="browsergym"))
    except SHAPE_ERRORS as exc:
        return TraceItem(file=file, line=None, run_id=rid,
                         error=shape_error(exc, "browsergym", file=file, line=None, run_id=rid))
    gold = _gold(summary, tape_meta)
    return TraceItem(file=file, line=None, run_id=rid, trace=trace, gold=gold,
                     notes=(f"{file}/{summary_problem}: this run has no gold",) if summary_problem and gold is None
                     else ())


@trace_readers.register("browsergym")
def read_browsergym(path: Path, options: ReadOptions | None = None) -> Iterator[TraceItem]:
    """A BrowserGym / AgentLab experiment folder: one trace (action N paired with step N+1), gold from cum_reward."""
    yield read_experiment(path, options)


read_browsergym.takes_options = True
read_browsergym.sniffs = ("a folder with summary_info.json, step_*.pkl.gz or a JSON tape "
                          "(tape.json)")
# numpy is not needed: the restricted unpickler answers numpy's arrays with inert stand-ins (safepickle)
read_browsergym.needs = "--allow-pickle when the steps are only in pickles"
