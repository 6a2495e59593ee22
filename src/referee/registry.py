"""One small generic registry for every pluggable kind: validators, captures, actors, backends, readers."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Callable, Generic, Iterator, TypeVar

from referee.errors import UnknownKindError

T = TypeVar("T")


@dataclass
class Registry(Generic[T]):
    """A named table of plugins, filled by decorators and by entry points.

    >>> shapes = Registry("shape")
    >>> @shapes.register("square")
    ... def square(x): return x * x
    >>> shapes.get("square")(3)
    9
    >>> shapes.get("sqare")
    Traceback (most recent call last):
    ...
    referee.errors.UnknownKindError: unknown shape 'sqare'; did you mean 'square'? known shapes: square
    """

    what: str
    entry_point_group: str | None = None
    adapt: Callable[[str, object], T] | None = None  # turns what an entry point loads into a registry item
    _items: dict[str, T] = field(default_factory=dict)
    _loaded_entry_points: bool = False

    def register(self, name: str) -> Callable[[T], T]:
        def deco(obj: T) -> T:
            self._items[name] = obj
            return obj

        return deco

    def add(self, name: str, obj: T) -> None:
        self._items[name] = obj

    def _load_entry_points(self) -> None:
        if self._loaded_entry_points or not self.entry_point_group:
            return
        self._loaded_entry_points = True
        from importlib.metadata import entry_points

        for ep in entry_points(group=self.entry_point_group):
            if ep.name not in self._items:
                obj = ep.load()
                self._items[ep.name] = self.adapt(ep.name, obj) if self.adapt else obj

    def names(self) -> list[str]:
        self._load_entry_points()
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        self._load_entry_points()
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def items(self) -> list[tuple[str, T]]:
        return [(n, self._items[n]) for n in self.names()]

    def unknown(self, name: str, **where) -> UnknownKindError:
        """Build the error for an unknown name, with the nearest known one."""
        known = self.names()
        near = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f"did you mean '{near[0]}'? " if near else ""
        plural = self.what[:-1] + "ies" if self.what.endswith("y") else self.what + "s"
        return UnknownKindError(f"unknown {self.what} '{name}'", fix=f"{hint}known {plural}: {', '.join(known)}",
                                **where)

    def get(self, name: str, **where) -> T:
        self._load_entry_points()
        try:
            return self._items[name]
        except KeyError:
            raise self.unknown(name, **where) from None
