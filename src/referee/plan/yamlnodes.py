"""Turn plan YAML into plain data with each value's line and column, refusing what a plan must not hold.

YAML can say more than a plan needs, and some of it is a way to hurt the reader: an alias that
names an anchor holding aliases ("billion laughs") makes a 1 KB file expand to billions of values,
an alias inside its own anchor never ends, and tags construct types no plan field takes. This
module builds the data from the composed node graph itself, so it can count and stop:

* values reached through aliases are counted, whole subtrees each time; past `MAX_ALIAS_VALUES`
  the plan is refused (ordinary anchors, reused a few times, stay far below it);
* an alias inside its own anchor, and nesting deeper than `MAX_DEPTH`, are refused;
* merge keys (`<<: *defaults`, or a list of them) work as in YAML 1.1: explicit keys win, and of
  several merged mappings the first wins;
* scalars may be strings, numbers, booleans and null (a tag such as `!!int "12"` converts, one that
  cannot, `!!int "x"`, is an error at its line); dates and times stay the text they are written as;
  other tags (`!!binary`, `!!set`, `!!python/...`, `!custom`) are refused.

Every refusal is a PlanError naming the file, line and column.
"""

from __future__ import annotations

from typing import Any

import yaml

from referee.errors import PlanError

Pos = tuple[int, int]

MAX_ALIAS_VALUES = 100_000
MAX_DEPTH = 200

_T = "tag:yaml.org,2002:"
_PLAIN = {_T + "str", _T + "int", _T + "float", _T + "bool", _T + "null"}
_AS_TEXT = {_T + "timestamp", _T + "value", _T + "merge"}  # `=` and `<<` outside a key are text too


def _place(node: yaml.Node) -> str:
    return f"{node.start_mark.line + 1}:{node.start_mark.column + 1}"


def _tag_name(tag: str) -> str:
    return "!!" + tag[len(_T):] if tag.startswith(_T) else tag


class _Builder:
    def __init__(self, file: str, positions: dict[tuple, Pos]) -> None:
        self.file = file
        self.positions = positions
        self.seen: set[int] = set()  # nodes built once: building one again is an alias's expansion
        self.open: set[int] = set()  # nodes being built (an alias to one of them is recursive)
        self.expanded = 0
        self.constructor = yaml.constructor.SafeConstructor()  # one per plan: its cache dies with it

    def error(self, msg: str, node: yaml.Node, fix: str | None = None) -> PlanError:
        return PlanError(msg, file=self.file, place=_place(node), fix=fix)

    def build(self, node: yaml.Node, path: tuple, depth: int, aliased: bool) -> Any:
        key = id(node)
        if key in self.open:
            raise self.error("a YAML alias refers to the anchor it stands in (a recursive alias)", node,
                             fix="an alias may only name an anchor defined outside it")
        aliased = aliased or key in self.seen
        if aliased:
            self.expanded += 1
            if self.expanded > MAX_ALIAS_VALUES:
                raise self.error(f"YAML aliases expand to more than {MAX_ALIAS_VALUES} values (an alias bomb?)",
                                 node, fix="write the values out, or reuse anchors less deeply")
        if depth > MAX_DEPTH:
            raise self.error(f"values nested more than {MAX_DEPTH} levels deep", node, fix="flatten the plan")
        self.seen.add(key)
        self.positions[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node)
        self.open.add(key)
        try:
            if isinstance(node, yaml.MappingNode):
                if node.tag != _T + "map":
                    raise self.unsupported(node)
                return self.mapping(node, path, depth, aliased)
            if node.tag != _T + "seq":
                raise self.unsupported(node)
            return [self.build(v, path + (i,), depth + 1, aliased) for i, v in enumerate(node.value)]
        finally:
            self.open.discard(key)

    def unsupported(self, node: yaml.Node) -> PlanError:
        return self.error(f"YAML tag '{_tag_name(node.tag)}' is not supported in a plan", node,
                          fix="remove the tag: a plan holds text, numbers, booleans, null, lists and mappings")

    def scalar(self, node: yaml.ScalarNode) -> Any:
        if node.tag in _AS_TEXT:
            return node.value
        if node.tag not in _PLAIN:
            raise self.unsupported(node)
        try:
            return self.constructor.construct_object(node)
        except (ValueError, KeyError, TypeError, yaml.YAMLError):
            raise self.error(f"{node.value!r} is not a valid {_tag_name(node.tag)}", node,
                             fix="fix the value or remove the tag") from None

    def key(self, node: yaml.Node) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            raise self.error("a key must be a plain value", node)
        return self.scalar(node)

    def mapping(self, node: yaml.MappingNode, path: tuple, depth: int, aliased: bool) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        sources: list[yaml.MappingNode] = []
        explicit: list[tuple[yaml.Node, yaml.Node]] = []
        for knode, vnode in node.value:
            if isinstance(knode, yaml.ScalarNode) and knode.tag == _T + "merge":
                sources.extend(self.merge_sources(vnode))
            else:
                explicit.append((knode, vnode))
        # of several merged mappings the first wins: build the last first, so the first's values (and
        # positions) are written last
        for src in reversed(sources):
            out.update(self.build(src, path, depth, aliased))
        self.positions[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
        own: set[Any] = set()
        for knode, vnode in explicit:
            key = self.key(knode)
            if key in own:
                raise self.error(f"duplicate key '{key}'", knode, fix="remove one of them")
            own.add(key)
            self.positions[path + (key, "__key__")] = (knode.start_mark.line + 1, knode.start_mark.column + 1)
            out[key] = self.build(vnode, path + (key,), depth + 1, aliased)
        return out

    def merge_sources(self, vnode: yaml.Node) -> list[yaml.MappingNode]:
        if isinstance(vnode, yaml.MappingNode):
            return [vnode]
        if isinstance(vnode, yaml.SequenceNode) and all(isinstance(v, yaml.MappingNode) for v in vnode.value):
            return list(vnode.value)
        raise self.error("a merge key `<<` takes a mapping or a list of mappings", vnode,
                         fix="write `<<: *anchor` where the anchor names a mapping")


def compose(text: str, file: str) -> yaml.Node | None:
    """Compose plan text into YAML nodes (aliases stay shared: cheap whatever they expand to)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: 10x faster on big plans
    try:
        return yaml.compose(text, Loader=loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        place = f"{mark.line + 1}:{mark.column + 1}" if mark else None
        raise PlanError(f"malformed YAML: {exc.problem or exc}", file=file, place=place,
                        fix="fix the indentation or quoting there") from None
    except yaml.YAMLError as exc:
        raise PlanError(f"malformed YAML: {exc}", file=file) from None
    except RecursionError:  # the pure-Python composer, without libyaml, on very deep nesting
        raise PlanError(f"values nested more than {MAX_DEPTH} levels deep", file=file, fix="flatten the plan") from None


def to_data(node: yaml.Node, file: str, positions: dict[tuple, Pos]) -> Any:
    """Plain data from composed nodes; `positions` gets (line, column) for each value's path.

    >>> pos = {}
    >>> to_data(compose("d: &d {a: 1}\\ne: {<<: *d, b: 2}\\n", "p.yaml"), "p.yaml", pos)
    {'d': {'a': 1}, 'e': {'a': 1, 'b': 2}}
    >>> pos[("e", "b")]
    (2, 16)
    """
    return _Builder(file, positions).build(node, (), 0, False)
