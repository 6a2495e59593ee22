"""`${NAME}` and `${NAME:-default}` in plan values: find them, substitute them, show them without secrets.

A plan names secrets by variable (`url: "https://api.example/x?token=${API_TOKEN}"`) so it can be
shared; the runner substitutes the value from its own environment when it performs a capture, and
writes the value nowhere: what a run directory, a report or the console shows is the plan's
`${API_TOKEN}`. A variable the plan lists in `public_env:` is not secret and is shown substituted.

`${NAME:-default}` takes `default` when NAME is unset or empty (as in the shell). A `${NAME}` with
no default whose variable is unset is a plan error at load time (`referee.plan.loader`).

A validator's values (`text`, `expected`, `pattern`) are filled at grade time (`fill_fields`), and what the
validator says is shown with `${NAME}` back in place of each value (`conceal`). Where each place of a plan
takes variables is in docs/runner.md, "Environment variables".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping

MIN_SCRUB = 8
"""Secret values this long or longer are searched for in free text and replaced by `${NAME}` (`referee.runner.
envsubst.Secrets`); shorter ones (a port, an id) occur there by chance, and are only shown as `${NAME}` where
referee writes a value it substituted."""

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def references(value: Any) -> Iterator[tuple[str, str | None]]:
    """Every `${NAME}` in a value (strings inside lists and mappings too), as (name, default or None).

    >>> list(references({"Authorization": "Bearer ${TOKEN}", "X": ["${HOST:-127.0.0.1}"]}))
    [('TOKEN', None), ('HOST', '127.0.0.1')]
    """
    if isinstance(value, str):
        for m in _VAR.finditer(value):
            yield m.group(1), m.group(2)
    elif isinstance(value, dict):
        for v in value.values():
            yield from references(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from references(v)


def _value(name: str, default: str | None, env: Mapping[str, str]) -> str | None:
    got = env.get(name)
    if default is not None and not got:
        return default
    return got


def expand(value: str, env: Mapping[str, str]) -> str:
    """Replace `${NAME}` (or `${NAME:-default}`) from `env`; an unset name without default stays as is.

    In a value that is a URL (`scheme://...`), what is substituted into the user or password part is
    percent-encoded (`url_part`): a password holding `@ : / ? #` would otherwise move the host.

    >>> expand("postgresql://u:${PW}@h/db", {"PW": "s3@x"})
    'postgresql://u:s3%40x@h/db'
    >>> expand("${NOPE:-x}", {})
    'x'
    """
    return _substitute(value, lambda name, default: _value(name, default, env))


def shown(value: str, env: Mapping[str, str], public: frozenset[str] | set[str]) -> str:
    """`value` as it may be written down: public variables and defaults substituted, secret ones as written.

    >>> shown("http://${HOST}/x?token=${TOKEN}&n=${N:-5}", {"HOST": "h", "TOKEN": "s3"}, {"HOST"})
    'http://h/x?token=${TOKEN}&n=5'
    """

    def pick(name: str, default: str | None) -> str | None:
        if name in public or (default is not None and not env.get(name)):
            return _value(name, default, env)
        return None

    return _substitute(value, pick)


def _substitute(value: str, pick: Callable[[str, str | None], str | None]) -> str:
    """`value` with each `${NAME}` for which `pick` gives a text replaced by it (encoded inside a URL's user part)."""
    at, colon = _userinfo(value)

    def sub(m: re.Match) -> str:
        got = pick(m.group(1), m.group(2))
        if got is None:
            return m.group(0)
        # a variable alone before the '@' may hold "user:password": its first ':' is the separator
        return url_part(got, keep_colon=colon < 0) if m.start() < at else got

    return _VAR.sub(sub, value)


def url_part(value: str, *, keep_colon: bool = False) -> str:
    """`value` percent-encoded for a URL's user or password part (every reserved character, `%` too).

    >>> url_part("ab@c:d/e?f#g%"), url_part("app:p@ss", keep_colon=True)
    ('ab%40c%3Ad%2Fe%3Ff%23g%25', 'app:p%40ss')
    """
    keep = _UNRESERVED | {":"} if keep_colon else _UNRESERVED  # as urllib's quote(value, safe=""), which the
    return "".join(c if c in keep else "".join(f"%{b:02X}" for b in c.encode()) for c in value)  # grader may not import


_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def _userinfo(value: str) -> tuple[int, int]:
    """Where the user part of a URL-valued template ends (its last '@' before the host) and its first ':', each -1
    when there is none. Variables are opaque here: the template's own characters decide, not the values.

    >>> _userinfo("pg://app:${PW}@h:5/db"), _userinfo("http://h/x@y"), _userinfo("echo pg://${A}@h")
    ((14, 8), (-1, -1), (-1, -1))
    """
    m = _SCHEME.match(value)
    if m is None:
        return -1, -1
    skip = {v.start(): v.end() for v in _VAR.finditer(value, m.end())}
    at, colons, i = -1, [], m.end()
    while i < len(value) and value[i] not in "/?#":
        if i in skip:
            i = skip[i]
            continue
        if value[i] == "@":
            at = i
        elif value[i] == ":":
            colons.append(i)
        i += 1
    return at, next((c for c in colons if c < at), -1)


def unset(value: Any, env: Mapping[str, str]) -> list[str]:
    """Names in `value` without a default whose variable is not set in `env`.

    >>> unset("sqlite:///${NOPE_DB}/${HOME}/${X:-d}", {"HOME": "/h"})
    ['NOPE_DB']
    """
    return [name for name, default in references(value) if default is None and name not in env]


def fill(value: Any, env: Mapping[str, str]) -> Any:
    """`expand` on every string inside a value (lists and mapping values too); other values as they are.

    >>> fill({"title": "${T}", "n": [1, "${T:-x}"]}, {"T": "Milk"})
    {'title': 'Milk', 'n': [1, 'Milk']}
    """
    if isinstance(value, str):
        return expand(value, env)
    if isinstance(value, dict):
        return {k: fill(v, env) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [fill(v, env) for v in value]
    return value


@dataclass(frozen=True)
class Filled:
    """A validator's values with their variables substituted (`fill_fields`).

    `values`: each field that names a variable, filled; `unset`: the names without a default that `env` lacks;
    `hidden`: each secret text (a variable's value, a whole filled value) with what is shown in its place.
    """

    values: dict[str, Any]
    unset: tuple[str, ...] = ()
    hidden: tuple[tuple[str, str], ...] = ()


def fill_fields(params: Any, fields: Iterable[str], env: Mapping[str, str],
                public: Iterable[str] = (), sent: Iterable[str] = ()) -> Filled:
    """The `fields` of `params` (a validator's parameters) filled from `env`, and what to hide of them.

    `sent`: the variables the runner substitutes (captures, app, actor). One of them that is secret (not in
    `public`) has its value replaced by `${NAME}` in the evidence (at least MIN_SCRUB characters), so the
    validator is filled with that same `${NAME}`, which is what the evidence holds in the value's place.

    >>> f = fill_fields(type("P", (), {"text": "Title: ${T}"})(), ["text"], {"T": "Milk"})
    >>> f.values, f.unset, f.hidden
    ({'text': 'Title: Milk'}, (), (('Title: Milk', 'Title: ${T}'), ('Milk', '${T}')))
    >>> fill_fields(type("P", (), {"text": "t=${TOKEN}"})(), ["text"], {"TOKEN": "s3cr3t-long"}, sent=["TOKEN"]).values
    {'text': 't=${TOKEN}'}
    """
    public = frozenset(public)
    scrubbed = {n: "${" + n + "}" for n in frozenset(sent) - public if len(env.get(n) or "") >= MIN_SCRUB}
    env = {**env, **scrubbed} if scrubbed else env
    values: dict[str, Any] = {}
    unset_names: list[str] = []
    hidden: dict[str, str] = {}
    for field in fields:
        template = getattr(params, field, None)
        refs = list(references(template))
        if not refs:
            continue
        unset_names += [n for n in unset(template, env) if n not in unset_names]
        values[field] = filled = fill(template, env)
        secret = [name for name, default in refs if name not in public and name not in scrubbed and env.get(name)]
        if not secret:
            continue
        for got, shown_as in _pairs(filled, template):
            hidden.setdefault(got, shown_as)
        for name in secret:
            hidden.setdefault(env[name], "${" + name + "}")
    order = sorted(hidden.items(), key=lambda kv: len(kv[0]), reverse=True)
    return Filled(values, tuple(unset_names), tuple((v, s) for v, s in order if v and v != s))


def _pairs(filled: Any, template: Any) -> Iterator[tuple[str, str]]:
    """Each filled string inside a value, with the template it was made from."""
    if isinstance(template, str) and isinstance(filled, str):
        yield filled, template
    elif isinstance(template, dict) and isinstance(filled, dict):
        for k, v in template.items():
            yield from _pairs(filled.get(k), v)
    elif isinstance(template, (list, tuple)) and isinstance(filled, list):
        for f, t in zip(filled, template):
            yield from _pairs(f, t)


WHOLE_WORD_BELOW = MIN_SCRUB  # in what a validator says, a shorter value is replaced as a whole word only


def conceal(text: str | None, hidden: Iterable[tuple[str, str]]) -> str | None:
    """`text` (what a validator says) with each hidden value shown as its variable, longest first; a value shorter
    than WHOLE_WORD_BELOW only as a whole word (not inside a longer word or number, where it occurs by chance).

    >>> conceal("body does not contain 'Milk' (Buy Milky Milk)", [("Milk", "${T}")])
    "body does not contain '${T}' (Buy Milky ${T})"
    >>> conceal("row 13 of 3", [("3", "${N}")])
    'row 13 of ${N}'
    """
    pairs = [(v, s) for v, s in hidden if v]
    if not text or not pairs:
        return text
    shown = dict(pairs)

    def bounded(v: str) -> str:
        if len(v) >= WHOLE_WORD_BELOW:
            return re.escape(v)
        return ("(?<!\\w)" if v[0].isalnum() or v[0] == "_" else "") + re.escape(v) + \
            ("(?!\\w)" if v[-1].isalnum() or v[-1] == "_" else "")

    pattern = re.compile("|".join(bounded(v) for v, _ in pairs))
    return pattern.sub(lambda m: shown[m.group(0)], text)
