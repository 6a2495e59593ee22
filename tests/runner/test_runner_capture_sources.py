"""Captures that read where the agent writes never carry into the evidence what the agent could not read.

The runner captures as itself (root here), the agent runs isolated as someone with fewer rights, and
the evidence is readable to the agent's next step (and to whoever gets the run's artifacts). So a
link the agent made in its workspace is never followed by a capture, the signing key is never kept
by any capture or agent file, and a copy is no more readable than the file it copies.
"""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import stat
from pathlib import Path

import pytest

from referee.rundir.keys import load_key


def _sh(tmp_path: Path, body: str) -> str:
    path = tmp_path / "agent.sh"
    path.write_text("#!/bin/sh\n" + body + 'echo \'{"pass": true}\' > "$REFEREE_CLAIM_FILE"\n')
    path.chmod(0o755)
    return f"sh {shlex.quote(str(path))}"


def _key() -> tuple[Path, bytes]:
    """The suite's signing key (made now if no run made it yet) and its bytes as the file holds them."""
    path = Path(os.environ["REFEREE_KEY_FILE"])
    load_key(path=path)
    return path, path.read_bytes().strip()


def _holding(run_dir: Path, secret: bytes) -> list[str]:
    return [p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*")
            if p.is_file() and not p.is_symlink() and secret in p.read_bytes()]


def _private(tmp_path: Path, text: str) -> Path:
    """A folder only root may enter, with a file only root may read."""
    folder = tmp_path / "private"
    folder.mkdir()
    folder.chmod(0o700)
    (folder / "out.txt").write_text(text)
    (folder / "out.txt").chmod(0o600)
    return folder


def test_a_link_the_agent_made_on_the_way_to_a_captured_file_is_not_followed(run_plan, tmp_path):
    folder = _private(tmp_path, "private-content-7f3a")
    agent = _sh(tmp_path, f"ln -s {shlex.quote(str(folder))} {shlex.quote(str(tmp_path / 'reports'))}\n")
    steps = [{"id": "s1", "do": "write reports/out.txt",
              "validators": [{"kind": "file_exists", "path": "reports/out.txt"}]}]
    run = run_plan({"name": "onway", "steps": steps}, agent=agent)
    assert run.verdict("s1") == "ERROR", run.explain()
    assert f"reports is a link (to {folder})" in run.reasons("s1"), run.reasons("s1")
    assert _holding(run.run_dir, b"private-content-7f3a") == []


def test_the_signing_key_is_never_copied_even_by_a_hard_link(run_plan, tmp_path):
    key_file, secret = _key()
    try:
        os.link(key_file, tmp_path / "report.txt")  # what an agent could do where hard links are not protected
    except OSError as exc:
        pytest.skip(f"cannot hard-link the key here: {exc}")
    steps = [{"id": "s1", "do": "x", "validators": [{"kind": "file_exists", "path": "report.txt"}]}]
    run = run_plan({"name": "hardlink", "steps": steps}, agent=_sh(tmp_path, ""))
    assert run.verdict("s1") == "ERROR", run.explain()
    assert "it is the runner's signing key; never copied into evidence" in run.reasons("s1")
    assert _holding(run.run_dir, secret) == []


def test_a_copy_is_no_more_readable_than_the_file_it_copies(run_plan, tmp_path):
    (tmp_path / "mine.txt").write_text("only mine")
    (tmp_path / "mine.txt").chmod(0o600)
    (tmp_path / "shared.txt").write_text("for all")
    (tmp_path / "shared.txt").chmod(0o644)
    steps = [{"id": "s1", "do": "x", "validators": [{"kind": "file_exists", "path": "mine.txt"},
                                                    {"kind": "file_exists", "path": "shared.txt"}]}]
    run = run_plan({"name": "modes", "steps": steps}, agent=_sh(tmp_path, ""))
    assert run.verdict("s1") == "PASS", run.explain()
    after = run.run_dir / "evidence" / "s1" / "after"
    mine = stat.S_IMODE(os.stat(after / "_v0_file_exists.data" / "mine.txt").st_mode)
    shared = stat.S_IMODE(os.stat(after / "_v1_file_exists.data" / "shared.txt").st_mode)
    assert mine == 0o600, oct(mine)
    assert shared & 0o444 == 0o444, oct(shared)  # (under the suite's umask, as every evidence file)


def test_a_sqlite_database_the_agent_linked_elsewhere_is_not_opened(run_plan, tmp_path):
    folder = tmp_path / "private"
    folder.mkdir()
    folder.chmod(0o700)
    with sqlite3.connect(folder / "other.db") as db:
        db.execute("create table t (v text)")
        db.execute("insert into t values ('private-row-91c2')")
    db.close()
    agent = _sh(tmp_path, f"ln -s {shlex.quote(str(folder / 'other.db'))} {shlex.quote(str(tmp_path / 'app.db'))}\n")
    steps = [{"id": "s1", "do": "x", "validators": [{"kind": "sql_row_present", "url": "sqlite:///app.db",
                                                     "query": "select v from t"}]}]
    run = run_plan({"name": "sqlink", "steps": steps}, agent=agent)
    assert run.verdict("s1") == "ERROR", run.explain()
    assert "app.db: it is a link" in run.reasons("s1"), run.reasons("s1")
    assert _holding(run.run_dir, b"private-row-91c2") == []


@pytest.mark.parametrize("run_as", ["agent", "runner"])
def test_a_command_capture_that_prints_the_signing_key_is_not_kept(run_plan, tmp_path, run_as):
    """`cat report.txt` is the plan's command; the agent made report.txt a link to the key. Run as the agent (the
    default, under user isolation) it cannot read the key at all; run as the runner, what it printed is refused."""
    key_file, secret = _key()
    agent = _sh(tmp_path, f"ln -sf {shlex.quote(str(key_file))} {shlex.quote(str(tmp_path / 'report.txt'))}\n")
    steps = [{"id": "s1", "do": "x", "validators": [{"kind": "command_exit_code", "command": "cat report.txt",
                                                     "run_as": run_as}]},
             {"id": "s2", "do": "x", "capture": [{"kind": "command", "name": "raw", "command": "cat report.txt",
                                                  "stdout_as": "raw.txt", "run_as": run_as}],
              "validators": [{"kind": "text_contains", "evidence": "raw", "text": "x"}]}]
    run = run_plan({"name": "catkey", "steps": steps}, agent=agent)
    as_agent = run_as == "agent" and run.manifest["isolation"]["mode"] in ("user", "bwrap")
    if as_agent and run.manifest["isolation"]["mode"] == "user":
        assert run.verdicts() == {"s1": "FAIL", "s2": "FAIL"}, run.explain()
        assert "Permission denied" in run.reasons("s1"), run.reasons("s1")
    elif not as_agent:
        assert run.verdicts() == {"s1": "ERROR", "s2": "ERROR"}, run.explain()
        for sid in ("s1", "s2"):
            assert "holds the runner's signing key; removed" in run.reasons(sid), run.reasons(sid)
    assert _holding(run.run_dir, secret) == []


def test_an_unisolated_agent_that_prints_or_saves_the_key_gets_neither_kept(run_plan, tmp_path):
    """Unisolated, the agent can read the key (security-evidence.md says so); it still never lands in the run
    directory, which others read (CI artifacts)."""
    key_file, secret = _key()
    q = shlex.quote(str(key_file))
    agent = _sh(tmp_path, f'cat {q}; cat {q} > "$REFEREE_AGENT_DIR/loot.txt"\n'
                          'echo fine > "$REFEREE_AGENT_DIR/ok.txt"\n')
    steps = [{"id": "s1", "do": "x", "validators": [{"kind": "text_contains", "evidence": "ok.txt", "text": "fine"}]}]
    run = run_plan({"name": "printkey", "actor": {"kind": "command", "isolation": "none"}, "steps": steps},
                   agent=agent)
    assert run.verdict("s1") == "PASS", run.explain()
    why = run.manifest["steps"]["s1"]["actor_error"]
    assert "agent/s1/loot.txt: holds the runner's signing key; removed" in why, why
    assert "agent/s1/stdout.txt: holds the runner's signing key; removed" in why, why
    assert _holding(run.run_dir, secret) == []


def test_doctests():
    import doctest
    import importlib

    for name in ("referee.runner.captures.sources", "referee.runner.captures.files"):
        result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
        assert not result.failed, name


def test_a_file_too_big_to_copy_exists_but_its_content_is_error_not_fail(run_plan, tmp_path):
    """Over 256 MiB the runner records the size and keeps no copy: the grader cannot look at what the file held,
    which is ERROR ("could not look"), never a FAIL it did not see (a sparse file: no disk is used)."""
    with open(tmp_path / "big.txt", "wb") as fh:
        fh.truncate(300 << 20)
    steps = [{"id": "s", "do": "x", "capture": [{"kind": "file", "name": "big", "path": "big.txt"}],
              "validators": [{"kind": "file_exists", "path": "big.txt"},
                             {"kind": "text_contains", "evidence": "big", "text": "hello"}]}]
    run = run_plan({"name": "bigfile", "steps": steps}, agent="true")
    assert run.verdict("s") == "ERROR", run.explain()
    assert "too big for the runner to copy" in run.reasons("s"), run.reasons("s")
    results = {v["kind"]: v["status"] for v in json.loads((run.run_dir / "results.json").read_text())["steps"][0]
               ["validators"]}
    assert results == {"file_exists": "PASS", "text_contains": "ERROR"}, results
