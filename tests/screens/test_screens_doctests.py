"""The examples in the screens modules' docstrings run and hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["referee.ocr", "referee.ocr.base", "referee.ocr.text", "referee.ocr.tesseract", "referee.runner.browser",
           "referee.runner.actors.browser", "referee.validators.screens", "referee.lint", "referee.report.html"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    mod = importlib.import_module(name)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0
