"""Small file helpers every stage shares: atomic writes, hashing, safe paths, JSONL streaming."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterator

from referee.errors import EvidenceError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# mkstemp makes 0600 files; run directories are shared (CI artifacts, other users): honour the umask
_FILE_MODE = 0o666 & ~_umask()


def atomic_write_bytes(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write `data` to `path` via a temp file and rename, so a reader never sees half a file.

    The rename alone survives a killed process; `durable` also fsyncs, for a power cut.

    >>> import tempfile, pathlib; p = pathlib.Path(tempfile.mkdtemp()) / "a" / "b.txt"
    >>> atomic_write_bytes(p, b"hi"); p.read_bytes()
    b'hi'
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:  # name the file the user asked for, not our temp file
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    try:
        os.fchmod(fd, _FILE_MODE)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_text(path: Path, text: str, *, durable: bool = True) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), durable=durable)


def atomic_write_json(path: Path, obj: Any, *, durable: bool = True) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False, ensure_ascii=False) + "\n", durable=durable)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    """Hash a file in 1 MiB chunks.

    >>> import tempfile, pathlib; p = pathlib.Path(tempfile.mkdtemp()) / "x"; _ = p.write_bytes(b"")
    >>> sha256_file(p)[:12]
    'e3b0c44298fc'
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def safe_join(root: Path, rel: str, *, what: str = "evidence path") -> Path:
    """Join `rel` under `root`, refusing absolute paths, `..` and symlinks that lead outside.

    >>> safe_join(Path("/r"), "a/b.png").as_posix()
    '/r/a/b.png'
    >>> safe_join(Path("/r"), "../etc/passwd")
    Traceback (most recent call last):
    ...
    referee.errors.EvidenceError: '../etc/passwd' escapes the run directory; use a path inside it
    """
    if not rel or os.path.isabs(rel) or Path(rel).is_absolute():
        raise EvidenceError(f"{what} '{rel}' is absolute; use a path relative to the agent folder")
    parts = Path(rel).parts
    if ".." in parts:
        raise EvidenceError(f"'{rel}' escapes the run directory", fix="use a path inside it")
    root_real = Path(os.path.realpath(root))
    target = Path(os.path.realpath(root / rel))
    if target != root_real and root_real not in target.parents:
        raise EvidenceError(f"'{rel}' is a link that escapes the run directory", fix="save the file itself, not a link")
    return root / rel


def iter_jsonl(path: Path) -> Iterator[tuple[int, str]]:
    """Yield (line number, stripped line) for each non-blank line, streaming."""
    with open(path, "r", encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, start=1):
            line = line.strip()
            if line:
                yield lineno, line


def append_jsonl(path: Path, obj: Any) -> None:
    """Append one JSON record and flush it, so a killed process loses at most the line being written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(obj, ensure_ascii=False, sort_keys=False) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
