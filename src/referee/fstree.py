"""Folder trees an agent made, walked and removed without recursion and without following a link.

An agent can nest folders thousands deep (`mkdir d && cd d` in a loop): `os.walk` and
`shutil.rmtree` recurse once per level on Python 3.11 and die with RecursionError, and a path
rebuilt from the top outgrows PATH_MAX. `walk_tree` goes down at most `max_depth` levels and says
what it left out; `remove_tree` moves each sub-folder up to the top before emptying it, so it
removes any depth with short paths.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

MAX_DEPTH = 64  # folders below the top that walk_tree enters


def walk_tree(root: Path, *, max_depth: int = MAX_DEPTH,
              left_out: list[tuple[Path, str]] | None = None) -> Iterator[tuple[Path, list[str], list[str]]]:
    """Like `os.walk(root)` top-down: (folder, its sub-folders, its other entries), names sorted.

    No link is followed: a link to a folder is among the other entries. A folder more than
    `max_depth` levels below `root`, or one that cannot be listed, is not entered; it goes into
    `left_out` as (its path, why). Removing names from the sub-folders keeps the walk out of them.

    >>> import tempfile; d = Path(tempfile.mkdtemp()); deep = d.joinpath(*["d"] * 5); deep.mkdir(parents=True)
    >>> _ = (d / "a.txt").write_text("x"); (d / "up").symlink_to(d); skipped = []
    >>> [(f.relative_to(d).as_posix(), fs) for f, _, fs in walk_tree(d, max_depth=2, left_out=skipped)]
    [('.', ['a.txt', 'up']), ('d', []), ('d/d', [])]
    >>> [(p.relative_to(d).as_posix(), why) for p, why in skipped]
    [('d/d/d', 'nested deeper than 2 folders; not looked into')]
    """
    stack: list[tuple[Path, int]] = [(Path(root), 0)]
    while stack:
        folder, depth = stack.pop()
        dirs: list[str] = []
        files: list[str] = []
        try:
            with os.scandir(folder) as it:
                for entry in it:
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                    except OSError:
                        is_dir = False
                    (dirs if is_dir else files).append(entry.name)
        except OSError as exc:
            if left_out is not None:
                left_out.append((folder, f"cannot be listed ({exc.strerror or exc}); not looked into"))
            continue
        dirs.sort()
        files.sort()
        yield folder, dirs, files
        for name in reversed(dirs):  # reversed: popped in sorted order
            if depth + 1 > max_depth:
                if left_out is not None:
                    left_out.append((folder / name, f"nested deeper than {max_depth} folders; not looked into"))
                continue
            stack.append((folder / name, depth + 1))


def remove_tree(path: Path) -> None:
    """Remove `path` and everything below it, however deep; a link is removed, never followed.

    Each sub-folder is first renamed to the top (`path/.referee-rm-N`), so no path grows longer than
    two names below `path` and nothing recurses. OSError as `os.unlink`/`os.rmdir` give it.

    >>> import tempfile; top = Path(tempfile.mkdtemp()); (top / "t").mkdir(); fd = os.open(top / "t", os.O_RDONLY)
    >>> for _ in range(1500):  # shutil.rmtree of this dies with RecursionError on Python 3.11
    ...     os.mkdir("d", dir_fd=fd); down = os.open("d", os.O_RDONLY, dir_fd=fd); os.close(fd); fd = down
    >>> os.close(fd); (top / "t" / "up").symlink_to(top); remove_tree(top / "t"); os.listdir(top)
    []
    """
    path = Path(path)
    if not os.path.isdir(path) or os.path.islink(path):
        os.unlink(path)
        return
    work: list[Path] = []
    count = 0

    def empty(folder: Path, move_up: bool) -> None:
        nonlocal count
        with os.scandir(folder) as it:
            entries = list(it)
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if not is_dir:
                os.unlink(entry.path)
            elif not move_up:
                work.append(Path(entry.path))
            else:
                while True:
                    count += 1
                    up = path / f".referee-rm-{count}"
                    if not os.path.lexists(up):
                        break
                os.rename(entry.path, up)
                work.append(up)

    empty(path, move_up=False)
    while work:
        folder = work.pop()
        empty(folder, move_up=True)
        os.rmdir(folder)
    os.rmdir(path)
