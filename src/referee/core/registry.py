"""One small generic registry for every pluggable kind: validators, captures, actors, backends, readers.

The plugin contract (docs/plugins.md has the table of entry point groups):

- A registry declares *what it holds* with `item`: a class (it holds instances of it) or an `Item`
  (a check and the words an error uses, e.g. `FACTORY`: it holds factories).
- Whatever is registered, by `add`/`register` in referee's own code or by an entry point, goes
  through one `adapt`: an object that already is an item is kept; otherwise a class or a factory
  is called with no arguments and what it gives must be an item. Anything else is a `PluginError`
  naming the entry point and what it should point at. Built-ins and plugins cannot diverge.
- Registries of factories (extractor and claim reader backends) build an instance per use with
  `create(name, **config)`; the factory is called with exactly that keyword config.
- A plugin that does not load or adapt, and a name two plugins register, is kept as that name's error: using
  the name raises it, `check_plugins` (for commands that list a registry) too; the other plugins still work.
"""

from __future__ import annotations

import difflib
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Iterator, TypeVar

from referee.errors import PluginError, UnknownKindError

T = TypeVar("T")


@dataclass(frozen=True)
class Item:
    """What a registry holds, when that is not simply "an instance of this class"."""

    check: Callable[[object], bool]
    words: str  # for errors: "... gave X, not <words>"


def nearest(name: str, known: list[str], plural: str) -> str:
    """The fix for an unknown name: the nearest known one, then all of them.

    >>> nearest("auditr", ["auditor", "claim-gate-only"], "methods")
    "did you mean 'auditor'? known methods: auditor, claim-gate-only"
    """
    near = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return (f"did you mean '{near[0]}'? " if near else "") + f"known {plural}: {', '.join(known)}"


def _is_factory(obj: object) -> bool:
    return callable(obj)


def _is_function(obj: object) -> bool:
    return callable(obj) and not isinstance(obj, type)


FACTORY = Item(_is_factory, "a class or function that builds one")
"""Items that are factories (backends, baselines): kept as they are; `create` calls them."""

FUNCTION = Item(_is_function, "a function (or a class whose instances are callable)")
"""Items that are plain callables (trace readers): a function is kept, a class is instantiated."""


def subclass_of(base: type) -> Item:
    """Items that are classes (actors: a fresh instance per run), subclasses of `base`."""
    return Item(lambda obj: isinstance(obj, type) and issubclass(obj, base),
                f"a subclass of {base.__module__}.{base.__qualname__}")


def item_words(item: type | Item | None) -> str:
    if item is None:
        return "anything"
    if isinstance(item, Item):
        return item.words
    return f"an instance of {item.__module__}.{item.__qualname__}"


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

    A registry of instances takes a class (or a factory) and holds what it makes:

    >>> class Engine: name = ""
    >>> engines = Registry("engine", item=Engine, name_attr="name")
    >>> engines.add("e1", Engine)
    >>> isinstance(engines.get("e1"), Engine), engines.get("e1").name
    (True, 'e1')
    >>> engines.add("bad", dict)
    Traceback (most recent call last):
    ...
    referee.errors.PluginError: engine 'bad': dict gave dict, not an instance of referee.core.registry.Engine; ...
    """

    what: str
    entry_point_group: str | None = None
    item: type | Item | None = None  # what the registry holds (None: anything, kept as given)
    name_attr: str | None = None  # a class attribute (e.g. `kind`) set to the registered name when empty
    # what an entry point must give, when plugins owe more than built-ins (a validator plugin is also its checker:
    # a ValidatorKind, where a built-in plan spec is only a ValidatorSpec); None: `item`
    plugin_item: type | Item | None = None
    points_at: str | None = None  # for errors: what an entry point should point at (None: said from the item)
    _items: dict[str, T] = field(default_factory=dict)
    _origins: dict[str, str] = field(default_factory=dict)  # name -> the entry point it came from (plugins only)
    # name -> why no plugin of that name can be used (it does not load or adapt, or two plugins claim it): kept
    # per name so that one broken plugin fails only what uses or lists it, never its working neighbours
    _broken: dict[str, PluginError] = field(default_factory=dict)
    _loaded_entry_points: bool = False

    # ------------------------------------------------------------------ the one adaptation path

    def is_item(self, obj: object, item: type | Item | None = None) -> bool:
        item = item or self.item
        if item is None:
            return True
        if isinstance(item, Item):
            return bool(item.check(obj))
        return isinstance(obj, item)

    def adapt(self, name: str, obj: object, origin: str | None = None) -> T:
        """Turn what was registered (or what an entry point loaded, `origin` naming it) into an item: an item is
        kept, a class or factory is called with no arguments and must give one."""
        plugin = origin is not None
        item = (self.plugin_item or self.item) if plugin else self.item
        if plugin:
            points = self.points_at or f"a class or a factory that gives {item_words(item)}"
            fix = f"the entry point should point at {points} (docs/plugins.md)"
        else:
            fix = "register a class or a factory that gives one"
        origin = origin or f"{self.what} '{name}'"
        if not self.is_item(obj, item):
            label = getattr(obj, "__qualname__", None) or type(obj).__name__
            if not callable(obj):
                raise PluginError(f"{origin}: {label} is not {item_words(item)}", fix=fix)
            try:
                made = obj()
            except Exception as exc:  # a plugin's constructor: report it as the plugin's fault
                raise PluginError(f"{origin}: calling {label}() with no arguments failed: "
                                  f"{type(exc).__name__}: {exc}", fix=fix) from None
            if not self.is_item(made, item):
                raise PluginError(f"{origin}: {label} gave {type(made).__name__}, not {item_words(item)}",
                                  fix=fix)
            obj = made
        if self.name_attr and not isinstance(obj, type) and not getattr(obj, self.name_attr, None):
            setattr(type(obj), self.name_attr, name)
        return obj  # type: ignore[return-value]

    def register(self, name: str) -> Callable[[Any], Any]:
        """Decorator: register the decorated object under `name` (through `adapt`); returns it unchanged."""

        def deco(obj: Any) -> Any:
            self.add(name, obj)
            return obj

        return deco

    def add(self, name: str, obj: object) -> None:
        self._items[name] = self.adapt(name, obj)

    def _load_entry_points(self) -> None:
        if self._loaded_entry_points or not self.entry_point_group:
            return
        self._loaded_entry_points = True
        from importlib.metadata import entry_points

        builtin = set(self._items)
        claims: dict[str, list[str]] = {}  # name -> the entry points that register it
        for ep in entry_points(group=self.entry_point_group):
            if ep.name in builtin:
                continue
            dist = getattr(ep, "dist", None)
            origin = f"entry point {self.entry_point_group}:{ep.name} = {ep.value}" + (
                f" (from {dist.name} {dist.version})" if dist is not None else "")
            claims.setdefault(ep.name, []).append(origin)
            if len(claims[ep.name]) > 1:
                # which one wins would depend on the order the path lists them: neither may decide a verdict
                self._items.pop(ep.name, None)
                self._origins.pop(ep.name, None)
                dists = [d.name for e in entry_points(group=self.entry_point_group, name=ep.name)
                         if (d := getattr(e, "dist", None)) is not None]
                self._broken[ep.name] = PluginError(
                    f"{self.what} '{ep.name}' is registered by {len(claims[ep.name])} plugins: "
                    + " and ".join(claims[ep.name]),
                    fix=f"uninstall all but one of them (pip uninstall {' / '.join(dists) or 'DIST'})")
                continue
            try:
                try:
                    obj = ep.load()
                except Exception as exc:
                    raise PluginError(f"{origin}: cannot load: {type(exc).__name__}: {exc}",
                                      fix="fix or uninstall that plugin") from None
                self._items[ep.name] = self.adapt(ep.name, obj, origin)
                self._origins[ep.name] = origin
            except PluginError as exc:
                self._broken[ep.name] = exc

    def plugin_errors(self) -> dict[str, PluginError]:
        """Why each broken plugin of this registry's group cannot be used, by name."""
        self._load_entry_points()
        return dict(sorted(self._broken.items()))

    # ------------------------------------------------------------------ lookups

    def names(self) -> list[str]:
        self._load_entry_points()
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        if name in self._items:  # built-ins never wait on (or break with) an unrelated plugin
            return True
        self._load_entry_points()
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def items(self) -> list[tuple[str, T]]:
        return [(n, self._items[n]) for n in self.names()]

    def unknown(self, name: str, **where) -> UnknownKindError:
        """Build the error for an unknown name, with the nearest known one."""
        known = self.names()
        plural = self.what[:-1] + "ies" if self.what.endswith("y") else self.what + "s"
        fix = nearest(name, known, plural)
        if self._broken:  # a plugin that does not load may be the one meant: say it is there, and broken
            fix += f"; broken plugins left out: {', '.join(sorted(self._broken))}"
        return UnknownKindError(f"unknown {self.what} '{name}'", fix=fix, **where)

    def get(self, name: str, **where) -> T:
        if name in self._items:  # entry points load only for a name no built-in has
            return self._items[name]
        self._load_entry_points()
        if name in self._broken:
            raise self._broken[name]
        try:
            return self._items[name]
        except KeyError:
            raise self.unknown(name, **where) from None

    def create(self, name: str, /, **config: Any) -> Any:
        """Build an instance from the factory registered under `name`, with exactly `config`.

        >>> backends = Registry("backend", item=FACTORY)
        >>> backends.add("pair", lambda *, left=0, right=0: (left, right))
        >>> backends.create("pair", left=1)
        (1, 0)
        >>> backends.create("pair", colour="red")
        Traceback (most recent call last):
        ...
        referee.errors.PluginError: backend 'pair': its factory cannot be called with colour=...: got an unexpected ...
        """
        factory: Any = self.get(name)
        try:
            inspect.signature(factory).bind(**config)
        except TypeError as exc:
            given = ", ".join(k + "=..." for k in config) or "no arguments"
            raise PluginError(f"{self.what} '{name}': its factory cannot be called with {given}: {exc}",
                              fix="make it take the keyword config it declares (docs/plugins.md)") from None
        except ValueError:  # no signature to inspect (a builtin): just call it
            pass
        try:
            return factory(**config)
        except Exception as exc:
            if name not in self._origins:  # referee's own factory failing is a bug, reported as one
                raise
            raise PluginError(f"{self._origins[name]}: building it failed: {type(exc).__name__}: {exc}",
                              fix="fix or uninstall that plugin") from None


def check_plugins(*registries: Registry) -> None:
    """For a command that lists registries: a broken plugin among them stops it with one line (the first, naming
    the others), since a listing that quietly left it out would look complete."""
    broken = [(f"{r.entry_point_group}:{n}", e) for r in registries for n, e in r.plugin_errors().items()]
    if not broken:
        return
    (_, first), rest = broken[0], broken[1:]
    more = f"; broken too: {', '.join(n for n, _ in rest)}" if rest else ""
    raise PluginError(first.message, fix=(first.fix or "") + more)
