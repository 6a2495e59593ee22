"""A plan's runs folder (`runs/<plan>/`): its `latest` and `previous` links to its two newest complete runs,
and reading a folder given to `referee grade`/`report` as a run directory (a plan's runs folder means its
latest run).

Each link is a symbolic link to the run directory's name, replaced atomically (a new link renamed
over the old). Where symbolic links cannot be made, it is a text file holding that name. Only a
complete run moves them (`runner.history.incomplete_reason`): the runner calls `update_links` after grading.
"""

from __future__ import annotations

import os
from pathlib import Path

from referee.core.fsutil import atomic_write_text
from referee.errors import UsageError

LATEST = "latest"
PREVIOUS = "previous"


def update_latest(run_dir: Path) -> None:
    """Point `<plan folder>/latest` at `run_dir` (best effort: a run never fails for its link).

    >>> import tempfile; d = Path(tempfile.mkdtemp()) / "p" / "20260101T000000Z"; d.mkdir(parents=True)
    >>> update_latest(d); os.readlink(d.parent / "latest")
    '20260101T000000Z'
    """
    _point(Path(run_dir), LATEST)


def update_links(run_dir: Path, previous: Path | None) -> None:
    """After a complete run: `latest` -> `run_dir`, `previous` -> `previous` (the plan's complete run before it;
    None: there is none, and a stale `previous` goes). Best effort, like `update_latest`."""
    run_dir = Path(run_dir)
    if previous is not None:
        _point(Path(previous), PREVIOUS)
    else:
        stale = run_dir.parent / PREVIOUS
        try:
            if stale.is_symlink() or stale.is_file():
                stale.unlink()
        except OSError:
            pass
    _point(run_dir, LATEST)


def _point(run_dir: Path, name: str) -> None:
    link = run_dir.parent / name
    tmp = run_dir.parent / f".{name}.{os.getpid()}.tmp"
    try:
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()
        os.symlink(run_dir.name, tmp)
        os.replace(tmp, link)
        return
    except (OSError, NotImplementedError):
        try:
            if tmp.is_symlink():
                tmp.unlink()
        except OSError:
            pass
    try:
        if not link.is_dir() or link.is_symlink():
            atomic_write_text(link, run_dir.name + "\n", durable=False)
    except OSError:
        pass


def _named(folder: Path, name: str, how: str) -> Path:
    name = name.strip()
    if not name or "/" in name or "\\" in name or name in (".", ".."):
        raise UsageError(f"{how} does not name a run directory of this folder", file=str(folder / LATEST),
                         fix="run the plan again, or pass a run directory")
    target = folder / name
    if not (target / "manifest.json").is_file():
        raise UsageError(f"{how} names {name}, which is not a run directory (deleted?)", file=str(folder / LATEST),
                         fix=f"pass a run directory of {folder}, or run the plan again")
    return target


def latest_in(folder: Path, name: str = LATEST) -> Path | None:
    """The run `folder/latest` (or `folder/<name>`: `previous`) names, or None when the folder has none."""
    link = Path(folder) / name
    if link.is_symlink():
        return _named(Path(folder), os.readlink(link), f"the `{name}` link")
    if link.is_file():
        try:
            text = link.read_text(encoding="utf-8", errors="replace")[:1000]
        except OSError as exc:
            raise UsageError(f"cannot read `{name}`: {exc.strerror or exc}", file=str(link)) from None
        return _named(Path(folder), text, f"the `{name}` file")
    return None


def resolve_run_dir(path: str | Path) -> Path:
    """A run directory as given, or the latest run of a plan's runs folder (`runs/<plan>`); a runs folder with
    runs but no complete one yet is an error naming its newest run.

    Anything else comes back unchanged (the reader says what is wrong with it), except a folder of
    runs folders (`runs/`), which is an error listing them.
    """
    path = Path(path)
    if (path / "manifest.json").is_file() or not path.is_dir():
        return path
    found = latest_in(path)
    if found is not None:
        return found
    try:
        runs = sorted(c.name for c in path.iterdir() if not c.is_symlink() and (c / "manifest.json").is_file())
    except OSError:
        runs = []
    if runs:  # a plan's runs folder before its first complete run: `latest` names complete runs only
        raise UsageError("no complete run here yet: `latest` names a complete run only", file=str(path),
                         fix=f"pass a run directory, e.g. the newest: {path / runs[-1]}")
    try:
        plans = sorted(c.name for c in path.iterdir()
                       if c.is_dir() and ((c / LATEST).is_symlink() or (c / LATEST).is_file()))
    except OSError:
        plans = []
    if plans:
        listing = ", ".join(str(path / p) for p in plans[:10]) + (", ..." if len(plans) > 10 else "")
        raise UsageError("a folder of several plans' runs, not one run directory", file=str(path),
                         fix=f"pass one plan's runs folder or run directory: {listing}")
    return path
