"""Every data file under src/referee goes into the wheel: the package-data globs of pyproject.toml cover it.

The demo's control screenshot (demo/controls/start.png) was left out, so `referee demo` installed from a
wheel skipped its lint ("control file not found"), while an editable install had it."""

from __future__ import annotations

import tomllib
from pathlib import PurePosixPath

from tests.conftest import ROOT


def test_the_wheel_globs_cover_every_data_file_of_the_package():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = config["tool"]["setuptools"]["package-data"]["referee"]
    pkg = ROOT / "src" / "referee"
    data = [p.relative_to(pkg).as_posix() for p in pkg.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".py", ".pyc")]
    assert data, "no data files found: the test looks in the wrong place"
    left_out = [f for f in data if not any(PurePosixPath(f).match(g.removeprefix("**/")) for g in globs)]
    assert left_out == [], f"not in the wheel (add to [tool.setuptools.package-data]): {left_out}"
