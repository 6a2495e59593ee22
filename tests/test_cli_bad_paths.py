"""Ordinary mistakes with paths and bytes are one line and exit 2, never an internal error (issue 11.13)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.incli import completed

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples" / "traces.jsonl"
DEMO_PLAN = ROOT / "src" / "referee" / "demo" / "todo-api.yaml"


def referee(*args, cwd=None) -> subprocess.CompletedProcess:
    """`referee ARGS` as the console would show it: in this process (tests.support.incli), its exit code and
    stderr as a child's (a traceback there is exit 1 and a `Traceback` on stderr, as in a child)."""
    # the demo plan names ${REFEREE_DEMO_DIR} (`referee demo` sets it): set, or the run stops at that plan error
    env = {**os.environ, "REFEREE_DEMO_DIR": os.environ.get("REFEREE_DEMO_DIR", "/tmp")}
    return completed(args, cwd=cwd, env=env)


def one_line_error(r: subprocess.CompletedProcess, *needles: str) -> None:
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("referee: error:"), r.stderr
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    for n in needles:
        assert n in lines[-1], lines[-1]


@pytest.mark.parametrize("args", [
    ("run", DEMO_PLAN, "--agent", "true", "--out", "/proc/x"),
    ("audit", EXAMPLES, "--out", "/proc/x/audit.jsonl"),
    ("schema", "plan", "-o", "/proc/x.json"),
])
def test_an_output_path_that_cannot_be_written_is_one_line(args, monkeypatch, tmp_path):
    monkeypatch.setenv("REFEREE_DEMO_DIR", str(tmp_path))  # the demo plan's ${VAR}: unset is a plan error
    one_line_error(referee(*args), "/proc/x")


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    """An audit of the examples and its gold file, which the tests below only read."""
    tmp_path = tmp_path_factory.mktemp("audited")
    out, gold = tmp_path / "audit.jsonl", tmp_path / "gold.jsonl"
    r = referee("audit", EXAMPLES, "--out", out, "--gold-out", gold, "--no-progress")
    assert r.returncode == 0, r.stderr
    return out, gold


def test_eval_on_a_non_utf8_audit_file_names_the_line(audited, tmp_path):
    out, gold = audited
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(out.read_bytes() + b'{"run_id": "\xff\xfe"}\n')
    one_line_error(referee("eval", bad, "--gold", gold, "--no-plot"), "bad.jsonl:line 6", "UTF-8")


def test_eval_plot_to_an_unwritable_path_is_one_line(audited):
    out, gold = audited
    one_line_error(referee("eval", out, "--gold", gold, "--plot", "/proc/x.png"), "/proc/x.png")


@pytest.mark.parametrize("kind", ["not a database", "a folder"])
def test_a_cache_that_is_not_a_cache_is_one_line_and_left_as_it_was(kind, tmp_path):
    cache = tmp_path / "evidence.sqlite"
    if kind == "a folder":
        cache.mkdir()
    else:
        cache.write_bytes(b"these are my notes, not SQLite\n" * 100)
    before = cache.read_bytes() if cache.is_file() else None
    r = referee("audit", EXAMPLES, "--out", tmp_path / "audit.jsonl", "--cache", cache, "--no-progress")
    one_line_error(r, str(cache), "--cache")
    if before is not None:
        assert cache.read_bytes() == before, "a file that is not a cache was written to"


def test_another_sqlite_database_given_as_the_cache_is_refused_and_left_as_it_was(tmp_path):
    import sqlite3

    app = tmp_path / "app.db"
    with sqlite3.connect(app) as db:
        db.execute("CREATE TABLE orders (id TEXT)")
        db.execute("INSERT INTO orders VALUES ('A1')")
    db.close()
    before = app.read_bytes()
    r = referee("audit", EXAMPLES, "--out", tmp_path / "audit.jsonl", "--cache", app, "--no-progress")
    one_line_error(r, str(app), "another database (tables orders)", "--cache")
    assert app.read_bytes() == before, "the other database was changed"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"], "nothing is made beside it"


def test_a_cache_written_before_is_used_again(tmp_path):
    cache = tmp_path / "c.sqlite"
    for out in ("a.jsonl", "b.jsonl"):
        r = referee("audit", EXAMPLES, "--out", tmp_path / out, "--cache", cache, "--no-progress")
        assert r.returncode == 0, r.stderr
    assert "0 backend calls" in r.stdout, r.stdout  # the second audit's evidence all came from the cache
