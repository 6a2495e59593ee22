"""One writer per output file: an exclusive flock on a sidecar `NAME.lock` that names its holder to a second one."""

from __future__ import annotations

import json
import os
import socket
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from referee.errors import BusyError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no lock, as before
    fcntl = None  # type: ignore[assignment]


def lock_path(path: Path) -> Path:
    """The sidecar lock file of an output file, beside the file the path leads to: two names of one file (a link
    to it, a linked folder) are one lock.

    >>> lock_path(Path("runs/audit.jsonl")) == Path.cwd() / "runs" / "audit.jsonl.lock"
    True
    """
    path = Path(os.path.realpath(path))
    return path.with_name(path.name + ".lock")


@contextmanager
def exclusive(path: Path, *, by: str = "referee", fix: str = "wait for it to finish, or write to another file"
              ) -> Iterator[None]:
    """Hold the write lock of `path` for the block; raise BusyError (exit 2) when another process holds it (at once,
    or within NAME_WAIT_S when the holder has not yet written its name, so the error can give it).

    The lock is a flock on `path.lock`, not on `path`, so it also covers a writer that replaces `path`
    and one that has not created it yet. The kernel drops a flock when its holder exits, however it
    exits (kill -9 included): there is no stale lock to clear. The lock file stays, empty, afterwards.

    >>> import tempfile; p = Path(tempfile.mkdtemp()) / "out.jsonl"
    >>> with exclusive(p, by="doc"):
    ...     with exclusive(p):
    ...         pass
    Traceback (most recent call last):
    ...
    referee.errors.BusyError: ...out.jsonl: is being written by another process (doc, pid ...); wait for it ...
    """
    if fcntl is None:  # pragma: no cover
        yield
        return
    lock = lock_path(path)
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        try:
            # the holder names itself just after it takes the lock, and blanks its name just before it lets go:
            # a moment later the name is there, or the lock is free
            deadline = time.monotonic() + NAME_WAIT_S
            while True:
                taken = _take(fd)
                holder = "" if taken else _holder(fd)
                if taken or holder or time.monotonic() >= deadline:
                    break
                time.sleep(0.005)
        except OSError as exc:  # a file system without locks: refuse rather than risk two writers
            raise BusyError(f"cannot lock {lock.name}: {exc.strerror}", file=str(path),
                            fix="write to a local file system") from None
        if not taken:
            raise BusyError(f"is being written by another process{holder}", file=str(path), fix=fix)
        info = {"by": by, "pid": os.getpid(), "host": socket.gethostname(),
                "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode("utf-8"), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)  # the next holder's reader must not name a process that has finished
    finally:
        os.close(fd)  # closing the last descriptor releases the flock


NAME_WAIT_S = 0.5  # how long a refused process waits to read who holds the lock


def _take(fd: int) -> bool:
    """Take the lock of `fd` if it is free, without waiting."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _holder(fd: int) -> str:
    """' (by, pid N on host, since T)' from the lock file, or '' when the holder has not written it yet."""
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        parts = [str(info["by"])] if info.get("by") else []
        if info.get("pid"):
            host = info.get("host")
            parts.append(f"pid {info['pid']}" + (f" on {host}" if host and host != socket.gethostname() else ""))
        if info.get("since"):
            parts.append(f"since {info['since']}")
        return f" ({', '.join(parts)})" if parts else ""
    except (OSError, ValueError, TypeError, AttributeError):
        return ""
