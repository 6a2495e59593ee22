"""The claim-blind view: task, initial observation, actions and observations only, with its SHA-256.

This is the only thing an evidence extractor ever receives. It is built by copying the fields
it may see, never by deleting the ones it may not, so a new claim-channel field in the trace
cannot leak in by default.
"""

from __future__ import annotations

import hashlib
import json
import pickle
from dataclasses import FrozenInstanceError, dataclass
from types import MappingProxyType
from typing import Any, Mapping

from referee.audit.trace import Observation, Step, Trace
from referee.audit.view.terminal import is_terminal, split_call

VIEW_VERSION = 2  # 2: a terminal answer call keeps its name only (its words are the claim channel)


_PLAIN = frozenset({str, int, bool, type(None)})  # scalars a frozen copy and a thaw keep as they are


def _freeze(value: Any) -> Any:
    """A deeply frozen copy: mappings (keys made strings) as read-only proxies, lists and tuples as tuples."""
    t = type(value)
    if t in _PLAIN:  # most of a trace: returned before any isinstance
        return value
    if t is dict or isinstance(value, dict):
        return MappingProxyType({k if type(k) is str else str(k): _freeze(v) for k, v in value.items()})
    if t is list or t is tuple or isinstance(value, (list, tuple)):
        return tuple([_freeze(v) for v in value])
    return value


def _json_like(odd: list) -> bool:
    """Whether a value whose scan noted `odd` thaws back to itself from its frozen copy (its only oddity is floats)."""
    return all(t is float for t in odd)


def _scan(value: Any, odd: list) -> None:
    """Note in `odd` what in a value is not plain JSON: `float` for a float (thaw
    keeps it), the type of anything else, `None` for a mapping with a key that is no string (thaw makes it one);
    with nothing but floats noted, thawing the frozen copy gives back the value itself. Nothing is copied: the
    view is frozen when first read, and the rules extractor reads the plain values alone."""
    t = type(value)
    if t in _PLAIN:
        return
    if t is dict or isinstance(value, dict):
        if t is not dict or not all(type(k) is str for k in value):
            odd.append(None if t is dict else t)
        for v in value.values():
            if type(v) not in _PLAIN:
                _scan(v, odd)
        return
    if t is list or t is tuple or isinstance(value, (list, tuple)):
        if t is not list:
            odd.append(t)
        for v in value:
            if type(v) not in _PLAIN:
                _scan(v, odd)
        return
    odd.append(t)


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


_UNSET = object()


class _Frozen:
    """What a frozen dataclass promises (no attribute is set or deleted), kept by hand: `ui`, `data` and `args`
    are deeply frozen when first read, from the plain values the view's builder kept, so that a reader of the
    plain values alone (the rules extractor) never pays for the copy."""

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def _frozen(self, key: str) -> Any:
        """The deeply frozen copy of the plain value kept under `"_src" + key`, made once."""
        d = self.__dict__
        got = d.get(key, _UNSET)
        if got is _UNSET:
            got = d[key] = _freeze(d["_src" + key])
        return got

    def _thawed(self, key: str, attr: str) -> Any:
        """`thaw` of the frozen `attr`, kept under `key` (or what the view's builder put there: the plain value
        itself, when thawing would give it back) and made at most once."""
        d = self.__dict__
        got = d.get(key, _UNSET)
        if got is _UNSET:
            got = d[key] = thaw(getattr(self, attr))
        return got


class ViewObservation(_Frozen):
    """What the environment showed: text, UI tree, structured data, screenshot path, error flag (`ui` and `data`
    deeply frozen)."""

    # a frozen mapping is no key: neither is what holds one
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, text: str | None = None, ui: Any = None, data: Any = None, screenshot: str | None = None,
                 error: bool = False) -> None:
        self.__dict__.update(text=text, screenshot=screenshot, error=error, _src_ui=ui, _src_data=data)

    text: str | None
    screenshot: str | None
    error: bool

    @property
    def ui(self) -> Any:
        return self._frozen("_ui")

    @property
    def data(self) -> Any:
        return self._frozen("_data")

    def _key(self) -> tuple:
        return self.text, self.ui, self.data, self.screenshot, self.error

    def __eq__(self, other: object) -> bool:
        return self._key() == other._key() if isinstance(other, ViewObservation) else NotImplemented

    def __repr__(self) -> str:
        return (f"ViewObservation(text={self.text!r}, ui={self.ui!r}, data={self.data!r}, "
                f"screenshot={self.screenshot!r}, error={self.error!r})")

    def as_text(self) -> str:
        """Everything the observation shows, as one searchable text: its text, then its data and UI as JSON."""
        d = self.__dict__
        got = d.get("_as_text")  # the extractor and grounding both ask: made once (the view is frozen)
        if got is None:
            parts = [self.text or ""]
            if d["_src_data"] is not None:
                parts.append(canonical_json(self.plain_data()))
            if d["_src_ui"] is not None:
                parts.append(canonical_json(self.plain_ui()))
            got = d["_as_text"] = "\n".join(parts)
        return got

    def has_ui(self) -> bool:
        """Whether the observation holds a UI tree (without freezing it)."""
        return self.__dict__["_src_ui"] is not None

    def plain_ui(self) -> Any:
        """`thaw(self.ui)`, made once: shared by every caller, so it must be read, never changed."""
        return self._thawed("_plain_ui", "ui")

    def plain_data(self) -> Any:
        """`thaw(self.data)`, made once: shared by every caller, so it must be read, never changed."""
        return self._thawed("_plain_data", "data")

    def as_json(self) -> dict:
        return _obs_json(self.text, thaw(self.ui), thaw(self.data), self.screenshot, self.error)


class ViewStep(_Frozen):
    """One step as the extractor sees it: index, action name and arguments (deeply frozen), observation."""

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, index: int, action: str | None, args: Mapping[str, Any],
                 observation: ViewObservation | None) -> None:
        self.__dict__.update(index=index, action=action, _src_args=args, observation=observation)

    index: int
    action: str | None
    observation: ViewObservation | None

    @property
    def args(self) -> Mapping[str, Any]:
        got: Mapping[str, Any] = self._frozen("_args")
        return got

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ViewStep):
            return NotImplemented
        return (self.index, self.action, self.args, self.observation) == \
            (other.index, other.action, other.args, other.observation)

    def __repr__(self) -> str:
        return (f"ViewStep(index={self.index!r}, action={self.action!r}, args={self.args!r}, "
                f"observation={self.observation!r})")

    def plain_args(self) -> dict:
        """`thaw(self.args)`, made once: shared by every caller, so it must be read, never changed."""
        got: dict = self._thawed("_plain_args", "args")
        return got

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


ObsParts = tuple  # (text, ui, data, screenshot, error) of an observation, as the trace holds them


def _obs_parts(o: Observation | None) -> ObsParts | None:
    return None if o is None else (o.text, o.ui, o.data, o.screenshot, bool(o.error))


def _obs(o: ObsParts | None) -> ViewObservation | None:
    if o is None:
        return None
    text, ui, data, screenshot, error = o
    got = ViewObservation(text=text, ui=ui, data=data, screenshot=screenshot, error=error)
    if ui is None and data is None:  # text alone (a shell's output, a chat turn): nothing to freeze or note
        got.__dict__.update(_plain_data=None, _plain_ui=None)
        return got
    of_ui: list = []
    of_data: list = []
    _scan(ui, of_ui)
    _scan(data, of_data)
    if _json_like(of_data):
        got.__dict__["_plain_data"] = data  # what thaw would make of the frozen copy: the data itself
    if _json_like(of_ui):
        got.__dict__["_plain_ui"] = ui
    return got


def _step(index: int, name: str | None, args: Mapping[str, Any], o: ObsParts | None) -> ViewStep:
    if name is None:
        return ViewStep(index=index, action=None, args={}, observation=_obs(o))
    plain: dict = dict(args)
    of_args: list = []
    _scan(plain, of_args)
    got = ViewStep(index=index, action=name, args=plain, observation=_obs(o))
    if _json_like(of_args):
        got.__dict__["_plain_args"] = plain
    return got


def _view_json(task: str, initial: ViewObservation | None, steps: tuple[ViewStep, ...],
               tools: tuple[tuple[str, str], ...] = ()) -> dict:
    d = {"view_version": VIEW_VERSION, "task": task,
         "initial_observation": initial.as_json() if initial else None,
         "steps": [s.as_json() for s in steps]}
    if tools:  # only when present, so the hash of a trace without tools is what it always was
        d["tools"] = [{"name": n, "description": desc} for n, desc in tools]
    return d


_json = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode

def canonical_bytes(obj: Any) -> bytes:
    """`canonical_json(obj)` as UTF-8.

    >>> canonical_bytes({"b": [1, None], "a": "é"}) == canonical_json({"b": [1, None], "a": "é"}).encode()
    True
    """
    return _json(obj).encode("utf-8")


def canonical_json(obj: Any) -> str:
    """Deterministic JSON text: sorted keys, no spaces, UTF-8 kept."""
    return _json(obj)


def _action(step: Step) -> tuple[str | None, Any]:
    """An action as the view shows it; a terminal answer call is its name alone (`send_msg_to_user`):
    what the agent says in it is claim channel, read by the claim reader when there is no report."""
    if step.action is None:
        return None, {}
    name, args = split_call(step.action.name, dict(step.action.args))
    if is_terminal(name, args):
        return name, {}
    return step.action.name, step.action.args


@dataclass(frozen=True)
class ViewParts:
    """What a view is made of, copied out of a trace field by field (the claim channel never is): the task,
    the initial observation, each step's action (a terminal answer call by its name alone) and observation,
    the tools. Plain values, not yet frozen or hashed: what crosses to a worker process."""

    task: str
    initial: ObsParts | None
    steps: tuple[tuple[str | None, Any, ObsParts | None], ...]
    tools: tuple[tuple[str, str], ...] = ()


def view_parts(trace: Trace) -> ViewParts:
    """The parts of a trace's claim-blind view (`build_view` = `freeze_view(view_parts(trace))`).

    >>> from referee.audit.trace import Trace
    >>> p = view_parts(Trace(run_id="1", task="t", steps=[{"action": {"name": "x"}, "narration": "done!"}],
    ...                      report="done"))
    >>> p.steps
    (('x', {}, None),)
    """
    return ViewParts(task=trace.task, initial=_obs_parts(trace.initial_observation),
                     steps=tuple((*_action(s), _obs_parts(s.observation)) for s in trace.steps),
                     tools=tuple((t.name, t.description or "") for t in trace.tools or ()))


def freeze_view(parts: ViewParts) -> ClaimBlindView:
    """The claim-blind view of its parts: deeply frozen, canonical JSON hashed.

    The hashed text is `canonical_json(view.as_json())`, written in one call from the plain parts
    rather than from a thaw of what was just frozen.
    """
    steps = tuple(_step(i, name, args, o) for i, (name, args, o) in enumerate(parts.steps))
    initial = _obs(parts.initial)
    try:
        text = canonical_bytes(_parts_json(parts))
    except TypeError:  # keys of mixed types (only a trace built in Python has them): the frozen copy's string keys
        text = canonical_bytes(_view_json(parts.task, initial, steps, parts.tools))
    digest = hashlib.sha256(text).hexdigest()
    return ClaimBlindView(task=parts.task, initial_observation=initial, steps=steps, sha256=digest, tools=parts.tools)


def _plain_obs(o: ObsParts | None) -> dict | None:
    return None if o is None else _obs_json(*o)


def _obs_json(text: str | None, ui: Any, data: Any, screenshot: str | None, error: bool) -> dict:
    """An observation as the view's JSON holds it: what it has, none of what it lacks (no `error: false`)."""
    d = {"text": text, "ui": ui, "data": data, "screenshot": screenshot, "error": error}
    return {k: v for k, v in d.items() if v not in (None, False)}


def _parts_json(parts: ViewParts) -> dict:
    """What `_view_json` makes of the frozen view, made from the plain parts (the same JSON text)."""
    steps = []
    for i, (name, args, o) in enumerate(parts.steps):
        d: dict[str, Any] = {"index": i}
        if name is not None:
            d["action"] = {"name": name, "args": args}
        if o is not None:
            d["observation"] = _plain_obs(o)
        steps.append(d)
    out = {"view_version": VIEW_VERSION, "task": parts.task, "initial_observation": _plain_obs(parts.initial),
           "steps": steps}
    if parts.tools:
        out["tools"] = [{"name": n, "description": desc} for n, desc in parts.tools]
    return out


def build_view(trace: Trace) -> ClaimBlindView:
    """The claim-blind view of a trace: `report`, `narration`, `run_id` and `meta` never enter it.

    >>> from referee.audit.trace import Trace
    >>> a = Trace(run_id="1", task="t", steps=[{"action": {"name": "x"}, "narration": "done!"}], report="done")
    >>> b = Trace(run_id="2", task="t", steps=[{"action": {"name": "x"}, "narration": "oops"}], report=None)
    >>> build_view(a).sha256 == build_view(b).sha256
    True
    """
    return freeze_view(view_parts(trace))


def pack_parts(parts: list[ViewParts]) -> bytes:
    """The view parts of a chunk as one pickle, for a worker process (`unpack_parts` there).

    Parts only: what crosses to a worker holds nothing of the claim channel.

    >>> from referee.audit.trace import Trace
    >>> p = view_parts(Trace(run_id="r", task="t", steps=[{"action": {"name": "x", "args": {"a": [1]}}}]))
    >>> freeze_view(unpack_parts(pack_parts([p]))[0]) == freeze_view(p)
    True
    """
    return pickle.dumps(list(parts), protocol=pickle.HIGHEST_PROTOCOL)


def unpack_parts(blob: bytes) -> list[ViewParts]:
    """The view parts `pack_parts` packed."""
    parts = pickle.loads(blob)
    if not (isinstance(parts, list) and all(isinstance(p, ViewParts) for p in parts)):
        raise TypeError("not a packed list of view parts")
    return parts
