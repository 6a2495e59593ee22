"""Folder trees an agent made, walked and removed without recursion and without following a link.

An agent can nest folders thousands deep (`mkdir d && cd d` in a loop): `os.walk` and
`shutil.rmtree` recurse once per level on Python 3.11 and die with RecursionError, and a path
rebuilt from the top outgrows PATH_MAX. `walk_tree` goes down at most `max_depth` levels and says
what it left out; `remove_tree` moves each sub-folder up to the top before emptying it, so it
removes any depth with short paths. `glob_paths` expands a glob the user quoted: it does follow
links to folders, as `glob` does, but enters each folder once (by device and inode), so `up -> ..`
can neither repeat a file nor make the expansion endless.
"""

from __future__ import annotations

import fnmatch
import glob
import os
from pathlib import Path
from typing import Iterator

MAX_DEPTH = 64  # folders below the top that walk_tree enters (and a glob's `**` goes down)


def identity(path: str | Path) -> tuple[int, int] | None:
    """(device, inode) of what `path` leads to, links followed; None when it leads nowhere.

    >>> import tempfile; d = Path(tempfile.mkdtemp()); _ = (d / "a").write_text("x"); (d / "b").symlink_to("a")
    >>> identity(d / "a") == identity(d / "b"), identity(d / "missing")
    (True, None)
    """
    try:
        st = os.stat(path)
    except (OSError, ValueError):  # ValueError: a NUL in the name
        return None
    return st.st_dev, st.st_ino


def _entries(folder: str) -> list[tuple[str, bool]]:
    """(name, leads to a folder) for each entry of `folder`, sorted, links to folders last; none if unlistable."""
    # links to folders last: a folder reached both ways is then found under its own name
    out: list[tuple[bool, str, bool]] = []
    try:
        with os.scandir(folder or ".") as it:
            for e in it:
                try:
                    is_dir, linked = e.is_dir(), e.is_symlink()
                except OSError:
                    is_dir, linked = False, False
                out.append((is_dir and linked, e.name, is_dir))
    except OSError:
        return []
    return [(name, is_dir) for _, name, is_dir in sorted(out)]


def glob_paths(pattern: str, *, max_depth: int = MAX_DEPTH) -> list[str]:
    """What `glob.glob(pattern, recursive=True)` finds, sorted, each file once, in finite time.

    Each folder is handled once per place in the pattern (by device and inode), `**` goes down at
    most `max_depth` folders, and a file reached under two names is given under the one found first.

    >>> import tempfile; d = Path(tempfile.mkdtemp()); (d / "t" / "sub").mkdir(parents=True)
    >>> _ = (d / "t" / "sub" / "b.json").write_text("{}"); (d / "t" / "sub" / "up").symlink_to("..")
    >>> (d / "t" / "sub" / "up2").symlink_to("..")  # glob.glob would never finish
    >>> [Path(p).relative_to(d).as_posix() for p in glob_paths(f"{d}/t/**/*.json")]
    ['t/sub/b.json']
    """
    top = "/" if pattern.startswith("/") else ""
    parts = [p for p in pattern.split("/") if p]
    dir_only = pattern.endswith("/")
    n = len(parts)
    # a file reached under two names (a link to it, or to a folder above it) is read once
    hits: dict[object, str] = {}  # identity (or the path, for a link to nothing) -> the first name found
    done: set[tuple[tuple[int, int], int]] = set()
    stack: list[tuple[str, int, int]] = [(top, 0, 0)]  # (folder, index of the next part, `**` depth)

    def hit(path: str) -> None:
        if dir_only and not os.path.isdir(path):
            return
        hits.setdefault(identity(path) or path, path)

    while stack:
        folder, i, depth = stack.pop()
        ident = identity(folder or ".")
        if ident is None or (ident, i) in done:
            continue  # a folder met again at the same place in the pattern finds nothing new
        done.add((ident, i))
        if i == n:
            hit(folder)
            continue
        part, last = parts[i], i == n - 1
        nexts: list[tuple[str, int, int]] = []
        if part == "**":
            nexts.append((folder, i + 1, depth))  # `**` matching no folder
            for name, is_dir in _entries(folder):
                if name.startswith("."):
                    continue
                path = os.path.join(folder, name)
                if is_dir and depth < max_depth:
                    nexts.append((path, i, depth + 1))
                elif last and not is_dir:
                    hit(path)
        elif not glob.has_magic(part):
            path = os.path.join(folder, part)
            if last:
                if os.path.lexists(path):
                    hit(path)
            elif os.path.isdir(path):
                nexts.append((path, i + 1, depth))
        else:
            for name, is_dir in _entries(folder):
                if (name.startswith(".") and not part.startswith(".")) or not fnmatch.fnmatchcase(name, part):
                    continue
                path = os.path.join(folder, name)
                if last:
                    hit(path)
                elif is_dir:
                    nexts.append((path, i + 1, depth))
        stack.extend(reversed(nexts))  # reversed: handled in the order found
    return sorted(hits.values())


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
