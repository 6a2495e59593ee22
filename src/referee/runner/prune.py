"""`referee prune`: remove a plan's old run directories, keeping the newest complete ones and the link targets.

Kept: the newest `keep` complete runs, whatever `latest` and `previous` name, and every run newer than the
oldest run kept (an incomplete run there may still be in progress, or be the one a user is looking at).
Removed: the runs older than that. Only the folder's own run directories are removed, each with
`fstree.remove_tree` on the (device, inode) it had when listed: a link in the runs folder is never
followed (not `latest`, not a link an agent or anyone put there), and a folder swapped meanwhile is left.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from referee.core.fstree import identity, remove_tree
from referee.errors import UsageError
from referee.rundir.folders import LATEST, PREVIOUS, latest_in
from referee.runner.history import incomplete_reason, plan_folders, run_dirs

__all__ = ["Pruned", "plan_prune", "prune"]


@dataclass(frozen=True)
class Pruned:
    """What pruning one plan's runs folder removes (or would, with --dry-run), and what it keeps."""

    plan_dir: Path
    removed: tuple[Path, ...]
    kept: tuple[Path, ...]
    failed: tuple[tuple[Path, str], ...] = ()


def _targets(plan_dir: Path) -> set[str]:
    names = set()
    for link in (LATEST, PREVIOUS):
        try:
            found = latest_in(plan_dir, link)
        except UsageError:  # a link to a run that is gone: it keeps nothing
            found = None
        if found is not None:
            names.add(found.name)
    return names


def plan_prune(plan_dir: Path, keep: int, *, dry_run: bool = False) -> Pruned:
    """Prune one plan's runs folder (see the module docstring)."""
    dirs = run_dirs(plan_dir)  # oldest first; links left out
    complete = [d for d in dirs if incomplete_reason(d) is None]
    kept_complete = complete[-keep:] if keep > 0 else []
    linked = _targets(Path(plan_dir))
    oldest = dirs.index(kept_complete[0]) if kept_complete else len(dirs)
    keep_set = {d for i, d in enumerate(dirs) if i >= oldest or d in kept_complete or d.name in linked}
    removed, failed = [], []
    for d in dirs:
        if d in keep_set:
            continue
        if not dry_run:
            try:
                remove_tree(d, expect=identity(d))
            except OSError as exc:
                failed.append((d, exc.strerror or str(exc)))
                continue
        removed.append(d)
    return Pruned(Path(plan_dir), tuple(removed), tuple(d for d in dirs if d in keep_set), tuple(failed))


def prune(runs_dir: Path, keep: int, *, dry_run: bool = False) -> list[Pruned]:
    """Prune a plan's runs folder, or each plan's of an `--out` folder. A folder with no runs is a UsageError."""
    runs_dir = Path(runs_dir)
    if (runs_dir / "manifest.json").is_file():
        raise UsageError("a run directory, not a runs folder", file=str(runs_dir),
                         fix=f"pass its plan's runs folder, {runs_dir.parent}, or the --out folder above it")
    if run_dirs(runs_dir):
        return [plan_prune(runs_dir, keep, dry_run=dry_run)]
    plans = plan_folders(runs_dir)
    if not plans:
        raise UsageError("no run directory here", file=str(runs_dir),
                         fix="pass a plan's runs folder (OUT/<plan>) or the --out folder of `referee run`")
    return [plan_prune(p, keep, dry_run=dry_run) for p in plans]
