"""The agent's homes: made in the temp folder, recorded by the runner that made them, and swept only from that record.

A runner killed with SIGKILL leaves its agent's home behind (a folder the agent account owns). The next run
removes it, but never by looking over the temp folder for what an agent account owns: an agent can plant a
"stale home" there itself, and swap a folder in it for a link while root removes it. So each home is
recorded when it is made (its path, device and inode, and the runner's pid and start time) in a folder only
the runner's user can write; a sweep removes only a recorded home whose runner is gone, through folder
handles (`fstree.remove_tree`), and only if the folder at that path is still the one recorded.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from referee.core.fstree import open_dir, remove_tree
from referee.runner.reaper import lock_dir

HOME_PREFIX = "referee-agent-home-"
REGISTRY_PREFIX = "referee-homes-"


def _started(pid: int) -> int | None:
    """The start time of process `pid` (clock ticks since boot), None when there is none: with the pid it tells
    the process that made a record from a later one that got the same pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return int(fh.read().rsplit(b") ", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def registry(where: Path | None = None) -> int | None:
    """A handle on this user's record of homes (made on first use, mode 0700), or None when the folder there is
    not this user's alone (someone else made it, or a link): then nothing is recorded and nothing swept."""
    folder = (where or lock_dir()) / f"{REGISTRY_PREFIX}{os.geteuid()}"
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        fd = open_dir(folder)
    except OSError:
        return None
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or st.st_mode & 0o077:
        os.close(fd)
        return None
    return fd


def make_home(uid: int | None = None, gid: int | None = None, *, where: Path | None = None) -> Path:
    """A fresh home (with `tmp/`) in the temp folder, the account `uid`'s when given, recorded for the sweep;
    homes that runners now gone left behind are removed first (`sweep`)."""
    sweep(where)
    home = Path(tempfile.mkdtemp(prefix=f"{HOME_PREFIX}{os.getpid()}-"))
    (home / "tmp").mkdir()
    if uid is not None and gid is not None:
        for p in (home, home / "tmp"):
            os.chown(p, uid, gid)
    _record(home, where)
    return home


def _record_name(st: os.stat_result) -> str:
    return f"{os.getpid()}-{st.st_dev}-{st.st_ino}.json"


def _record(home: Path, where: Path | None) -> None:
    fd = registry(where)
    if fd is None:
        return
    try:
        st = os.lstat(home)
        doc = {"path": str(home), "dev": st.st_dev, "ino": st.st_ino, "pid": os.getpid(),
               "started": _started(os.getpid())}
        out = os.open(_record_name(st), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                      dir_fd=fd)
        with os.fdopen(out, "w") as fh:
            json.dump(doc, fh)
    except OSError:
        pass
    finally:
        os.close(fd)


def remove_home(home: Path, *, where: Path | None = None) -> None:
    """Remove a home this runner made (through handles, only if it is still the folder it made) and its record."""
    try:
        st = os.lstat(home)
    except OSError:
        return
    try:
        remove_tree(home, expect=(st.st_dev, st.st_ino))
    except OSError:
        pass
    fd = registry(where)
    if fd is not None:
        try:
            os.unlink(_record_name(st), dir_fd=fd)
        except OSError:
            pass
        finally:
            os.close(fd)


def sweep(where: Path | None = None) -> list[str]:
    """Remove the recorded homes whose runner is gone (killed before it removed them); the paths removed.

    A home is removed only when its record says so: its runner's pid is gone (or is another process now), and
    the folder at its path is the very one recorded (device and inode), entered without following any link.
    A record whose folder is gone or is another folder is dropped, and that folder left alone."""
    fd = registry(where)
    if fd is None:
        return []
    removed: list[str] = []
    try:
        for name in os.listdir(fd):
            doc = _read_record(fd, name)
            if doc is None:
                continue
            pid, now = doc["pid"], _started(doc["pid"])
            if pid == os.getpid() or (now is not None and doc.get("started") in (None, now)):
                continue  # its runner is alive: the home is in use
            path = Path(doc["path"])
            if path.parent != Path(tempfile.gettempdir()) or not path.name.startswith(HOME_PREFIX):
                continue  # not where homes are made: never the sweep's to touch
            try:
                remove_tree(path, expect=(doc["dev"], doc["ino"]))
                removed.append(str(path))
            except OSError:
                pass  # gone, or another folder now: left alone
            try:
                os.unlink(name, dir_fd=fd)
            except OSError:
                pass
    finally:
        os.close(fd)
    return removed


def _read_record(fd: int, name: str) -> dict | None:
    try:
        rec = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
    except OSError:
        return None
    try:
        with os.fdopen(rec, "rb") as fh:
            doc = json.loads(fh.read(4096))
        if all(isinstance(doc.get(k), int) for k in ("dev", "ino", "pid")) and isinstance(doc.get("path"), str):
            return doc
    except (OSError, ValueError, AttributeError):
        pass
    return None
