"""Reader for mini-swe-agent trajectories (and SWE-agent `.traj` files): one bash command per step, gold from SWE-bench.

mini-swe-agent (`<instance>.traj.json`): `messages` alternate an assistant turn ("THOUGHT: ...
one ```bash block```") with a user turn holding what the harness saw (`<returncode>`,
`<output>`, a format-error or timeout message). Each assistant turn is a step: its bash
command is the action, the prose around it the narration (claim channel), the next user turn
the observation. The last assistant message, whole, is the report. The system prompt,
`info.submission`, `model_stats` and `config` never enter the trace.

SWE-agent (`<instance>.traj`): `trajectory` entries with `action`, `observation`, `thought`,
`response`; the task is the first user message of `history`.

Gold (`completed = resolved`) comes from a SWE-bench report `<instance_id>.report.json` beside
the file or in `../reports/`; it is never evidence.
"""

from __future__ import annotations

import glob
import re
from pathlib import Path
from typing import Any, Iterator

from pydantic import ValidationError

from referee.audit.ingest.readers import trace_readers
from referee.audit.trace import SHAPE_ERRORS, Gold, Trace, TraceItem, record_error, shape_error, trace_error
from referee.core.fsutil import read_regular
from referee.core.jsonio.values import iter_json_values, loads
from referee.errors import RefereeError

MAX_REPORT_BYTES = 16 << 20  # a SWE-bench report read for gold
MAX_OBSERVATION_CHARS = 20_000  # one observation's text; longer outputs keep head and tail around a note

_BASH_RE = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)  # mini-swe-agent's own action pattern
_RC_RE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_TIMEOUT_RE = re.compile(r"\s*(?:the|your) (?:last )?command\b.{0,2000}?\b(?:timed out|took (?:more than|too long)|"
                         r"was cancelled|has been killed)", re.I | re.S)
_REJECTED_RE = re.compile(r"\s*(?:please always provide exactly one action|your (?:last )?output (?:was not formatted|"
                          r"did not use)|your action could not be parsed)", re.I)
# The first opening only (atomic, from the text's start): when it has no closing, no later one has, so a search that
# tried each opening again was quadratic in a message of openings. The ISSUE body is read a blank run at a time
# (`\n\s*INSTRUCTIONS:` from each newline of a run rescanned it) and ends before the first newline of the blanks
# before `INSTRUCTIONS:`, as `(.*?)\n\s*INSTRUCTIONS:` did. (An ISSUE of blanks alone now matches nothing: the same
# task either way, the whole message.)
_PR_RE = re.compile(r"\A(?>.*?<pr_description>)(.*?)</pr_description>", re.S)
_ISSUE_RE = re.compile(r"\A(?>.*?\bISSUE:\s*\n)((?:(?>\S++|\s++(?!INSTRUCTIONS:)|[^\S\n]++))*?)"
                       r"\n\s*INSTRUCTIONS:", re.S)
_PR_BOILERPLATE = re.compile(r"^\s*Consider the following PR description:\s*", re.I)
# the first `__` commits (atomic): if the id after it is not `NAME-NUMBER`, it is not after a later one either
_INSTANCE_RE = re.compile(r"^(?>([^/\s]+?)__)([^/\s]+)-\d+$")


def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def run_stem(path: Path) -> str:
    """The file name without `.json` and `.traj`: the instance id SWE-bench runners name files by.

    >>> run_stem(Path("trajs/astropy__astropy-13033.traj.json")), run_stem(Path("x/django__django-1.traj"))
    ('astropy__astropy-13033', 'django__django-1')
    """
    name = Path(path).name
    for suffix in (".json", ".jsonl", ".traj"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
    return name


def swe_group(instance_id: str) -> str | None:
    """The repository of a SWE-bench instance id, or None when the id has another shape.

    >>> swe_group("astropy__astropy-13033"), swe_group("scikit-learn__scikit-learn-25747"), swe_group("x")
    ('astropy/astropy', 'scikit-learn/scikit-learn', None)
    """
    m = _INSTANCE_RE.match(instance_id)
    return f"{m.group(1)}/{m.group(2)}" if m else None


# per line, its first "your task is" only: if no "." follows it on the line, none follows a later one (linear)
_ASK = re.compile(r"^(?>[^\n]*?(?=your task is))(your task is[^.\n]*+\.)", re.I | re.M)


def task_text(first_user: str) -> str:
    """The task of a SWE task prompt: what the instructions ask ("Your task is ... to fix the issue ..."),
    then the PR description (or SWE-agent's ISSUE); else the whole message. The issue alone often asks
    for nothing (it describes a bug), so without the ask the task would not say a change is wanted.

    >>> task_text("<pr_description>\\nConsider the following PR description:\\nFix the bug.\\n</pr_description>\\n"
    ...           "<instructions>Your task is to make changes to fix the issue.</instructions>")
    'Your task is to make changes to fix the issue.\\n\\nFix the bug.'
    >>> task_text("Rename foo to bar")
    'Rename foo to bar'
    """
    m = _PR_RE.search(first_user) or _ISSUE_RE.search(first_user)
    inner = _PR_BOILERPLATE.sub("", m.group(1)).strip() if m else ""
    if not inner:
        return first_user.strip()
    ask = _ASK.search(first_user[m.end():] if m else "")
    return f"{ask.group(1).strip()}\n\n{inner}" if ask else inner


def split_turn(content: str) -> tuple[str | None, str | None]:
    """(command, narration) of an assistant turn: the command of its one bash block, and the prose
    around it. With no block or several (the harness ran nothing) the whole turn is narration.

    >>> split_turn("THOUGHT: look first.\\n\\n```bash\\nls -la\\n```")
    ('ls -la', 'THOUGHT: look first.')
    >>> split_turn("THOUGHT: no command")
    (None, 'THOUGHT: no command')
    """
    # a block ends at a "\n```": searched only up to the last one, so each ```bash with no end after it fails at
    # once (the lazy body ran to the end of the turn from each of them: quadratic)
    last = content.rfind("\n```")
    blocks = list(_BASH_RE.finditer(content, 0, last + 4)) if last >= 0 else []
    if len(blocks) != 1:
        return None, content.strip() or None
    b = blocks[0]
    prose = (content[: b.start()].rstrip() + "\n\n" + content[b.end():].lstrip()).strip()
    return b.group(1).strip(), prose or None


def cap_text(text: str, limit: int = MAX_OBSERVATION_CHARS) -> tuple[str, int]:
    """The text cut to about `limit` characters (head and tail kept, a note between) and how many were cut.

    >>> cap_text("a" * 30 + "b" * 10, 20)
    ('aaaaaaaaaaaaaaa\\n[... 20 characters cut by the reader ...]\\nbbbbb', 20)
    """
    if len(text) <= limit:
        return text, 0
    head, tail = limit * 3 // 4, limit // 4
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters cut by the reader ...]\n{text[len(text) - tail:]}", cut


def _between(text: str, tag: str) -> str | None:
    start, end = text.find(f"<{tag}>"), text.rfind(f"</{tag}>")
    if start < 0 or end < start:
        return None
    body = text[start + len(tag) + 2: end]
    return body[1:] if body.startswith("\n") else body


def observation(message: str, *, rejected: bool = False) -> dict:
    """The observation of one harness message: the command's output, its return code, and `error`
    when the code is not 0, the command timed out, or the harness rejected the turn (`rejected`).

    >>> observation("<returncode>1</returncode>\\n<output>\\nno such file\\n</output>")
    {'text': 'no such file\\n', 'data': {'returncode': 1}, 'error': True}
    >>> observation("diff --git a/x b/x")
    {'text': 'diff --git a/x b/x', 'error': False}
    """
    rc_m = _RC_RE.search(message[:200])
    rc = int(rc_m.group(1)) if rc_m else None
    data: dict[str, Any] = {} if rc is None else {"returncode": rc}
    head, tail = _between(message, "output_head"), _between(message, "output_tail")
    if head is not None and tail is not None:  # the harness elided a long output itself
        elided = re.search(r"<elided_chars>\s*(\d+)", message)
        n = int(elided.group(1)) if elided else None
        data["elided_chars"] = n
        note = f"[... {n if n is not None else 'some'} characters elided by the agent harness ...]"
        text = f"{head}\n{note}\n{tail}"
    else:
        body = _between(message, "output")
        text = body if body is not None else message
    timeout = rc is None and bool(_TIMEOUT_RE.match(message[:3000]))
    if timeout:
        data["timeout"] = True
    text, cut = cap_text(text)
    if cut:
        data["cut_chars"] = cut
    error = rejected or timeout or (rc is not None and rc != 0) or bool(_REJECTED_RE.match(message))
    obs: dict[str, Any] = {"text": text}
    if data:
        obs["data"] = data
    obs["error"] = error
    return obs


def mini_to_trace(messages: list, *, run_id: str, meta: dict) -> dict:
    """A trace v1 dict from mini-swe-agent `messages` (validate it with Trace.model_validate).

    >>> t = mini_to_trace([{"role": "system", "content": "rules"},
    ...     {"role": "user", "content": "<pr_description>Fix x</pr_description>"},
    ...     {"role": "assistant", "content": "THOUGHT: check\\n```bash\\nls\\n```"},
    ...     {"role": "user", "content": "<returncode>0</returncode>\\n<output>\\na.py\\n</output>"}],
    ...     run_id="r", meta={})
    >>> t["task"], t["steps"][0]["action"], t["steps"][0]["observation"]["text"], t["report"]
    ('Fix x', {'name': 'bash', 'args': {'command': 'ls'}}, 'a.py\\n', 'THOUGHT: check\\n```bash\\nls\\n```')
    """
    convo = [m for m in messages if isinstance(m, dict) and m.get("role") not in ("system", "developer")]
    task: str | None = None
    steps: list[dict] = []
    waiting: dict | None = None  # the last step, until its observation comes
    report = None
    for m in convo:
        text = _text(m.get("content"))
        if m.get("role") == "assistant":
            command, narration = split_turn(text)
            step: dict[str, Any] = {"action": {"name": "bash", "args": {"command": command}}} if command else {}
            if narration:
                step["narration"] = narration
            steps.append(step)
            waiting, report = step, text
        elif task is None and not steps:
            task = task_text(text)
        elif waiting is not None:
            waiting["observation"] = observation(text, rejected="action" not in waiting)
            waiting = None
        else:  # a second harness message in a row: keep it as a bare observation
            steps.append({"observation": observation(text)})
    return {"trace_version": 1, "run_id": run_id, "task": task or "", "steps": steps, "report": report, "meta": meta}


def sweagent_to_trace(obj: dict, *, run_id: str, meta: dict) -> dict:
    """A trace v1 dict from a SWE-agent `.traj` object: `trajectory` steps, the task from `history`.

    >>> t = sweagent_to_trace({"history": [{"role": "user", "content": "ISSUE:\\nFix y\\n\\nINSTRUCTIONS:\\ngo"}],
    ...     "trajectory": [{"action": "submit\\n", "observation": "diff", "thought": "Done.",
    ...                     "response": "Done.\\n```\\nsubmit\\n```"}]}, run_id="r", meta={})
    >>> t["task"], t["steps"][0]["action"]["args"], t["steps"][0]["narration"], t["report"]
    ('Fix y', {'command': 'submit'}, 'Done.', 'Done.\\n```\\nsubmit\\n```')
    """
    history = [m for m in obj.get("history") or [] if isinstance(m, dict) and not m.get("is_demo")
               and m.get("message_type") != "demonstration"]  # a demonstration is another task's run
    first_user = next((_text(m.get("content")) for m in history if m.get("role") == "user"), "")
    steps: list[dict] = []
    report = None
    for entry in obj["trajectory"]:
        if not isinstance(entry, dict):
            continue
        command = str(entry.get("action") or "").strip()
        step: dict[str, Any] = {"action": {"name": "bash", "args": {"command": command}}} if command else {}
        thought = _text(entry.get("thought")).strip()
        if thought:
            step["narration"] = thought
        if entry.get("observation") is not None:
            step["observation"] = observation(_text(entry.get("observation")), rejected=not command)
        steps.append(step)
        said = _text(entry.get("response")) or _text(entry.get("thought"))
        if said.strip():
            report = said
    return {"trace_version": 1, "run_id": run_id, "task": task_text(first_user) if first_user else "",
            "steps": steps, "report": report, "meta": meta}


def _resolved(path: Path, run_id: str) -> bool | str:
    """The report's `resolved`, or why it gives none."""
    try:
        rep = loads(read_regular(path, max_bytes=MAX_REPORT_BYTES))
    except (OSError, ValueError, RefereeError) as exc:  # a FIFO, a huge, deep or broken file: no gold
        return f"{path}: a SWE-bench report that does not read ({str(exc)[:160]}): this run has no gold"
    if isinstance(rep, dict) and not isinstance(rep.get("resolved"), bool):  # the harness's {instance_id: {...}}
        inner = rep.get(run_id) if run_id in rep else (next(iter(rep.values())) if len(rep) == 1 else None)
        rep = inner
    if isinstance(rep, dict) and isinstance(rep.get("resolved"), bool):
        return rep["resolved"]
    return f"{path}: a SWE-bench report with no boolean 'resolved' for {run_id}: this run has no gold"


def _report_paths(traj: Path, run_id: str) -> Iterator[Path]:
    """Where a SWE-bench report of `run_id` may lie: `<run_id>.report.json` beside the trajectory or in
    `../reports/`, or as the harness writes it, `logs/<run_id>/report.json` or
    `logs/run_evaluation/<run>/<model>/<run_id>/report.json` beside `trajs/` (a trajectory in `trajs/` or in
    `trajs/<run_id>/`)."""
    name = f"{run_id}.report.json"
    yield traj.parent / name
    yield traj.parent.parent / "reports" / name
    roots = [traj.parent.parent] + ([traj.parent.parent.parent] if traj.parent.name == run_id else [])
    for root in roots:
        logs = root / "logs"
        yield logs / run_id / "report.json"
        try:
            yield from sorted(logs.glob(f"run_evaluation/*/*/{glob.escape(run_id)}/report.json"))
        except (OSError, ValueError):  # a folder that cannot be listed, a run_id no path can hold: no gold there
            continue


def find_gold(traj: Path, run_id: str) -> tuple[Gold | None, str | None]:
    """Gold from the SWE-bench report of the run (`_report_paths`: beside the trajectory, in `../reports/`, or in the
    harness's `logs/`), and why a report that is there gave none.

    >>> import tempfile; d = Path(tempfile.mkdtemp()); (d / "trajs").mkdir(); (d / "reports").mkdir()
    >>> _ = (d / "reports" / "a__b-1.report.json").write_text('{"a__b-1": {"resolved": true}}')
    >>> find_gold(d / "trajs" / "a__b-1.traj.json", "a__b-1"), find_gold(d / "trajs" / "c.traj", "c")
    ((Gold(completed=True, source='swe-bench report'), None), (None, None))
    """
    why = None
    for candidate in _report_paths(traj, run_id):
        try:
            found = candidate.is_file()
        except OSError:  # a run_id no file system can name (too long, odd bytes): no gold, no crash
            found = False
        if found:
            resolved = _resolved(candidate, run_id)
            if isinstance(resolved, bool):
                return Gold(completed=resolved, source="swe-bench report"), None
            why = why or resolved
    return None, why


def _meta(obj: dict, run_id: str, source: str) -> dict:
    info = obj.get("info")
    if not isinstance(info, dict):
        info = {}
    meta: dict[str, Any] = {"source": source}
    group = swe_group(run_id)
    if group:
        meta["group"] = group
    if info.get("exit_status") is not None:
        meta["exit_status"] = str(info["exit_status"])
    if info.get("mini_version"):
        meta["agent"] = f"mini-swe-agent {info['mini_version']}"
    config = info.get("config")
    model_config = config.get("model") if isinstance(config, dict) else None
    model = model_config.get("model_name") if isinstance(model_config, dict) else None
    if isinstance(model, str):
        meta["model"] = model
    return meta


_NOT_A_TRAJECTORY = "mini-swe-agent: expected a trajectory with 'messages' (mini-swe-agent) or 'trajectory' (SWE-agent)"


def _to_trace_dict(obj: dict[str, Any], rid: str) -> dict[str, Any] | str:
    """A trajectory as a trace v1 dict, or why it is not one."""
    if isinstance(obj.get("messages"), list):
        if not any(isinstance(m, dict) and m.get("role") == "assistant" for m in obj["messages"]):
            return "mini-swe-agent: no assistant turn in 'messages'"
        return mini_to_trace(obj["messages"], run_id=rid, meta=_meta(obj, rid, "mini-swe-agent"))
    if isinstance(obj.get("trajectory"), list):
        if not obj["trajectory"]:
            return "swe-agent: empty 'trajectory'"
        return sweagent_to_trace(obj, run_id=rid, meta=_meta(obj, rid, "swe-agent"))
    return _NOT_A_TRAJECTORY


@trace_readers.register("mini-swe-agent")
def read_mini_swe_agent(path: Path) -> Iterator[TraceItem]:
    """Yield one trace per trajectory in the file (mini-swe-agent `messages` or SWE-agent `trajectory`)."""
    file = str(path)
    stem = run_stem(Path(path))
    for n, jv in enumerate(iter_json_values(path)):
        if jv.error:
            yield TraceItem(file=file, line=jv.line, run_id=stem, error=record_error(
                f"mini-swe-agent: {jv.error}", file=file, line=jv.line, run_id=stem))
            continue
        obj = jv.value
        if not isinstance(obj, dict):
            yield TraceItem(file=file, line=jv.line, run_id=None, error=record_error(
                _NOT_A_TRAJECTORY, file=file, line=jv.line, run_id=None))
            continue
        rid = str(obj.get("instance_id") or (stem if n == 0 else f"{stem}-{n}"))
        try:
            raw = _to_trace_dict(obj, rid)
        except SHAPE_ERRORS as exc:
            yield TraceItem(file=file, line=jv.line, run_id=rid,
                            error=shape_error(exc, "mini-swe-agent", file=file, line=jv.line, run_id=rid))
            continue
        if isinstance(raw, str):
            yield TraceItem(file=file, line=jv.line, run_id=rid, error=record_error(
                raw, file=file, line=jv.line, run_id=rid))
            continue
        if not raw["task"].strip():
            yield TraceItem(file=file, line=jv.line, run_id=rid, error=record_error(
                "mini-swe-agent: no task (no user message before the first assistant turn)", file=file,
                line=jv.line, run_id=rid))
            continue
        try:
            trace = Trace.model_validate(raw)
        except ValidationError as exc:
            yield TraceItem(file=file, line=jv.line, run_id=rid,
                            error=trace_error(exc, raw, file=file, line=jv.line, what="mini-swe-agent"))
            continue
        gold, why = find_gold(Path(path), rid)
        yield TraceItem(file=file, line=jv.line, run_id=rid, trace=trace, gold=gold, notes=(why,) if why else ())
