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

import errno
import fnmatch
import glob
import itertools
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

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
        listed = _list(folder, folder, left_out)
        if listed is None:
            continue
        dirs, files = listed
        yield folder, dirs, files
        for name in reversed(dirs):  # reversed: popped in sorted order
            if depth + 1 > max_depth:
                if left_out is not None:
                    left_out.append((folder / name, f"nested deeper than {max_depth} folders; not looked into"))
                continue
            stack.append((folder / name, depth + 1))


_KEEP_OPEN = 256  # folder handles walk_handles keeps along its path; those above are opened again when needed


@dataclass
class _Frame:
    fd: int  # -1: closed to save handles (walk_handles opens it again, by name, from an open folder above)
    path: Path
    ident: tuple[int, int]
    depth: int
    pending: list[str]  # sub-folders not gone into yet, last first
    listed: bool = False


def walk_handles(root: Path, *, max_depth: int | None = MAX_DEPTH, skip: frozenset[tuple[int, int]] = frozenset(),
                 left_out: list[tuple[Path, str]] | None = None) -> Iterator[tuple[int, Path, list[str], list[str]]]:
    """Like `walk_tree`, with a handle on each folder: (its handle, its path, its sub-folders, its other entries).

    The handle is open while the caller holds the item; act on the entries relative to it (`dir_fd=`, with
    `follow_symlinks=False` or `O_NOFOLLOW`), never by path: a folder swapped for a link after it was listed is
    not entered (`O_NOFOLLOW` on each step down), and a folder changed under the walk is left out. `root` itself
    must not be a link. `max_depth` None: no limit (handles are reopened from above, so any depth works).
    `skip`: (device, inode) of folders not to go into. Removing names from the sub-folders keeps the walk out.

    >>> import tempfile; d = Path(tempfile.mkdtemp()); (d / "a" / "b").mkdir(parents=True)
    >>> _ = (d / "a" / "f").write_text("x"); (d / "up").symlink_to(d)
    >>> [(p.relative_to(d).as_posix(), ds, fs) for _, p, ds, fs in walk_handles(d)]
    [('.', ['a'], ['up']), ('a', ['b'], ['f']), ('a/b', [], [])]
    """
    root = Path(root)
    try:
        fd = open_dir(root)
    except OSError as exc:
        if left_out is not None:
            left_out.append((root, f"cannot be opened ({exc.strerror or exc}); not looked into"))
        return
    st = os.fstat(fd)
    chain = [_Frame(fd, root, (st.st_dev, st.st_ino), 0, [])]
    try:
        while chain:
            frame = chain[-1]
            if not frame.listed:
                frame.listed = True
                listed = _list(frame.fd, frame.path, left_out)
                if listed is not None:
                    dirs, others = listed
                    yield frame.fd, frame.path, dirs, others
                    if max_depth is not None and frame.depth + 1 > max_depth:
                        if left_out is not None:
                            left_out += [(frame.path / n, f"nested deeper than {max_depth} folders; not looked into")
                                         for n in dirs]
                        dirs = []
                    frame.pending = list(reversed(dirs))
            if not frame.pending:
                if frame.fd >= 0:
                    os.close(frame.fd)
                chain.pop()
                continue
            name = frame.pending.pop()
            if frame.fd < 0 and not _reopen(chain, left_out):
                continue
            child = _open_child(frame, name, skip, left_out)
            if child is not None:
                chain.append(child)
                opened = [f for f in chain if f.fd >= 0]
                if len(opened) > _KEEP_OPEN:  # a deep and wide tree: the oldest handle is opened again later
                    os.close(opened[1].fd)
                    opened[1].fd = -1
    finally:
        for f in chain:
            if f.fd >= 0:
                os.close(f.fd)


def _list(where: int | Path, shown: Path,
          left_out: list[tuple[Path, str]] | None) -> tuple[list[str], list[str]] | None:
    """(sub-folders, other entries) of a folder given by path or open handle, sorted, no link followed; None when
    it cannot be listed (then `shown` goes into `left_out` with why)."""
    dirs: list[str] = []
    others: list[str] = []
    try:
        with os.scandir(where) as it:
            for entry in it:
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                (dirs if is_dir else others).append(entry.name)
    except OSError as exc:
        if left_out is not None:
            left_out.append((shown, f"cannot be listed ({exc.strerror or exc}); not looked into"))
        return None
    return sorted(dirs), sorted(others)


def _open_child(frame: _Frame, name: str, skip: frozenset[tuple[int, int]],
                left_out: list[tuple[Path, str]] | None) -> _Frame | None:
    try:
        fd = open_dir(name, frame.fd)
    except OSError as exc:  # gone, or swapped for a link or a file after the listing: not entered
        if left_out is not None and exc.errno != errno.ENOENT:
            left_out.append((frame.path / name, f"cannot be opened ({exc.strerror or exc}); not looked into"))
        return None
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) in skip:
        os.close(fd)
        return None
    return _Frame(fd, frame.path / name, (st.st_dev, st.st_ino), frame.depth + 1, [])


def _reopen(chain: list[_Frame], left_out: list[tuple[Path, str]] | None) -> bool:
    """Open again, by name from the nearest open folder above, the closed handles along the walk's path; each
    must be the folder it was (device, inode). False when one is not: the rest below it is left out."""
    start = max(i for i, f in enumerate(chain) if f.fd >= 0)
    for i in range(start + 1, len(chain)):
        f = chain[i]
        try:
            fd = open_dir(f.path.name, chain[i - 1].fd)
            st = os.fstat(fd)
        except OSError:
            fd, st = -1, None
        if st is None or (st.st_dev, st.st_ino) != f.ident:
            if fd >= 0:
                os.close(fd)
            if left_out is not None:
                left_out.append((f.path, "changed while it was walked; not looked into further"))
            for g in chain[i:]:
                g.pending.clear()
            return False
        f.fd = fd
    return True


# Called by remove_tree between listing a folder and removing its entries (tests swap in a link there, to show
# that nothing is followed); (the folder's handle, the names listed).
before_removal: Callable[[int, list[str]], None] | None = None

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def open_dir(name: str | Path, dir_fd: int | None = None) -> int:
    """A handle on the folder `name` (relative to `dir_fd`), never through a link at its last part.

    OSError (ELOOP, ENOTDIR) when it is a link or not a folder."""
    return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


def remove_tree(path: Path, *, expect: tuple[int, int] | None = None) -> None:
    """Remove `path` and everything below it, however deep, through folder handles: no link is followed, and
    a folder swapped for a link while it is removed (by an agent still running) costs only the link.

    The folders above `path` are the caller's to trust (the runner's own, or a sticky temp folder); from `path`
    down every step is `openat`/`unlinkat`/`renameat` relative to a held handle, with `O_NOFOLLOW`. Each
    sub-folder is first renamed to the top (`path/.referee-rm-N`), so no more than two handles are open and
    nothing recurses. `expect`: the (device, inode) `path` must be; anything else there is left alone
    (OSError). OSError as `unlinkat`/`rmdir` give it.

    >>> import tempfile; top = Path(tempfile.mkdtemp()); (top / "t").mkdir(); fd = os.open(top / "t", os.O_RDONLY)
    >>> for _ in range(1500):  # shutil.rmtree of this dies with RecursionError on Python 3.11
    ...     os.mkdir("d", dir_fd=fd); down = os.open("d", os.O_RDONLY, dir_fd=fd); os.close(fd); fd = down
    >>> os.close(fd); (top / "t" / "up").symlink_to(top); remove_tree(top / "t"); os.listdir(top)
    []
    """
    path = Path(os.path.abspath(path))
    parent = open_dir(path.parent) if path.parent != path else None
    try:
        _remove_at(parent, path.name, expect)
    finally:
        if parent is not None:
            os.close(parent)


def _remove_at(parent: int | None, name: str, expect: tuple[int, int] | None) -> None:
    try:
        top = open_dir(name, parent)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR) or expect is not None:
            raise
        os.unlink(name, dir_fd=parent)  # a link or a file: the name goes, nothing it leads to
        return
    try:
        st = os.fstat(top)
        if expect is not None and (st.st_dev, st.st_ino) != expect:
            raise OSError(errno.ESTALE, f"{name} is not the folder that was recorded; left alone")
        for _ in range(_ROUNDS):  # entries added while it is emptied (an agent still running): again
            work, refills = _empty(top, top, at_top=True), 0
            while work:
                sub = work.pop()
                fd = _open_moved(top, sub)
                if fd is None:  # not a folder (any more): a link swapped in is removed, not followed
                    continue
                try:
                    work += _empty(fd, top, at_top=False)
                finally:
                    os.close(fd)
                try:
                    os.rmdir(sub, dir_fd=top)
                except OSError as exc:
                    refills += 1
                    if exc.errno != errno.ENOTEMPTY or refills > _ROUNDS:
                        raise
                    work.append(sub)  # something was put in after it was listed
            if not os.listdir(top):
                break
        os.rmdir(name, dir_fd=parent)
    finally:
        os.close(top)


_ROUNDS = 100


def _empty(fd: int, top: int, *, at_top: bool) -> list[str]:
    """Unlink the files and links of the folder `fd`; its folders stay at the top (`at_top`) or are moved there.
    The names of those folders at the top come back."""
    names = os.listdir(fd)
    if before_removal is not None:
        before_removal(fd, names)
    out: list[str] = []
    for entry in names:
        if at_top and entry.startswith(_RM):
            out.append(entry)
            continue
        try:
            os.unlink(entry, dir_fd=fd)  # unlinkat: a link is removed, never followed
            continue
        except FileNotFoundError:
            continue
        except OSError as exc:  # EISDIR, or EPERM as Linux says it for a folder
            if exc.errno not in (errno.EISDIR, errno.EPERM) or not _is_dir_at(fd, entry):
                raise
        if at_top:
            out.append(entry)
            continue
        while True:
            up = f"{_RM}{next(_moved)}"
            try:
                os.stat(up, dir_fd=top, follow_symlinks=False)
            except FileNotFoundError:
                break
        try:
            os.rename(entry, up, src_dir_fd=fd, dst_dir_fd=top)  # renameat: neither name is followed
        except FileNotFoundError:
            continue
        out.append(up)
    return out


_RM = ".referee-rm-"
_moved = itertools.count(1)


def _is_dir_at(fd: int, name: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def _open_moved(top: int, name: str) -> int | None:
    """A handle on the folder `name` at the top, or None when it is a link or a file (then removed) or gone."""
    try:
        return open_dir(name, top)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
    try:
        os.unlink(name, dir_fd=top)
    except FileNotFoundError:
        pass
    return None
