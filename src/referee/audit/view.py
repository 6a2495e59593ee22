"""The claim-blind view: task, initial observation, actions and observations only, with its SHA-256.

This is the only thing an evidence extractor ever receives. It is built by copying the fields
it may see, never by deleting the ones it may not, so a new claim-channel field in the trace
cannot leak in by default.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from referee.audit.terminal import is_terminal, split_call
from referee.audit.trace import Observation, Step, Trace

VIEW_VERSION = 2  # 2: a terminal answer call keeps its name only (its words are the claim channel)


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return MappingProxyType({str(k): _freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """A frozen view value back as plain JSON types (for prompts and hashing).

    >>> thaw(_freeze({"a": [1, {"b": 2}]}))
    {'a': [1, {'b': 2}]}
    """
    t = type(value)
    if t is MappingProxyType or t is dict:  # exact types: isinstance(Mapping) is slow on hot paths
        return {k: thaw(v) for k, v in value.items()}
    if t is tuple or t is list:
        return [thaw(v) for v in value]
    return value


@dataclass(frozen=True)
class ViewObservation:
    """What the environment showed: text, UI tree, structured data, screenshot path, error flag."""

    text: str | None = None
    ui: Any = None
    data: Any = None
    screenshot: str | None = None
    error: bool = False

    def as_text(self) -> str:
        """Everything the observation shows, as one searchable text: its text, then its data and UI as JSON."""
        parts = [self.text or ""]
        for v in (self.data, self.ui):
            if v is not None:
                parts.append(canonical_json(thaw(v)))
        return "\n".join(parts)

    def as_json(self) -> dict:
        d = {"text": self.text, "ui": thaw(self.ui), "data": thaw(self.data), "screenshot": self.screenshot,
             "error": self.error}
        return {k: v for k, v in d.items() if v not in (None, False)}


@dataclass(frozen=True)
class ViewStep:
    """One step as the extractor sees it: index, action name and arguments, observation."""

    index: int
    action: str | None
    args: Mapping[str, Any]
    observation: ViewObservation | None

    def as_json(self) -> dict:
        d: dict[str, Any] = {"index": self.index}
        if self.action is not None:
            d["action"] = {"name": self.action, "args": thaw(self.args)}
        if self.observation is not None:
            d["observation"] = self.observation.as_json()
        return d


@dataclass(frozen=True)
class ClaimBlindView:
    """Everything an extractor may read about a run, deeply immutable, and the SHA-256 of it."""

    task: str
    initial_observation: ViewObservation | None
    steps: tuple[ViewStep, ...]
    sha256: str
    tools: tuple[tuple[str, str], ...] = ()  # (name, description) of the tools the agent was offered

    def as_json(self) -> dict:
        """The canonical JSON form (what is hashed, and what an LLM extractor is shown)."""
        return _view_json(self.task, self.initial_observation, self.steps, self.tools)


def _obs(o: Observation | None) -> ViewObservation | None:
    if o is None:
        return None
    return ViewObservation(text=o.text, ui=_freeze(o.ui), data=_freeze(o.data), screenshot=o.screenshot,
                           error=bool(o.error))


def _view_json(task: str, initial: ViewObservation | None, steps: tuple[ViewStep, ...],
               tools: tuple[tuple[str, str], ...] = ()) -> dict:
    d = {"view_version": VIEW_VERSION, "task": task,
         "initial_observation": initial.as_json() if initial else None,
         "steps": [s.as_json() for s in steps]}
    if tools:  # only when present, so the hash of a trace without tools is what it always was
        d["tools"] = [{"name": n, "description": desc} for n, desc in tools]
    return d


def canonical_json(obj: Any) -> str:
    """Deterministic JSON text: sorted keys, no spaces, UTF-8 kept."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _action(step: Step) -> tuple[str | None, Mapping[str, Any]]:
    """An action as the view shows it; a terminal answer call is its name alone (`send_msg_to_user`):
    what the agent says in it is claim channel, read by the claim reader when there is no report."""
    if step.action is None:
        return None, MappingProxyType({})
    name, args = split_call(step.action.name, dict(step.action.args))
    if is_terminal(name, args):
        return name, MappingProxyType({})
    return step.action.name, _freeze(dict(step.action.args))


def build_view(trace: Trace) -> ClaimBlindView:
    """The claim-blind view of a trace: `report`, `narration`, `run_id` and `meta` never enter it.

    >>> from referee.audit.trace import Trace
    >>> a = Trace(run_id="1", task="t", steps=[{"action": {"name": "x"}, "narration": "done!"}], report="done")
    >>> b = Trace(run_id="2", task="t", steps=[{"action": {"name": "x"}, "narration": "oops"}], report=None)
    >>> build_view(a).sha256 == build_view(b).sha256
    True
    """
    steps = tuple(
        ViewStep(index=i, action=name, args=args, observation=_obs(s.observation))
        for i, s in enumerate(trace.steps) for name, args in [_action(s)])
    initial = _obs(trace.initial_observation)
    tools = tuple((t.name, t.description or "") for t in trace.tools or ())
    digest = hashlib.sha256(canonical_json(_view_json(trace.task, initial, steps, tools)).encode("utf-8")).hexdigest()
    return ClaimBlindView(task=trace.task, initial_observation=initial, steps=steps, sha256=digest, tools=tools)
