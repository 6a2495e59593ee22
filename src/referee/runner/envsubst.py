"""`${VAR}` in capture parameters: secrets stay in the runner's environment, never in the plan."""

from __future__ import annotations

import re

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand(value: str, env: dict[str, str]) -> str:
    """Replace `${NAME}` (or `${NAME:-default}`) from `env`; an unset name without default stays as is.

    >>> expand("postgresql://u:${PW}@h/db", {"PW": "s3"})
    'postgresql://u:s3@h/db'
    >>> expand("${NOPE:-x}", {})
    'x'
    """

    def sub(m: re.Match) -> str:
        name, default = m.group(1), m.group(2)
        if name in env:
            return env[name]
        return default if default is not None else m.group(0)

    return _VAR.sub(sub, value)


def redact_url(url: str) -> str:
    """Hide the password of a URL before it is stored as evidence.

    >>> redact_url("postgresql+psycopg://bob:pw@127.0.0.1:5/db")
    'postgresql+psycopg://bob:***@127.0.0.1:5/db'
    """
    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", url)
