"""`referee prune RUNS_DIR --keep N` (issue 34, housekeeping): the newest N complete runs stay, and so do what
`latest`/`previous` name and every run newer than those kept; older runs go; a link is never followed."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from referee.cli.main import main
from tests.conftest import base_cli_env, run_cli
from tests.runner.runner_helpers import write_plan

# (stamp, how the copy is made): complete, partial (--only), interrupted
RUNS = [("20261201T030000Z", None), ("20261202T030000Z", "interrupted"), ("20261203T030000Z", None),
        ("20261204T030000Z", None), ("20261205T030000Z", "partial"), ("20261206T030000Z", None),
        ("20261207T030000Z", "interrupted")]


@pytest.fixture(scope="module")
def one_run(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("prune-run")
    plan = write_plan(tmp / "p.yaml", {"name": "nightly", "steps": [
        {"id": "a", "do": "x", "validators": [{"kind": "command_exit_code", "command": "true"}]}]})
    code, _, err = run_cli(["run", plan, "--out", tmp / "runs", "--agent", "true"], env=base_cli_env())
    assert code == 0, err
    (run,) = [d for d in (tmp / "runs" / "nightly").iterdir() if d.is_dir() and not d.is_symlink()]
    return run


def _runs_folder(tmp_path: Path, one_run: Path, latest: str | None = None, previous: str | None = None) -> Path:
    folder = tmp_path / "runs" / "nightly"
    for stamp, how in RUNS:
        d = folder / stamp
        shutil.copytree(one_run, d, symlinks=True)
        if how is not None:
            m = json.loads((d / "manifest.json").read_text())
            m.update(error="interrupted") if how == "interrupted" else m.update(options={"only": ["a"]})
            (d / "manifest.json").write_text(json.dumps(m))
    for name, target in (("latest", latest), ("previous", previous)):
        if target:
            os.symlink(target, folder / name)
    return folder


def _left(folder: Path) -> list[str]:
    return sorted(d.name for d in folder.iterdir() if d.is_dir() and not d.is_symlink())


def _cli(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("keep, links, left", [
    # the newest 2 complete runs (04, 06) and everything after the older of them (05 partial, 07 interrupted)
    (2, (None, None), ["20261204T030000Z", "20261205T030000Z", "20261206T030000Z", "20261207T030000Z"]),
    # and what latest/previous name, however old
    (1, ("20261206T030000Z", "20261201T030000Z"),
     ["20261201T030000Z", "20261206T030000Z", "20261207T030000Z"]),
    (10, (None, None), [s for s, _ in RUNS]),
])
def test_prune_keeps_the_newest_complete_runs_and_the_link_targets(one_run, tmp_path, capsys, keep, links, left):
    folder = _runs_folder(tmp_path, one_run, *links)
    code, out, err = _cli(capsys, "prune", folder, "--dry-run", "--keep", keep)
    assert code == 0 and _left(folder) == [s for s, _ in RUNS], err  # a dry run removes nothing
    gone = sorted({s for s, _ in RUNS} - set(left))
    assert [line.split()[-1] for line in out.splitlines() if line.startswith("would remove")] == \
        [str(folder / s) for s in gone]
    code, out, err = _cli(capsys, "prune", folder, "--keep", keep)
    assert code == 0, err
    assert _left(folder) == left
    assert f"removed {len(gone)}, kept {len(left)}" in out
    assert (folder / "index.html").is_file()  # the plan's index no longer lists what is gone
    for s in gone:
        assert f"{s}/report.html" not in (folder / "index.html").read_text()


def test_prune_never_follows_a_link_out_of_the_runs_folder(one_run, tmp_path, capsys):
    folder = _runs_folder(tmp_path, one_run)
    outside = tmp_path / "precious"
    shutil.copytree(one_run, outside / "20250101T000000Z", symlinks=True)  # looks like an old run
    os.symlink(outside / "20250101T000000Z", folder / "20250101T000000Z")  # a link named like a run
    os.symlink(outside, folder / "20240101T000000Z")
    os.symlink(outside, tmp_path / "runs" / "linked-plan")  # a link among the plans of OUT
    os.symlink(outside, folder / RUNS[0][0] / "escape")  # and one inside a run that goes
    code, out, err = _cli(capsys, "prune", tmp_path / "runs", "--keep", 1)
    assert code == 0, err
    assert (outside / "20250101T000000Z" / "manifest.json").is_file() and len(list(outside.rglob("*"))) > 3
    assert (folder / "20250101T000000Z").is_symlink() and (folder / "20240101T000000Z").is_symlink()
    assert _left(folder) == ["20261206T030000Z", "20261207T030000Z"]  # RUNS[0] went, its link with it
    assert "linked-plan" not in out and f"removed {folder / RUNS[0][0]}" in out


@pytest.mark.parametrize("args, says", [
    (["--keep", "0"], "0 is not in the range x>=1"),
    ([], "Missing option '--keep'"),
])
def test_prune_needs_a_keep_of_at_least_one(one_run, tmp_path, capsys, args, says):
    folder = _runs_folder(tmp_path, one_run)
    code, _, err = _cli(capsys, "prune", folder, *args)
    assert code == 2 and says in err and _left(folder) == [s for s, _ in RUNS]


def test_prune_of_a_run_directory_is_a_one_line_error(one_run, tmp_path, capsys):
    folder = _runs_folder(tmp_path, one_run)
    code, _, err = _cli(capsys, "prune", folder / RUNS[0][0], "--keep", "1")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "a run directory, not a runs folder" in err
    assert _left(folder) == [s for s, _ in RUNS]
