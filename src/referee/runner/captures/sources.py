"""Files a capture reads where the agent may have written: no link it made is followed, the signing key never read.

The runner reads as itself (often root), the agent as someone with fewer rights; a capture copies
what it reads into evidence the agent can read in its next step. So a path the agent could have
made a link (to the runner's signing key, to a file it cannot read) must not be followed: below
the working directory (the agent's workspace) no part of the path may be a link, and elsewhere the
file itself may not be one. Whatever is opened is never the signing key (a hard link included).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from referee.core.fsutil import open_regular
from referee.core.safetext import fs_name
from referee.errors import EvidenceError
from referee.rundir.keys import key_path
from referee.runner.captures.base import CaptureFailed

NO_LINKS = "the runner reads nothing through a link where the agent writes (it could lead to a file the agent " \
           "may not read); name the file itself"


def source_path(path: str, cwd: Path | None) -> Path:
    """`path` as the capture reads it: absolute (relative to `cwd`), `..` and `.` resolved by name.

    >>> source_path("out/../report.txt", Path("/ws")).as_posix(), source_path("/a/./b", None).as_posix()
    ('/ws/report.txt', '/a/b')
    """
    p = Path(path).expanduser()
    if not p.is_absolute() and cwd is not None:
        p = Path(cwd) / p
    return Path(os.path.normpath(os.path.abspath(p)))


def _root(path: Path, cwd: Path | None) -> Path:
    """Below which no link is followed: the working directory if `path` lies in it, else the file's folder."""
    if cwd is not None and Path(os.path.abspath(cwd)) in path.parents:
        return Path(os.path.abspath(cwd))
    return path.parent


def refuse_links(path: Path, cwd: Path | None, shown: str) -> None:
    """CaptureFailed when `path` (from `source_path`) goes through a link the agent could have made: any
    part of it below `cwd`, or the file itself. A part that is missing ends the look: nothing is there.

    >>> import tempfile; d = Path(tempfile.mkdtemp()); (d / "sub").symlink_to("/etc")
    >>> refuse_links(d / "sub" / "hostname", d, "sub/hostname")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    referee.runner.captures.base.CaptureFailed: sub/hostname: sub is a link (to /etc); the runner reads nothing ...
    """
    root = _root(path, cwd)
    cur = root
    for part in path.relative_to(root).parts:
        cur = cur / part
        try:
            st = os.lstat(cur)
        except OSError:
            return
        if stat.S_ISLNK(st.st_mode):
            try:
                target = f" (to {fs_name(os.readlink(cur))})"
            except OSError:
                target = ""
            what = "it" if cur == path else fs_name(cur.relative_to(root).as_posix())
            raise CaptureFailed(f"{shown}: {what} is a link{target}; {NO_LINKS}")
        if not stat.S_ISDIR(st.st_mode):
            return


def is_signing_key(st: os.stat_result) -> bool:
    """Whether `st` (of a file the runner opened) is the runner's signing key, by any name."""
    try:
        key = os.stat(key_path())
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (key.st_dev, key.st_ino)


def open_source(path: Path, cwd: Path | None, shown: str) -> BinaryIO | None:
    """`path` opened for a copy, or None when no regular file is there (missing, a folder, a FIFO).

    CaptureFailed for a link (`refuse_links`), the signing key, or a file swapped since the look.
    The open itself follows no link either, so a swap after `refuse_links` is refused too.
    """
    refuse_links(path, cwd, shown)
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
    except OSError:
        return None
    root = _root(path, cwd)
    try:
        fh = open_regular(path, root=root)
    except FileNotFoundError:
        return None
    except EvidenceError as exc:
        raise CaptureFailed(f"{shown}: {exc.message}") from None
    if is_signing_key(os.fstat(fh.fileno())):
        fh.close()
        raise CaptureFailed(f"{shown}: it is the runner's signing key; never copied into evidence")
    return fh
