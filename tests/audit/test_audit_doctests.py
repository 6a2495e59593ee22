"""The examples in the auditor's docstrings run and hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["referee.llm", "referee.audit.trace", "referee.audit.jsonstream", "referee.audit.readers",
           "referee.audit.readers.openai_chat", "referee.audit.readers.tau_bench",
           "referee.audit.readers.anthropic_messages", "referee.audit.readers.inspect_log",
           "referee.audit.readers.inspect_files", "referee.audit.view",
           "referee.audit.claims", "referee.audit.taskclass", "referee.audit.policy", "referee.audit.votes",
           "referee.audit.disposition", "referee.audit.decide", "referee.audit.policyfile", "referee.audit.extract",
           "referee.audit.extract.rules", "referee.audit.extract.llm", "referee.audit.cache",
           "referee.audit.pipeline", "referee.audit.replay", "referee.audit.summary", "referee.audit.auditfile",
           "referee.audit.resume", "referee.lockfile", "referee.audit.filechunks", "referee.audit.parallel"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    mod = importlib.import_module(name)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0 or name in ("referee.audit.extract.llm",)
