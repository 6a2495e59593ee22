"""Run directories other people read: files honour the umask, and a read-only copy still grades."""

from __future__ import annotations

import json
import os
import stat

import referee.report.outputs
from referee.cli.main import main


def _demo_run(tmp_path, monkeypatch):
    monkeypatch.setenv("REFEREE_DEMO_DIR", str(tmp_path / "demo"))  # a fresh app database per test
    rc = main(["demo", "--no-browser", "--out", str(tmp_path / "out")])
    assert rc == 0
    return next(p for p in (tmp_path / "out" / "todo-api").iterdir() if p.is_dir() and not p.is_symlink())


def test_evidence_files_are_readable_by_others_under_the_umask(tmp_path, monkeypatch):
    run_dir = _demo_run(tmp_path, monkeypatch)
    expected = 0o666 & ~_current_umask()
    for name in ("manifest.json", "results.json", "claims.json", "plan.yaml"):
        assert stat.S_IMODE(os.stat(run_dir / name).st_mode) == expected, name


def test_a_read_only_run_directory_still_grades_and_says_it_kept_its_files(tmp_path, monkeypatch, capsys):
    run_dir = _demo_run(tmp_path, monkeypatch)
    before = (run_dir / "results.json").read_bytes()

    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(referee.report.outputs, "write_outputs", refuse)
    capsys.readouterr()  # drop the demo's own output
    rc = main(["grade", str(run_dir), "--json"])
    captured = capsys.readouterr()
    assert rc == 1  # the demo has FAILs: the verdicts were still computed
    assert "results not written (Permission denied)" in captured.err
    assert json.loads(captured.out)["runs"][0]["summary"]["FAIL"] == 2
    assert (run_dir / "results.json").read_bytes() == before


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


