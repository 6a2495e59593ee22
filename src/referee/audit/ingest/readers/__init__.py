"""Trace readers behind one registry: each turns a file of some format into TraceItems (trace v1 + gold)."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Callable, Generator, Iterator

from referee.audit.ingest.misread import noting_undecodable
from referee.audit.trace import TraceItem
from referee.core.jsonio.undecodable import counting
from referee.core.jsonio.values import JsonValue, iter_json_values
from referee.core.registry import FUNCTION, Registry

Reader = Callable[..., Iterator[TraceItem]]  # reader(path), or reader(path, options) when it sets `takes_options`


@dataclass(frozen=True)
class ReadOptions:
    """What the user allowed a reader to do; given to readers that set `takes_options = True`."""

    allow_pickle: bool = False  # load pickled logs (BrowserGym step files) through the restricted unpickler
    # a coding agent's session of many prompts: one run per prompt (`<session>#<n>`), or `whole`: one run
    session_runs: str = "per-prompt"


DEFAULT_OPTIONS = ReadOptions()  # frozen: one shared default for every reader's `options` argument

# an entry point (group `referee.readers`) names a reader function, or a class whose instances are one
trace_readers: Registry[Reader] = Registry("trace format", "referee.readers", item=FUNCTION)


def load_builtin() -> None:
    """Register every built-in reader (importing a reader's module registers it)."""
    # importing the modules registers them; kept lazy so `import referee.audit` stays cheap
    from referee.audit.ingest.readers import (  # noqa: F401
        agent_sdk,
        aider,
        anthropic_messages,
        browsergym,
        claude_code,
        codex_cli,
        gemini_cli,
        inspect_log,
        mini_swe_agent,
        openai_agents,
        openai_chat,
        openhands,
        referee_run,
        referee_v1,
        tau_bench,
    )


def is_trajectory_file(path: Path) -> bool:
    """A mini-swe-agent / SWE-agent trajectory by its name: `*.traj` or `*.traj.json`.

    >>> is_trajectory_file(Path("trajs/astropy__astropy-13033.traj.json")), is_trajectory_file(Path("a.json"))
    (True, False)
    """
    return Path(path).name.endswith((".traj", ".traj.json"))


def get_reader(name: str) -> Reader:
    """The reader registered under `name` (referee, referee-run, openai-chat, anthropic-messages, tau-bench,
    mini-swe-agent, inspect-ai, or a plugin).

    >>> get_reader("referee").__name__
    'read_referee'
    """
    load_builtin()
    return trace_readers.get(name)


def sniff_format(path: Path) -> str:
    """Guess a file's format from its first record: trace v1, tau-bench result, mini-swe-agent or
    SWE-agent trajectory, Anthropic Messages (its content blocks, `system`, request/response), or
    OpenAI chat; an Inspect AI log by its first bytes (an `.eval` zip, or `{"version": N, "status"`);
    a directory holding manifest.json is a referee run directory (`referee-run`); a `*.traj(.json)`
    file that matches nothing else is `mini-swe-agent`.

    >>> import tempfile, pathlib; p = pathlib.Path(tempfile.mkdtemp()) / "t.jsonl"
    >>> _ = p.write_text('{"run_id": "a", "task": "t", "steps": []}\\n')
    >>> sniff_format(p)
    'referee'
    """
    if Path(path).is_dir():
        return sniff_dir(path) or "referee-run"
    fmt, _, rest = _sniffed(path)
    if rest is not None:
        rest.close()  # the file is closed now, not when the generator is collected
    return fmt


def _sniffed(path: Path) -> tuple[str, list[JsonValue], Generator[JsonValue, None, None] | None]:
    """sniff_format of a file, with the records read to tell it and the reading that read them (None when it
    read none), open where it stopped: trace v1 goes on from there instead of parsing them again."""
    from referee.audit.ingest.readers.inspect_log import sniff_inspect  # by its first bytes: a zip, or one big object

    if sniff_inspect(path):
        return "inspect-ai", [], None
    from referee.audit.ingest.readers.aider import sniff_aider  # markdown, not JSON: by its first lines

    if sniff_aider(path):
        return "aider", [], None
    values = iter_json_values(path)
    seen: list[JsonValue] = []
    for item in values:
        seen.append(item)
        if item.error is not None:  # a broken first record says nothing of the format: look at the next
            if len(seen) <= 20:
                continue
            break
        fmt = _record_format(item.value)
        if fmt is not None:
            if fmt == "openai-chat" and isinstance(item.value, dict):  # a bare message: its neighbours tell the shape
                fmt = "mini-swe-agent" if is_trajectory_file(path) else _messages_format(item.value, seen, values)
            return fmt, seen, values
        break
    return ("mini-swe-agent" if is_trajectory_file(path) else "referee"), seen, values


def _messages_format(first: dict, seen: list[JsonValue], values: Iterator[JsonValue], peek: int = 200) -> str:
    """openai-chat or anthropic-messages for a file that is one conversation (a list of messages), by the first
    `peek` messages (read into `seen`): a message alone rarely says which."""
    from referee.audit.ingest.readers.anthropic_messages import looks_anthropic

    messages = [first]
    for item in values:
        seen.append(item)
        if item.error is None:
            messages.append(item.value)
        if len(messages) >= peek:
            break
    from referee.audit.ingest.readers.openai_agents import is_input_list

    if is_input_list(messages):  # Responses input items (to_input_list()): calls and outputs beside the messages
        return "openai-agents"
    from referee.audit.ingest.readers.claude_code import is_claude_export

    if is_claude_export(messages):  # a Claude Code transcript exported as role/content lines: a run per prompt
        return "claude-code"
    return "anthropic-messages" if looks_anthropic([m for m in messages if isinstance(m, dict)]) else "openai-chat"


def _session_format(v: object) -> str | None:
    """A coding agent's session log by its first record: Claude Code, Codex CLI or Gemini CLI; None for others."""
    from referee.audit.ingest.readers.claude_code import is_claude_event
    from referee.audit.ingest.readers.codex_cli import is_rollout_header, is_rollout_line
    from referee.audit.ingest.readers.gemini_cli import is_saved_chat, is_stream_event

    if is_claude_event(v):
        return "claude-code"
    if is_rollout_line(v) or is_rollout_header(v):
        return "codex-cli"
    if is_stream_event(v) or is_saved_chat(v):
        return "gemini-cli"
    return None


def _record_format(v: object) -> str | None:
    """The format a file's first good record says it is in; None: it says nothing (the name may)."""
    from referee.audit.ingest.readers.agent_sdk import sniff_agent_sdk
    from referee.audit.ingest.readers.anthropic_messages import looks_anthropic
    from referee.audit.ingest.readers.openai_agents import sniff_openai_agents

    if sniff_agent_sdk(v):
        return "agent-sdk"
    if sniff_openai_agents(v):
        return "openai-agents"
    if (session := _session_format(v)) is not None:
        return session
    if isinstance(v, dict):
        if "trace_version" in v or "steps" in v:
            return "referee"
        if "traj" in v and ("reward" in v or "task_id" in v):
            return "tau-bench"
        if isinstance(v.get("eval"), dict) and ("samples" in v or "status" in v):
            return "inspect-ai"  # a JSON log whose fields are in another order than Inspect writes them
        if isinstance(v.get("trajectory"), list) and v["trajectory"] and is_openhands_event(v["trajectory"][0]):
            return "openhands"  # OpenHands' trajectory export: {"trajectory": [events]}
        info = v.get("info")
        if ("messages" in v and isinstance(info, dict) and "exit_status" in info) or \
                isinstance(v.get("trajectory"), list):
            return "mini-swe-agent"
        if "messages" in v or "request" in v:
            return "anthropic-messages" if looks_anthropic(v) else "openai-chat"
        if is_openhands_event(v) or (isinstance(v.get("history"), list) and v["history"]
                                     and is_openhands_event(v["history"][0])):
            return "openhands"
        if isinstance(v.get("role"), str):  # one message of a file that is one conversation
            return "openai-chat"
    if isinstance(v, list) and v and isinstance(v[0], dict) and "role" in v[0]:
        return "anthropic-messages" if looks_anthropic(v) else "openai-chat"
    return None


def is_openhands_event(v: object) -> bool:
    """An OpenHands event as its serializer writes it: `action` with `args`, or `observation` with `content`.

    >>> is_openhands_event({"id": 3, "action": "run", "args": {"command": "ls"}}), is_openhands_event({"role": "user"})
    (True, False)
    """
    return isinstance(v, dict) and "role" not in v and (
        (isinstance(v.get("action"), str) and isinstance(v.get("args"), dict))
        or (isinstance(v.get("observation"), str) and "content" in v))


def sniff_dir(path: Path) -> str | None:
    """The format of a run folder, or None when the folder is not one run (walk into it instead):
    `referee-run` (manifest.json), `browsergym` (summary_info.json, step pickles, a JSON tape),
    `openhands` (a session: `events/<n>.json`, or a folder of `<n>.json` events).

    >>> import tempfile, pathlib; d = pathlib.Path(tempfile.mkdtemp())
    >>> sniff_dir(d), (d / "summary_info.json").write_text("{}") > 0, sniff_dir(d)
    (None, True, 'browsergym')
    """
    from referee.audit.ingest.readers.browsergym import is_experiment_dir
    from referee.audit.ingest.readers.openhands import is_session_dir
    from referee.audit.ingest.readers.referee_run import is_run_dir

    if is_run_dir(path):
        return "referee-run"
    if is_experiment_dir(path):
        return "browsergym"
    if is_session_dir(path):
        return "openhands"
    return None


def read_traces(path: Path, fmt: str | None = None, *, allow_pickle: bool = False,
                session_runs: str = "per-prompt") -> Iterator[TraceItem]:
    """Stream the TraceItems of one file or run folder, sniffing the format when `fmt` is None.

    `allow_pickle` lets a reader that needs pickles (browsergym) load them through its restricted unpickler;
    `session_runs` (`per-prompt` or `whole`) is how a coding agent's session of many prompts becomes runs.
    """
    path = Path(path)
    if path.is_dir() and fmt is None:
        fmt = sniff_dir(path) or "referee-run"
    elif not path.is_dir():
        _regular_file(path)
    if fmt is None:
        with counting() as met:  # bytes the sniff replaced are noted as the reader's own would be
            fmt, seen, rest = _sniffed(path)
        if rest is not None:
            from referee.audit.ingest.readers.referee_v1 import read_referee, referee_items

            if get_reader(fmt) is read_referee:  # trace v1 reads on from the records the sniff parsed
                return noting_undecodable(referee_items(chain(seen, rest), str(path)), met)
            rest.close()
    reader = get_reader(fmt)
    if getattr(reader, "takes_options", False):
        return noting_undecodable(reader(path, ReadOptions(allow_pickle=allow_pickle, session_runs=session_runs)))
    return noting_undecodable(reader(path))


def _regular_file(path: Path) -> None:
    """A trace file must be a regular file: a FIFO or a device named as one is a one-line TraceError here,
    before any sniffer or reader opens it (and would wait on it)."""
    import os
    import stat

    from referee.core.fsutil import not_regular
    from referee.errors import TraceError

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # missing or unreadable: the reader says so, as it always has
    if not stat.S_ISREG(mode):
        raise not_regular(path, mode, TraceError)


# how the readers that predate the `sniffs` / `needs` attributes are picked (a reader may set its own)
_BUILTIN_SNIFFS = {
    "referee": "a record with trace_version or steps (also the fallback for an unrecognised file)",
    "referee-run": "a folder holding manifest.json",
    "openai-chat": "a record with messages (or an OpenAI request/response pair), or a list of messages with role "
                   "(a file that is one conversation)",
    "tau-bench": "a record with traj and reward or task_id",
    "mini-swe-agent": "a record with messages and info.exit_status, or trajectory (of steps, not OpenHands events); "
                      "any *.traj(.json) file",
    "anthropic-messages": "a record with messages (or a request/response pair) in the Anthropic shape: a "
                          "top-level system, tools with input_schema, or tool_use / tool_result content blocks",
    "inspect-ai": "an .eval zip (header.json, _journal/ or samples/ members), or a JSON log: one object with "
                  "eval and samples or status",
}


@dataclass(frozen=True)
class ReaderInfo:
    """One line of `referee readers`: the format name, what it reads, how it is sniffed, what it needs."""

    name: str
    summary: str
    sniffs: str
    needs: str

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "summary": self.summary, "sniffs": self.sniffs, "needs": self.needs}


def reader_infos() -> list[ReaderInfo]:
    """Every registered reader (built-in and plugin), from its `sniffs` / `needs` attributes and docstring.

    >>> {"browsergym", "inspect-ai", "openhands"} <= {r.name for r in reader_infos()}
    True
    """
    load_builtin()
    out = []
    for name, fn in sorted(trace_readers.items()):
        doc = (getattr(fn, "__doc__", None) or "").strip().splitlines()
        out.append(ReaderInfo(name=name, summary=doc[0] if doc else "",
                              sniffs=str(getattr(fn, "sniffs", None) or _BUILTIN_SNIFFS.get(name)
                                         or "never: only with --format " + name),
                              needs=str(getattr(fn, "needs", None) or "nothing beyond referee")))
    return out
