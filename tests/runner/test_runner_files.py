"""Run directories other people read: files honour the umask, and a read-only copy still grades."""

from __future__ import annotations

import json
import os
import stat

import pytest

import referee.report.outputs
from referee.cli.main import main


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """One demo run for the module: both tests only read it (the second grades it with every write refused)."""
    tmp_path = tmp_path_factory.mktemp("files")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("REFEREE_DEMO_DIR", str(tmp_path / "demo"))  # a fresh app database
        # the agent's workspace is the working directory, which the runner walks after every step (for setuid
        # bits it could have left): a folder of its own, not the checkout with its virtualenv
        mp.chdir(tmp_path)
        rc = main(["demo", "--no-browser", "--out", str(tmp_path / "out")])
    assert rc == 0
    return next(p for p in (tmp_path / "out" / "todo-api").iterdir() if p.is_dir() and not p.is_symlink())


def test_evidence_files_are_readable_by_others_under_the_umask(demo_run):
    run_dir = demo_run
    expected = 0o666 & ~_current_umask()
    for name in ("manifest.json", "results.json", "claims.json", "plan.yaml"):
        assert stat.S_IMODE(os.stat(run_dir / name).st_mode) == expected, name


def test_a_read_only_run_directory_still_grades_and_says_it_kept_its_files(demo_run, monkeypatch, capsys):
    run_dir = demo_run
    before = (run_dir / "results.json").read_bytes()

    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(referee.report.outputs, "write_outputs", refuse)
    capsys.readouterr()  # drop any earlier output
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


