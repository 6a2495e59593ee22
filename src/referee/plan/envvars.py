"""`${NAME}` and `${NAME:-default}` in plan values: find them, substitute them, show them without secrets.

A plan names secrets by variable (`url: "https://api.example/x?token=${API_TOKEN}"`) so it can be
shared; the runner substitutes the value from its own environment when it performs a capture, and
writes the value nowhere: what a run directory, a report or the console shows is the plan's
`${API_TOKEN}`. A variable the plan lists in `public_env:` is not secret and is shown substituted.

`${NAME:-default}` takes `default` when NAME is unset or empty (as in the shell). A `${NAME}` with
no default whose variable is unset is a plan error at load time (`referee.plan.loader`).
"""

from __future__ import annotations

import re
from typing import Any, Iterator, Mapping

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

    >>> expand("postgresql://u:${PW}@h/db", {"PW": "s3"})
    'postgresql://u:s3@h/db'
    >>> expand("${NOPE:-x}", {})
    'x'
    """

    def sub(m: re.Match) -> str:
        got = _value(m.group(1), m.group(2), env)
        return m.group(0) if got is None else got

    return _VAR.sub(sub, value)


def shown(value: str, env: Mapping[str, str], public: frozenset[str] | set[str]) -> str:
    """`value` as it may be written down: public variables and defaults substituted, secret ones as written.

    >>> shown("http://${HOST}/x?token=${TOKEN}&n=${N:-5}", {"HOST": "h", "TOKEN": "s3"}, {"HOST"})
    'http://h/x?token=${TOKEN}&n=5'
    """

    def sub(m: re.Match) -> str:
        name, default = m.group(1), m.group(2)
        if name in public or (default is not None and not env.get(name)):
            got = _value(name, default, env)
            return m.group(0) if got is None else got
        return m.group(0)

    return _VAR.sub(sub, value)


def unset(value: Any, env: Mapping[str, str]) -> list[str]:
    """Names in `value` without a default whose variable is not set in `env`.

    >>> unset("sqlite:///${NOPE_DB}/${HOME}/${X:-d}", {"HOME": "/h"})
    ['NOPE_DB']
    """
    return [name for name, default in references(value) if default is None and name not in env]
