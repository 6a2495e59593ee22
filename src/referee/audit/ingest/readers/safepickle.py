"""A restricted unpickler for agent logs that only come as pickles (BrowserGym / AgentLab step files).

Loading a pickle runs whatever callables it names, so `pickle.load` on a file from elsewhere is
running that file's code. This unpickler resolves a global only when it is on a short, explicit
allow-list, and never imports the module a pickle names:

- plain containers and values (`set`, `frozenset`, `complex`, `bytearray`, `OrderedDict`, `datetime`);
- numpy's array and scalar reconstructors (`_reconstruct`, `ndarray`, `dtype`, `scalar`, `_frombuffer`),
  answered by an inert stand-in (`PickledArray`) that keeps the shape and dtype and none of the data
  (screenshots, `elapsed_time`, `active_page_index`: the reader uses none of them); numpy is never imported;
- the *data* classes of BrowserGym and AgentLab logs (`StepInfo`, `StepTimestamps`, `AgentInfo`,
  AgentLab's `Discussion` and chat messages), each replaced by an inert stand-in that only stores the
  state the pickle gives it: none of their methods exist, and neither package need be installed.

Anything else stops the load with one line naming the global, and so does any exception an allow-listed
constructor raises (`datetime.timedelta(10**12)`: OverflowError). Opening a file is the caller's job.

Nothing is built sized by the input (issue 30): no constructor on the list turns a number into an allocation
(`bytearray(3 << 30)` is refused; numpy's `_reconstruct(ndarray, (2**40,), ...)` makes a stand-in, not an array),
a pickle is read up to MAX_PICKLE_BYTES after decompression (as an Inspect `.eval` member is), and what it built
is measured before anyone walks it: at most MAX_NODES containers and items, MAX_PICKLE_BYTES of text, MAX_DEPTH
levels, a shared reference counted each time it is reached (a pickle of lists holding one list twice, 60 deep,
is a few hundred bytes and 2**60 items to whoever walks it).
"""

from __future__ import annotations

import collections
import datetime
import gzip
import io
import pickle
from pathlib import Path
from typing import Any, BinaryIO, Callable

from referee.core.jsonio.depth import MAX_DEPTH
from referee.rundir.schema import MAX_RESULTS_BYTES

# bytes of one pickle after decompression, and of the text it builds: what referee reads of one .eval member
MAX_PICKLE_BYTES = MAX_RESULTS_BYTES
MAX_NODES = 4_000_000  # containers and items a pickle may build (a BrowserGym step: tens of thousands)

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

class PickleRefused(Exception):
    """The pickle names a global that is not on the allow-list (or is not a pickle at all, or builds too much)."""


def _bytearray(*args: Any) -> bytearray:
    """`bytearray` as pickles call it (from bytes, or from text and its encoding), never from a number or an
    iterable: `bytearray(3 << 30)` would allocate what a 216-byte pickle asks for."""
    if not args or (len(args) == 1 and isinstance(args[0], (bytes, bytearray))) or \
            (len(args) == 2 and isinstance(args[0], str) and isinstance(args[1], str)):
        return bytearray(*args)
    first = args[0]
    what = f"a number of {first.bit_length()} bits" if isinstance(first, int) else f"a {type(first).__name__}"
    raise PickleRefused(f"it calls bytearray with {what}, not bytes: a pickle's bytearray is made from its bytes, "
                        "and a number would be an allocation of that size")


_PLAIN: dict[tuple[str, str], Any] = {
    ("builtins", "set"): set, ("builtins", "frozenset"): frozenset, ("builtins", "complex"): complex,
    ("builtins", "bytearray"): _bytearray, ("collections", "OrderedDict"): collections.OrderedDict,
    ("datetime", "datetime"): datetime.datetime, ("datetime", "date"): datetime.date,
    ("datetime", "timedelta"): datetime.timedelta,
}
# numpy's reconstructors, under the module names numpy 1 and numpy 2 write
_NUMPY = {("numpy", "ndarray"), ("numpy", "dtype")} | {
    (f"numpy.{core}.{mod}", name) for core in ("core", "_core")
    for mod, name in (("multiarray", "_reconstruct"), ("multiarray", "scalar"), ("numeric", "_frombuffer"))}


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


class PickledArray(PickledObject):
    """A numpy array or scalar as inert data: its `shape` and `dtype` as the pickle states them, never its data
    (numpy would allocate what the shape asks for, and its own `__setstate__` reads past a short object list).

    >>> a = _reconstruct(None, (0,), b"b"); a.__setstate__((1, (480, 640, 3), "uint8", False, b"...")); a.shape
    (480, 640, 3)
    """

    pickled_class = "numpy.ndarray"
    shape: tuple | None = None
    dtype: str | None = None

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) >= 3:  # (version, shape, dtype, is_fortran, rawdata)
            self._describe(state[1], state[2])

    def _describe(self, shape: Any, dtype: Any) -> None:
        if isinstance(shape, int):
            shape = (shape,)
        if isinstance(shape, tuple) and len(shape) <= 64 and all(isinstance(n, int) for n in shape):
            self.shape = shape
        self.dtype = str(getattr(dtype, "name", dtype))[:40]


class PickledDtype(PickledObject):
    """A numpy dtype as inert data: its name only."""

    pickled_class = "numpy.dtype"
    name: str | None = None


def _reconstruct(_subtype: Any = None, shape: Any = None, dtype: Any = None, *_: Any) -> PickledArray:
    a = PickledArray()
    a._describe(shape, dtype)
    return a


def _ndarray(shape: Any = None, dtype: Any = None, *_: Any, **__: Any) -> PickledArray:
    return _reconstruct(None, shape, dtype)


def _frombuffer(_buf: Any = None, dtype: Any = None, shape: Any = None, *_: Any) -> PickledArray:
    return _reconstruct(None, shape, dtype)


def _scalar(dtype: Any = None, *_: Any) -> PickledArray:
    return _reconstruct(None, (), dtype)


def _dtype(name: Any = None, *_: Any) -> PickledDtype:
    d = PickledDtype()
    d.name = str(name)[:40] if isinstance(name, (str, bytes)) else None
    return d


_NUMPY_STANDINS: dict[str, Callable[..., Any]] = {"ndarray": _ndarray, "dtype": _dtype, "_reconstruct": _reconstruct,
                                                  "scalar": _scalar, "_frombuffer": _frombuffer}


class RestrictedUnpickler(pickle.Unpickler):
    """`pickle.Unpickler` whose `find_class` answers only from the allow-list (see the module docstring).

    >>> import os
    >>> loads(pickle.dumps({"a": (1, 2.5, "x"), "b": {3}}))
    {'a': (1, 2.5, 'x'), 'b': {3}}
    >>> loads(pickle.dumps(os.getcwd))
    Traceback (most recent call last):
    ...
    referee.audit.ingest.readers.safepickle.PickleRefused: it names posix.getcwd, which is not on ...
    """

    def find_class(self, module: str, name: str) -> Any:
        key = (module, name)
        if key in _PLAIN:
            return _PLAIN[key]
        if key in _NUMPY:
            return _NUMPY_STANDINS[name]
        if key in DATA_CLASSES or key in DICT_CLASSES:
            return standin(module, name)
        raise PickleRefused(f"it names {module}.{name}, which is not on referee's allow-list of data classes "
                            "(a pickle can run code when loaded, so nothing else is loaded)")

    def persistent_load(self, pid: Any) -> Any:
        raise PickleRefused("it uses persistent ids, which referee does not load")


def loads(data: bytes) -> Any:
    """Unpickle bytes with the allow-list and the size caps (raises PickleRefused)."""
    return _load(io.BytesIO(data))


class _Capped:
    """A binary stream read up to `most` bytes: one byte more is PickleRefused (a gzip stream that inflates past
    it, a file that large), before the unpickler holds it."""

    def __init__(self, fh: BinaryIO, most: int) -> None:
        self._fh, self._left, self._most = fh, most, most

    def _took(self, n: int) -> None:
        self._left -= n
        if self._left < 0:
            raise PickleRefused(f"it holds more than {self._most} bytes (after decompression), more than referee "
                                "reads of one pickle")

    def read(self, n: int = -1) -> bytes:
        got = self._fh.read(self._left + 1 if n is None or n < 0 else min(n, self._left + 1))
        self._took(len(got))
        return got

    def readinto(self, buf: Any) -> int:
        view = memoryview(buf).cast("B")
        got = self._fh.readinto(view[:self._left + 1])  # type: ignore[attr-defined]
        self._took(got or 0)
        return got or 0

    def readline(self, n: int = -1) -> bytes:
        got = self._fh.readline(self._left + 1 if n is None or n < 0 else min(n, self._left + 1))
        self._took(len(got))
        return got


def _load(fh: BinaryIO) -> Any:
    try:
        got = RestrictedUnpickler(_Capped(fh, MAX_PICKLE_BYTES)).load()
    except (PickleRefused, OSError):
        raise  # OSError: the file or its gzip stream, which load_file words
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError,
            MemoryError, RecursionError) as exc:
        raise PickleRefused(f"not a readable pickle ({type(exc).__name__}: {str(exc)[:120]})") from None
    except Exception as exc:  # noqa: BLE001 - whatever an allow-listed constructor raises (issue 30 finding 1)
        # `timedelta(10**12)` or `complex(10**400)` raise OverflowError: the pickle asks for a value that cannot
        # be built, which is the pickle's fault, never an internal error of the audit
        raise PickleRefused(f"a value it builds cannot be built ({type(exc).__name__}: {str(exc)[:120]})") from None
    _measure(got)
    return got


def _measure(value: Any) -> None:
    """PickleRefused when `value`, walked as a tree (a shared reference counted each time it is reached), holds
    more than MAX_NODES containers and items, MAX_PICKLE_BYTES of text or MAX_DEPTH levels. The walk stops at
    the first limit crossed, so it costs at most that much."""
    nodes = chars = 0
    level = [value]
    for _ in range(MAX_DEPTH + 1):
        below: list[Any] = []
        for v in level:
            t = type(v)
            if t is str or t is bytes or t is bytearray:
                chars += len(v)
                continue
            if isinstance(v, dict):
                items: Any = [*v.keys(), *v.values()]
            elif isinstance(v, (list, tuple, set, frozenset)):
                items = v
            elif isinstance(v, PickledObject):
                items = list(v.__dict__.values())
            else:
                continue
            nodes += len(items) + 1
            if nodes > MAX_NODES:
                raise PickleRefused(f"it builds more than {MAX_NODES} containers and items (shared references "
                                    "counted each time they are reached), more than referee reads of one pickle")
            below.extend(items)
        if chars > MAX_PICKLE_BYTES:
            raise PickleRefused(f"it builds more than {MAX_PICKLE_BYTES} bytes of text (shared references counted "
                                "each time they are reached), more than referee reads of one pickle")
        if not below:
            return
        level = below
    raise PickleRefused(f"it is nested deeper than {MAX_DEPTH} levels")


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
