"""Every example in every module's docstrings runs and holds: an example no test runs can be wrong unnoticed
(one was: `filechunks.whole_size`'s gave a size off by one until this test ran it)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import referee

MODULES = sorted(m.name for m in pkgutil.walk_packages(referee.__path__, "referee.")
                 if not m.name.endswith("__main__"))  # __main__ runs the CLI when imported


def test_every_module_is_found():
    assert {"referee.audit.ingest.chunks", "referee.audit.run.parallel", "referee.runner.run", "referee.cli.main"} <= \
        set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
