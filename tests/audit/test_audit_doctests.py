"""The examples in the auditor's docstrings run and hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["referee.core.llm", "referee.audit.trace", "referee.core.jsonio.values", "referee.audit.ingest.readers",
           "referee.audit.ingest.readers.openai_chat", "referee.audit.ingest.readers.tau_bench",
           "referee.audit.ingest.readers.anthropic_messages", "referee.audit.ingest.readers.inspect_log",
           "referee.audit.ingest.readers.inspect_files", "referee.audit.view.blind",
           "referee.audit.claim.reader", "referee.audit.claim.derived", "referee.audit.claim.grounding",
           "referee.audit.decide.taskclass", "referee.audit.decide.policy",
               "referee.audit.decide.votes",
           "referee.audit.decide.disposition", "referee.audit.decide.decision", "referee.audit.decide.policyfile",
               "referee.audit.extract",
           "referee.audit.extract.rules", "referee.audit.extract.llm", "referee.audit.run.cache",
           "referee.audit.run.pipeline", "referee.audit.present.replay", "referee.audit.present.summary",
               "referee.audit.run.auditfile",
           "referee.audit.run.resume", "referee.core.lockfile", "referee.audit.ingest.chunks",
               "referee.audit.run.parallel"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    mod = importlib.import_module(name)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0 or name in ("referee.audit.extract.llm",)
