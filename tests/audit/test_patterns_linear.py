"""Traces written against the auditor's regexes finish (issue 30, cases 1 and 2), and the check that every
pattern of the package is linear (tools/redos_check.py, run by `make check`) finds backtracking it is shown.

Each hostile trace is audited in a child process with a timeout, so a regression fails here instead of
hanging the suite: before the fix the 411-byte trace ran past 60 s (exponential), the others for minutes.
"""

from __future__ import annotations

import importlib
import json
import random
import re
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
    # NESTED and COMMENTS are exponential: they never finish, so each costs the whole timeout (3 CPU-s, not the
    # default 20); a quadratic pattern's measurement at this size takes about 1 CPU-s
    done = _check(tmp_path, BAD, "--size", "1000", "--timeout", "3")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    for name in ("NESTED", "LINE_START", "COMMENTS", "TWO_CLASSES"):
        assert any(f"hostile_pkg.{name}:" in line for line in lines), (name, done.stdout)
    assert any("hostile_pkg.NESTED:" in line and "no answer in 3 s" in line for line in lines), done.stdout
    assert any("for 4x the input" in line for line in lines), done.stdout  # a growth measured, not a timeout
    assert any("__init__.py:10:" in line for line in lines), done.stdout  # the inline code-block pattern
    assert not any("FINE" in line for line in lines), done.stdout
    assert "6 patterns, 5 growing faster than linearly (not measured: 1 without a long repeat" in done.stderr


def test_a_pattern_written_into_re_match_is_searched_from_the_start_only(tmp_path):
    # `[a-z]*` backtracks over a run from each start of a search, but `re.match` has one start: linear
    src = 'import re\n\ndef key(t):\n    return re.match(r"([a-z]{3})[a-z]*\\.? (\\d{1,2})", t)\n'
    done = _check(tmp_path, src, "--size", "1000")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 patterns, 0 growing" in done.stderr


def test_the_check_passes_a_module_of_linear_patterns(tmp_path):
    done = _check(tmp_path, 'import re\nA = re.compile(r"\\bselect\\b")\nB = re.compile(r"^[ \\t]*+x", re.M)\n')
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 patterns, 0 growing" in done.stderr


# Each rewritten pattern, before and after, on random texts made of the tokens that matter to it: the same matches
# (groups and end; a match may now start earlier, at the text's or line's start, where only its group is used).
_OLD_NEW = [
    ("mini_swe_agent._PR_RE", r"<pr_description>(.*?)</pr_description>", re.S, "search",
     ["<pr_description>", "</pr_description>", "a", "\n", " ", "<", "/"]),
    ("mini_swe_agent._ISSUE_RE", r"\bISSUE:\s*\n(.*?)\n\s*INSTRUCTIONS:", re.S, "search",
     ["ISSUE:", "INSTRUCTIONS:", "\n", " ", "\t", "a", "xISSUE:", "b c"]),
    ("mini_swe_agent._INSTANCE_RE", r"^([^/\s]+?)__([^/\s]+)-\d+$", 0, "match",
     ["__", "_", "-", "1", "a", "/", " ", "-12", "\n"]),
    ("mini_swe_agent._ASK", r"(your task is[^.\n]*\.)", re.I, "search",
     ["Your task is", "your task is", "a", ".", "\n"]),
    ("aider._START", r"^# aider chat started at (.+?)\s*$", 0, "match", ["a", " ", "\t", "b", "\r"]),
    ("claude_code._COMMAND", r"<command-name>\s*([^<]*?)\s*</command-name>", re.I, "search",
     ["<command-name>", "</command-name>", " ", "\n", "a", "<", "b c", "</COMMAND-NAME>"]),
    ("cues.CODE_BLOCK", r"```[\w+-]*\n?(.*?)```", re.S, "findall", ["```", "a", "+", "\n", " ", "`", "py"]),
    ("selection._TOKEN", r"\s*(\(|\)|[^\s()]+)", 0, "findall", ["(", ")", " ", "a", "and", "\t"]),
]


@pytest.mark.parametrize("name, old, flags, how, alphabet", _OLD_NEW, ids=[x[0] for x in _OLD_NEW])
def test_a_rewritten_pattern_matches_as_before(name, old, flags, how, alphabet):
    module, attr = name.split(".")
    mod = importlib.import_module(next(m for m in _MODULES if m.endswith("." + module)))
    new, before = getattr(mod, attr), re.compile(old, flags)
    rnd = random.Random(30)
    for _ in range(6000):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 14)))
        if name == "aider._START":
            text = "# aider chat started at " + text
        if how == "findall":
            assert new.findall(text) == before.findall(text), text
            continue
        a, b = getattr(before, how)(text), getattr(new, how)(text)
        if name == "mini_swe_agent._ISSUE_RE" and a and not a.group(1).strip() and b is None:
            continue  # an ISSUE of blanks: no match now; task_text reads the whole message either way
        assert (a and (a.groups(), a.end())) == (b and (b.groups(), b.end())), text


_MODULES = ("referee.audit.ingest.readers.mini_swe_agent", "referee.audit.ingest.readers.aider",
            "referee.audit.ingest.readers.claude_code",
            "referee.audit.claim.cues", "referee.plan.selection")


def test_a_task_class_is_read_on_the_tasks_first_characters():
    from referee.audit.decide.policyfile import load_policy
    from referee.audit.decide.taskclass import MAX_TASK_CHARS, classify_task

    rule = load_policy("causal").policy.task_classes.rule()
    assert classify_task("\n" * 100_000 + "x", rule) == ("other", None)  # was quadratic in the blank lines
    assert classify_task("What is the fare?" + "\n" * 100_000, rule)[0] == "query"
    # the cut does not split a word into a new one: "add" of "address" is not read as a word
    text = "Note: " + "z" * (MAX_TASK_CHARS - 10) + " address"  # the cut falls after its "add"
    assert text[:MAX_TASK_CHARS].endswith(" add")
    assert classify_task(text, rule) == ("other", None)


def test_aider_edit_blocks_are_found_as_before_in_one_pass():
    from referee.audit.ingest.readers import aider

    old = re.compile(r"^(?P<path>[^\n`]+?)\n```[^\n]*\n<<<<<<< SEARCH\n(?P<search>.*?)^=======\n(?P<replace>.*?)"
                     r"^>>>>>>> REPLACE\n```", re.S | re.M)
    tokens = ["a.py\n", "```\n", "```py\n", "<<<<<<< SEARCH\n", "=======\n", ">>>>>>> REPLACE\n", "x\n", "`", "b "]
    rnd = random.Random(30)
    for _ in range(6000):
        text = "".join(rnd.choice(tokens) for _ in range(rnd.randint(0, 16)))
        found = aider._blocks(aider._EDIT, aider._EDIT_HEAD, text)
        assert [(m.span(), m.groupdict()) for m in found] == [(m.span(), m.groupdict()) for m in old.finditer(text)]


def test_the_run_directory_readers_tag_strippers_do_what_the_regexes_did():
    from referee.audit.ingest.readers.referee_run import _strip_comments, _strip_tags

    rnd = random.Random(30)
    tokens = ["<!--", "-->", "<", ">", "a", "-", "!", "<>", " "]
    for _ in range(6000):
        html = "".join(rnd.choice(tokens) for _ in range(rnd.randint(0, 14)))
        assert _strip_comments(html) == re.sub(r"(?s)<!--.*?-->", " ", html), html
        assert _strip_tags(html) == re.sub(r"<[^>]+>", " ", html), html
    assert _strip_tags("<" * 200_000 + "x") == "<" * 200_000 + "x"  # one pass: was quadratic in the unclosed `<`
