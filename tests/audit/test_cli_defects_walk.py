"""Walks and quoted globs read each file once: --include narrows bad items too, a file reached again through a
link is read once, and a `**` glob neither loops on nor repeats a folder reached again through a link."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.audit.ingest.inputs import expand_args


def good(rid: str) -> str:
    return json.dumps({"trace_version": 1, "run_id": rid, "task": "Delete the note named a.md",
                       "steps": [{"action": {"name": "delete_note", "args": {"name": "a.md"}},
                                  "observation": {"text": "deleted a.md"}}],
                       "report": "Done, deleted a.md."}) + "\n"


def closing(out: str) -> str:
    return next(ln for ln in out.splitlines() if ln.startswith("wrote "))


@pytest.fixture
def linked(tmp_path) -> Path:
    d = tmp_path / "d"
    (d / "sub").mkdir(parents=True)
    (d / "a.jsonl").write_text(good("ok1"))
    (d / "sub" / "b.jsonl").write_text(good("ok2"))
    return d


def test_include_leaves_out_a_dangling_link_it_does_not_match(referee_cli, linked, tmp_path):
    (linked / "broken.jsonl").symlink_to("/nonexistent/x.jsonl")
    rc, out, err = referee_cli("audit", "d", "--include", "sub/b.jsonl", "--out", "a.jsonl", "--no-progress",
                               "--show", "none", cwd=tmp_path)
    assert rc == 0, err
    assert "broken.jsonl" not in err + out and "0 bad records skipped" in closing(out)
    assert [json.loads(ln)["run_id"] for ln in (tmp_path / "a.jsonl").read_text().splitlines()] == ["ok2"]


def test_include_still_reports_a_dangling_link_it_matches(referee_cli, linked, tmp_path):
    (linked / "sub" / "gone.jsonl").symlink_to("/nonexistent/x.jsonl")
    rc, out, err = referee_cli("audit", "d", "--include", "sub/*", "--out", "a.jsonl", "--no-progress",
                               "--show", "none", cwd=tmp_path)
    assert rc == 1 and "gone.jsonl: a link that leads to no file" in err, err
    assert "1 bad records skipped" in closing(out)


def test_without_include_a_dangling_trace_link_is_still_a_bad_item(referee_cli, linked, tmp_path):
    (linked / "broken.jsonl").symlink_to("/nonexistent/x.jsonl")
    rc, out, err = referee_cli("audit", "d", "--out", "a.jsonl", "--no-progress", "--show", "none", cwd=tmp_path)
    assert rc == 1 and "broken.jsonl: a link that leads to no file" in err, err


def test_a_file_reached_again_through_a_link_is_read_once(referee_cli, linked, tmp_path):
    (linked / "sub" / "same.jsonl").symlink_to("../a.jsonl")
    rc, out, err = referee_cli("audit", "d", "--out", "a.jsonl", "--no-progress", "--show", "none", cwd=tmp_path)
    assert rc == 0, err
    assert "duplicate" not in err and "0 duplicate run_ids" in closing(out) and "wrote 2 records" in closing(out)


def test_a_hard_link_in_a_walk_is_read_once(referee_cli, linked, tmp_path):
    (linked / "sub" / "hard.jsonl").hardlink_to(linked / "a.jsonl")
    rc, out, err = referee_cli("audit", "d", "--out", "a.jsonl", "--no-progress", "--show", "none", cwd=tmp_path)
    assert rc == 0, err
    assert "duplicate" not in err and "0 duplicate run_ids" in closing(out)


def test_a_run_folder_reached_again_through_a_link_is_read_once(tmp_path):
    from referee.audit.ingest.inputs import InputItem, walk
    from tests.support import openhands_events as oe

    root = tmp_path / "runs"
    exp = oe.fixed().write(root / "a", "sess")
    (root / "b").mkdir()
    (root / "b" / "again").symlink_to(exp)
    items = [i for i in walk([root]) if isinstance(i, InputItem)]
    assert [i.path.relative_to(root).as_posix() for i in items] == ["a/sessions/sess"]


def loop_tree(top: Path, links: int) -> Path:
    (top / "sub").mkdir(parents=True)
    (top / "sub" / "b.json").write_text(good("ok1"))
    for i in range(links):
        (top / "sub" / f"up{i or ''}").symlink_to("..")
    return top


def test_a_star_star_glob_reads_a_file_once_past_a_link_up(referee_cli, tmp_path):
    loop_tree(tmp_path / "t", 1)
    rc, out, err = referee_cli("audit", "t/**/*.json", "--out", "a.jsonl", "--no-progress", cwd=tmp_path)
    assert rc == 0, err
    assert "duplicate" not in err and "wrote 1 records" in closing(out) and "0 duplicate run_ids" in closing(out)


def test_a_star_star_glob_ends_with_two_links_up(referee_cli, tmp_path):
    loop_tree(tmp_path / "u", 2)
    rc, out, err = referee_cli("audit", "u/**/*.json", "--out", "a.jsonl", "--no-progress", cwd=tmp_path,
                               timeout=30)
    assert rc == 0, err
    assert "duplicate" not in err and "0 duplicate run_ids" in closing(out)


def test_glob_expansion_keeps_what_glob_matches(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r" / "x" / "y").mkdir(parents=True)
    (tmp_path / "r" / ".hidden").mkdir()
    for rel in ("r/a.json", "r/x/b.json", "r/x/y/c.json", "r/x/y/c.txt", "r/.hidden/d.json", "r/x/.e.json"):
        (tmp_path / rel).write_text("{}")
    (tmp_path / "r" / "latest").symlink_to("x")  # a link to a sibling folder: its files are read once, as x's
    names = [p.as_posix() for p in expand_args(["r/**/*.json"])]
    assert names == ["r/a.json", "r/x/b.json", "r/x/y/c.json"]
    assert [p.as_posix() for p in expand_args(["r/*/*.json"])] == ["r/x/b.json"]
    assert [p.as_posix() for p in expand_args(["r/x/*/c.*"])] == ["r/x/y/c.json", "r/x/y/c.txt"]
    assert [p.as_posix() for p in expand_args(["r/.hidden/*.json"])] == ["r/.hidden/d.json"]
    assert [p.as_posix() for p in expand_args(["r/[a]*.json"])] == ["r/a.json"]
    assert [p.as_posix() for p in expand_args(["*/a.json"])] == ["r/a.json"]
    assert [p.as_posix() for p in expand_args([str(tmp_path / "r" / "x" / "**" / "c.json")])] == \
        [(tmp_path / "r/x/y/c.json").as_posix()]


def test_glob_through_a_linked_folder_finds_what_is_only_there(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "z.json").write_text("{}")
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "ext").symlink_to(tmp_path / "elsewhere")
    assert [p.as_posix() for p in expand_args(["r/**/*.json"])] == ["r/ext/z.json"]
