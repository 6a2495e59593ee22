"""Fixtures for evaluation tests: audit-record builders, a report-biased LLM judge stub, CLI runner."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # so `tests.support` imports however pytest was started
    sys.path.insert(0, str(ROOT))

from tests.evaluation.helpers import biased_judge  # noqa: E402
from tests.support.corpora import TAU  # noqa: E402
from tests.support.llm_stub import LLMStub  # noqa: E402


@pytest.fixture
def judge_stub():
    """A loopback OpenAI-compatible server answering as `biased_judge`."""
    with LLMStub(handler=biased_judge) as stub:
        yield stub


@pytest.fixture
def tau_corpus() -> Path:
    if not TAU.exists():
        pytest.skip("shared tau-bench corpus not present")
    return TAU


@pytest.fixture
def cli(capsys):
    """Run `referee ...` in-process; returns (exit code, stdout, stderr)."""
    from referee.cli.main import main

    def run(*args: str):
        code = main([str(a) for a in args])
        out = capsys.readouterr()
        return code, out.out, out.err

    return run
