"""Trace readers behind one registry: each turns a file of some format into TraceItems (trace v1 + gold)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

from referee.audit.jsonstream import iter_json_values
from referee.audit.trace import TraceItem
from referee.registry import FUNCTION, Registry

Reader = Callable[[Path], Iterator[TraceItem]]

# an entry point (group `referee.readers`) names a reader function, or a class whose instances are one
trace_readers: Registry[Reader] = Registry("trace format", "referee.readers", item=FUNCTION)


def _load_builtin() -> None:
    # importing the modules registers them; kept lazy so `import referee.audit` stays cheap
    from referee.audit.readers import mini_swe_agent, openai_chat, referee_run, referee_v1, tau_bench  # noqa: F401
    from referee.audit.readers import anthropic_messages, inspect_log  # noqa: F401


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
    _load_builtin()
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
    if Path(path).is_dir() and (Path(path) / "manifest.json").is_file():
        return "referee-run"
    from referee.audit.readers.inspect_log import sniff_inspect  # by its first bytes: a zip, or one big object

    if sniff_inspect(path):
        return "inspect-ai"
    from referee.audit.readers.anthropic_messages import looks_anthropic

    for n, item in enumerate(iter_json_values(path)):
        if item.error is not None:  # a broken first record says nothing of the format: look at the next
            if n < 20:
                continue
            break
        v = item.value
        if isinstance(v, dict):
            if "trace_version" in v or "steps" in v:
                return "referee"
            if "traj" in v and ("reward" in v or "task_id" in v):
                return "tau-bench"
            if isinstance(v.get("eval"), dict) and ("samples" in v or "status" in v):
                return "inspect-ai"  # a JSON log whose fields are in another order than Inspect writes them
            info = v.get("info")
            if ("messages" in v and isinstance(info, dict) and "exit_status" in info) or \
                    isinstance(v.get("trajectory"), list):
                return "mini-swe-agent"
            if "messages" in v or "request" in v:
                return "anthropic-messages" if looks_anthropic(v) else "openai-chat"
        if isinstance(v, list) and v and isinstance(v[0], dict) and "role" in v[0]:
            return "anthropic-messages" if looks_anthropic(v) else "openai-chat"
        break
    return "mini-swe-agent" if is_trajectory_file(path) else "referee"


def read_traces(path: Path, fmt: str | None = None) -> Iterator[TraceItem]:
    """Stream the TraceItems of one file (or run directory), sniffing the format when `fmt` is None."""
    path = Path(path)
    if path.is_dir():  # only run directories are directories a reader reads
        fmt = "referee-run"
    return get_reader(fmt or sniff_format(path))(path)
