"""Traces written against the auditor's regexes finish (issue 30, cases 1 and 2), and the check that every
pattern of the package is linear (tools/redos_check.py, run by `make check`) finds backtracking it is shown.

Each hostile trace is audited in a child process with a timeout, so a regression fails here instead of
hanging the suite: before the fix the 411-byte trace ran past 60 s (exponential), the others for minutes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.support.hostile_traces import CASES

REPO = Path(__file__).resolve().parents[2]
CHECKER = REPO / "tools" / "redos_check.py"


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_trace_is_audited_not_stalled(tmp_path, cli_env, case):
    fname, build = CASES[case]
    src = tmp_path / fname
    src.write_text(build())
    out = tmp_path / "audit.jsonl"
    rc, _, err = run_cli(["audit", src, "--out", out, "--no-progress", "--workers", "1"], cwd=tmp_path,
                         env=cli_env, timeout=60)
    assert rc in (0, 1), err[-2000:]
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(recs) == 1 and recs[0]["disposition"] in ("pass", "flag", "review"), recs


BAD = '''
import re
NESTED = re.compile(r"^(a+)+$")
LINE_START = re.compile(r"^\\s*(?:update|delete) 0\\s*$", re.M)
COMMENTS = re.compile(r"^\\s*(?:(?:--[^\\n]*\\n|/\\*.*?\\*/)\\s*)*select", re.S)
TWO_CLASSES = re.compile(r"^[\\w./~-]*[/.][\\w./~-]*$")
FINE = re.compile(r"\\bselect\\b")

def inline(text):
    return re.search(r"```[\\w+-]*\\n?(.*?)```", text, re.S)
'''


def _check(tmp_path: Path, source: str, *args: str) -> subprocess.CompletedProcess:
    pkg = tmp_path / "hostile_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(source)
    return subprocess.run([sys.executable, str(CHECKER), "--module", "hostile_pkg", *args], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin"})


def test_the_check_names_each_backtracking_pattern_and_passes_the_linear_one(tmp_path):
    done = _check(tmp_path, BAD, "--size", "1000")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    for name in ("NESTED", "LINE_START", "COMMENTS", "TWO_CLASSES"):
        assert any(f"hostile_pkg.{name}:" in line for line in lines), (name, done.stdout)
    assert any("__init__.py:10:" in line for line in lines), done.stdout  # the inline code-block pattern
    assert not any("FINE" in line for line in lines), done.stdout
    assert "6 patterns, 5 growing faster than linearly" in done.stderr


def test_the_check_passes_a_module_of_linear_patterns(tmp_path):
    done = _check(tmp_path, 'import re\nA = re.compile(r"\\bselect\\b")\nB = re.compile(r"^[ \\t]*+x", re.M)\n')
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 patterns, 0 growing" in done.stderr
