"""A restricted unpickler for agent logs that only come as pickles (BrowserGym / AgentLab step files).

Loading a pickle runs whatever callables it names, so `pickle.load` on a file from elsewhere is
running that file's code. This unpickler resolves a global only when it is on a short, explicit
allow-list, and never imports the module a pickle names:

- plain containers and values (`set`, `frozenset`, `complex`, `bytearray`, `OrderedDict`, `datetime`);
- numpy's array and scalar reconstructors (`_reconstruct`, `ndarray`, `dtype`, `scalar`, `_frombuffer`),
  taken from numpy itself when it is installed (screenshots, `elapsed_time`, `active_page_index`);
- the *data* classes of BrowserGym and AgentLab logs (`StepInfo`, `StepTimestamps`, `AgentInfo`,
  AgentLab's `Discussion` and chat messages), each replaced by an inert stand-in that only stores the
  state the pickle gives it: none of their methods exist, and neither package need be installed.

Anything else stops the load with one line naming the global. Opening a file is the caller's job.
"""

from __future__ import annotations

import collections
import datetime
import gzip
import io
import pickle
from pathlib import Path
from typing import Any, BinaryIO, Callable

# the data classes whose instances a BrowserGym / AgentLab experiment folder pickles (module, name)
DATA_CLASSES: frozenset[tuple[str, str]] = frozenset({
    ("browsergym.experiments.loop", "StepInfo"), ("browsergym.experiments.loop", "StepTimestamps"),
    ("agentlab.experiments.loop", "StepInfo"), ("agentlab.experiments.loop", "StepTimestamps"),
    ("browsergym.experiments.agent", "AgentInfo"), ("bgym", "AgentInfo"),
    ("agentlab.llm.llm_utils", "Discussion"),
})
# AgentLab's chat messages are dict subclasses: their stand-ins are dicts too
DICT_CLASSES: frozenset[tuple[str, str]] = frozenset(
    ("agentlab.llm.llm_utils", n) for n in ("BaseMessage", "SystemMessage", "HumanMessage", "AIMessage"))

_PLAIN: dict[tuple[str, str], Any] = {
    ("builtins", "set"): set, ("builtins", "frozenset"): frozenset, ("builtins", "complex"): complex,
    ("builtins", "bytearray"): bytearray, ("collections", "OrderedDict"): collections.OrderedDict,
    ("datetime", "datetime"): datetime.datetime, ("datetime", "date"): datetime.date,
    ("datetime", "timedelta"): datetime.timedelta,
}
# numpy's reconstructors, under the module names numpy 1 and numpy 2 write
_NUMPY = {("numpy", "ndarray"), ("numpy", "dtype")} | {
    (f"numpy.{core}.{mod}", name) for core in ("core", "_core")
    for mod, name in (("multiarray", "_reconstruct"), ("multiarray", "scalar"), ("numeric", "_frombuffer"))}


class PickleRefused(Exception):
    """The pickle names a global that is not on the allow-list (or is not a pickle at all)."""


class PickledObject:
    """An instance of an allow-listed data class, as inert data: `pickled_class` and the attributes it was given.

    >>> o = PickledObject.__new__(standin("browsergym.experiments.loop", "StepInfo"))
    >>> o.__setstate__({"step": 3, "action": "click('a51')"}); (o.pickled_class, o.step, o.get("action"))
    ('browsergym.experiments.loop.StepInfo', 3, "click('a51')")
    """

    pickled_class = ""

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) == 2:  # (dict, slots)
            state = {**(state[0] or {}), **(state[1] or {})}
        if isinstance(state, dict):
            self.__dict__.update({str(k): v for k, v in state.items()})

    def get(self, key: str, default: Any = None) -> Any:
        """An attribute by name, like `dict.get` (AgentInfo is read as a dict by its users)."""
        return self.__dict__.get(key, default)


class PickledDict(dict):
    """A dict subclass of an allow-listed class (AgentLab's chat messages): its items, and any attributes."""

    pickled_class = ""

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, dict):
            self.__dict__.update({str(k): v for k, v in state.items()})


_STANDINS: dict[tuple[str, str], type] = {}


def standin(module: str, name: str) -> type:
    """The inert class that stands for `module.name` (made once, never importing the module)."""
    key = (module, name)
    if key not in _STANDINS:
        base: type = PickledDict if key in DICT_CLASSES else PickledObject
        _STANDINS[key] = type(name, (base,), {"pickled_class": f"{module}.{name}", "__module__": __name__})
    return _STANDINS[key]


def _numpy_global(module: str, name: str) -> Any:
    try:
        import importlib

        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        raise PickleRefused(f"the pickle holds numpy arrays ({module}.{name}) and numpy is not installed; install "
                            "with: pip install 'referee[browsergym]'") from None


class RestrictedUnpickler(pickle.Unpickler):
    """`pickle.Unpickler` whose `find_class` answers only from the allow-list (see the module docstring).

    >>> import os
    >>> loads(pickle.dumps({"a": (1, 2.5, "x"), "b": {3}}))
    {'a': (1, 2.5, 'x'), 'b': {3}}
    >>> loads(pickle.dumps(os.getcwd))
    Traceback (most recent call last):
    ...
    referee.audit.readers.safepickle.PickleRefused: it names posix.getcwd, which is not on referee's allow-list ...
    """

    def find_class(self, module: str, name: str) -> Any:
        key = (module, name)
        if key in _PLAIN:
            return _PLAIN[key]
        if key in _NUMPY:
            return _numpy_global(module, name)
        if key in DATA_CLASSES or key in DICT_CLASSES:
            return standin(module, name)
        raise PickleRefused(f"it names {module}.{name}, which is not on referee's allow-list of data classes "
                            "(a pickle can run code when loaded, so nothing else is loaded)")

    def persistent_load(self, pid: Any) -> Any:
        raise PickleRefused("it uses persistent ids, which referee does not load")


def loads(data: bytes) -> Any:
    """Unpickle bytes with the allow-list (raises PickleRefused)."""
    return _load(io.BytesIO(data))


def _load(fh: BinaryIO) -> Any:
    try:
        return RestrictedUnpickler(fh).load()
    except PickleRefused:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError,
            MemoryError, RecursionError) as exc:
        raise PickleRefused(f"not a readable pickle ({type(exc).__name__}: {str(exc)[:120]})") from None


def load_file(path: Path, opener: Callable[[Path], BinaryIO] | None = None) -> Any:
    """Unpickle one file (gzip-compressed when its name ends in `.gz`) with the allow-list.

    Raises PickleRefused (what was refused or why it could not be read) or OSError.
    """
    path = Path(path)
    fh: Any = opener(path) if opener is not None else gzip.open(path, "rb") if path.name.endswith(".gz") \
        else open(path, "rb")
    with fh:
        try:
            return _load(fh)
        except (OSError, EOFError) as exc:  # a truncated or corrupt gzip stream
            if isinstance(exc, FileNotFoundError):
                raise
            raise PickleRefused(f"not a readable gzip pickle ({type(exc).__name__}: {str(exc)[:120]})") from None
