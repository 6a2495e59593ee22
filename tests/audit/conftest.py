"""Fixtures for the auditor tests: the OpenAI-compatible loopback stub, data paths, a CLI runner."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # so `tests.support` imports however pytest was started
    sys.path.insert(0, str(ROOT))

from tests.support.llm_stub import LLMStub  # noqa: E402

DATA = ROOT / "tests" / "data" / "traces"
from tests.support.corpora import TAU  # noqa: E402


@pytest.fixture
def llm_stub():
    """A started stub with an empty script; push answers with `llm_stub.push(...)`."""
    with LLMStub() as stub:
        yield stub


@pytest.fixture
def traces_dir() -> Path:
    return DATA


@pytest.fixture
def tau_corpus() -> Path:
    if not TAU.exists():
        pytest.skip("shared tau-bench corpus not present")
    return TAU
