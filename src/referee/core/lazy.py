"""A package's public names, imported from their modules on first use, so importing the package stays cheap."""

from __future__ import annotations

import importlib
from typing import Any, Callable


def lazy_exports(package: str, where: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`, whose public name N lives in module `package.where[N]`.

    >>> getattr_, dir_ = lazy_exports("referee.core", {"sha256_bytes": "fsutil"})
    >>> getattr_("sha256_bytes")(b"")[:8], dir_()
    ('e3b0c442', ['sha256_bytes'])
    """

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    def __dir__() -> list[str]:
        return sorted(where)

    return __getattr__, __dir__
