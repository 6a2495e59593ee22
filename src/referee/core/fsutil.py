"""Small file helpers every stage shares: atomic writes, defensive reads, hashing, safe paths, JSONL streaming."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

from referee.errors import EvidenceError, HoldsSecret, RefereeError


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


def sha256_file(path: Path, *, root: Path | None = None) -> str:
    """Hash a regular file in 1 MiB chunks (opened as `open_regular` opens it: a FIFO never hangs).

    >>> import tempfile, pathlib; p = pathlib.Path(tempfile.mkdtemp()) / "x"; _ = p.write_bytes(b"")
    >>> sha256_file(p)[:12]
    'e3b0c44298fc'
    """
    return hash_regular(path, root=root)[0]


def hash_regular(path: Path, *, root: Path | None = None, max_bytes: int | None = None,
                 refuse: tuple[bytes, ...] = (), refused_as: tuple[str, ...] = (),
                 admit: Callable[[os.stat_result], None] | None = None) -> tuple[str, int]:
    """(SHA-256, size) of a regular file, read through `open_regular` with the same checks.

    `refuse`: byte strings the file must not hold (the signing key); HoldsSecret if it does, saying
    "holds <refused_as[i]>" for the i-th one when `refused_as` names it. `admit` is called with the
    opened file's `fstat` before a byte is read, and raises to refuse it (a hashing budget, a sparse file):
    what is looked at is what would be read.

    >>> import tempfile, pathlib; p = pathlib.Path(tempfile.mkdtemp()) / "x"; _ = p.write_bytes(b"hi s3cr3t")
    >>> hash_regular(p)[1]
    9
    >>> hash_regular(p, refuse=(b"s3cr3t",))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    referee.errors.HoldsSecret: .../x: holds a secret it must not
    """
    h = hashlib.sha256()
    size = 0
    keep = max((len(r) for r in refuse), default=1) - 1
    tail = b""  # the end of the chunk before: a secret may straddle two chunks
    with open_regular(path, root=root, max_bytes=max_bytes) as fh:
        if admit is not None:
            admit(os.fstat(fh.fileno()))
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            size += len(chunk)
            if max_bytes is not None and size > max_bytes:
                raise _too_big(path, max_bytes, EvidenceError)
            h.update(chunk)
            if refuse:
                window = tail + chunk
                hit = next((i for i, r in enumerate(refuse) if r in window), None)
                if hit is not None:
                    what = refused_as[hit] if hit < len(refused_as) else "a secret it must not"
                    raise HoldsSecret(f"holds {what}", file=str(path))
                tail = window[-keep:] if keep else b""
    return h.hexdigest(), size


SPARSE_MIN_BYTES = 1 << 20  # smaller files are hashed whatever their holes: a MiB costs nothing


def mostly_holes(st: os.stat_result) -> bool:
    """A file of at least 1 MiB less than a quarter of which is on disk (`truncate -s 512M` makes one in no
    time and no space; hashing reads every byte of it). Where `st_blocks` is unknown, False.

    >>> import tempfile; fh = tempfile.TemporaryFile(); _ = fh.truncate(64 << 20); mostly_holes(os.fstat(fh.fileno()))
    True
    >>> _ = fh.seek(0); _ = fh.write(os.urandom(2 << 20)); _ = fh.truncate(2 << 20); fh.flush()
    >>> mostly_holes(os.fstat(fh.fileno()))
    False
    """
    blocks = getattr(st, "st_blocks", None)
    return blocks is not None and st.st_size >= SPARSE_MIN_BYTES and blocks * 512 * 4 < st.st_size


# -- defensive reads: what an agent may have planted is never followed, waited on or read whole --------

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a link"))
_RDONLY = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_DIR_FD = os.open in os.supports_dir_fd and bool(_NOFOLLOW and _DIRECTORY)


def file_kind(mode: int) -> str:
    """What a `st_mode` that is no regular file stands for ("a FIFO", "a folder", ...).

    >>> import stat; file_kind(stat.S_IFIFO), file_kind(stat.S_IFDIR)
    ('a FIFO', 'a folder')
    """
    return next((name for test, name in _KINDS if test(mode)), "not a plain file")


def not_regular(path: Path, mode: int, error: type[RefereeError] = EvidenceError) -> RefereeError:
    """The one-line error for a path that is not a regular file (its `st_mode` says what it is)."""
    return error(f"not a regular file ({file_kind(mode)}); only regular files are read", file=str(path),
                 fix="replace it with the file itself")


def _too_big(path: Path, max_bytes: int, error: type[RefereeError]) -> RefereeError:
    return error(f"larger than {max_bytes} bytes; not read", file=str(path))


def _linked(path: Path, part: str, error: type[RefereeError]) -> RefereeError:
    return error(f"'{part}' is a link or not a folder; links are not followed inside a run directory",
                 file=str(path), fix="save the file itself, not a link")


def _open_under(root: Path, path: Path, error: type[RefereeError]) -> int:
    """Open `path` below `root` without following a link in any component after `root` (O_NOFOLLOW per step)."""
    try:
        rel = Path(path).relative_to(root)
    except ValueError:
        raise error("lies outside the run directory; not read", file=str(path)) from None
    parts = rel.parts
    if not parts or ".." in parts:
        raise error("escapes the run directory; not read", file=str(path))
    if not _DIR_FD:  # no openat here: check each component with lstat, then open (a small race is left)
        cur = Path(root)
        for part in parts[:-1]:
            cur = cur / part
            if not stat.S_ISDIR(os.lstat(cur).st_mode):
                raise _linked(path, part, error)
        st = os.lstat(cur / parts[-1])
        if not stat.S_ISREG(st.st_mode):
            raise not_regular(path, st.st_mode, error)
        return os.open(cur / parts[-1], _RDONLY | _NONBLOCK)
    dfd = os.open(root, _RDONLY | _DIRECTORY)
    try:
        for part in parts[:-1]:
            try:
                nfd = os.open(part, _RDONLY | _DIRECTORY | _NOFOLLOW, dir_fd=dfd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _linked(path, part, error) from None
                raise
            os.close(dfd)
            dfd = nfd
        st = os.stat(parts[-1], dir_fd=dfd, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):  # a FIFO or a device is never even opened
            raise not_regular(path, st.st_mode, error)
        return os.open(parts[-1], _RDONLY | _NOFOLLOW | _NONBLOCK, dir_fd=dfd)
    finally:
        os.close(dfd)


def open_regular(path: Path, *, root: Path | None = None, max_bytes: int | None = None,
                 error: type[RefereeError] = EvidenceError, buffering: int = -1) -> BinaryIO:
    """Open a regular file for reading, defensively; `error` (one line naming the file) for anything else.

    With `root` (a run directory or an agent's folder) no symlink is followed anywhere below it: not the
    file, not a folder on the way. Without it (a file the user named) a link is followed, as the user
    chose it. Either way only a regular file is opened: a FIFO, a device or a socket is refused without
    waiting on it (O_NONBLOCK), and a file over `max_bytes` is refused. A missing file raises
    FileNotFoundError, so callers can say "no claim" or "not a run directory". `buffering` is `open`'s.

    >>> import tempfile, pathlib; d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "a").write_bytes(b"hi")
    >>> with open_regular(d / "a", root=d) as fh: fh.read()
    b'hi'
    >>> import os; os.mkfifo(d / "pipe"); open_regular(d / "pipe", root=d)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    referee.errors.EvidenceError: .../pipe: not a regular file (a FIFO); only regular files are read; ...
    """
    path = Path(path)
    try:
        if root is not None:
            fd = _open_under(Path(root), path, error)
        else:
            st = os.stat(path)
            if not stat.S_ISREG(st.st_mode):
                raise not_regular(path, st.st_mode, error)
            fd = os.open(path, _RDONLY | _NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise error("is a link; links are not followed inside a run directory", file=str(path),
                        fix="save the file itself, not a link") from None
        raise error(f"unreadable: {exc.strerror or exc}", file=str(path)) from None
    try:
        st = os.fstat(fd)  # what was opened, not what was looked at a moment before
        if not stat.S_ISREG(st.st_mode):
            raise not_regular(path, st.st_mode, error)
        if max_bytes is not None and st.st_size > max_bytes:
            raise _too_big(path, max_bytes, error)
        return os.fdopen(fd, "rb", buffering=buffering)
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: Path, *, max_bytes: int, root: Path | None = None,
                 error: type[RefereeError] = EvidenceError) -> bytes:
    """The bytes of a regular file of at most `max_bytes` (see `open_regular` for what is refused).

    >>> import tempfile, pathlib; d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "a").write_bytes(b"hello")
    >>> read_regular(d / "a", max_bytes=10, root=d)
    b'hello'
    >>> read_regular(d / "a", max_bytes=3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    referee.errors.EvidenceError: .../a: larger than 3 bytes; not read
    """
    with open_regular(path, root=root, max_bytes=max_bytes, error=error) as fh:
        try:
            data = fh.read(max_bytes + 1)
        except OSError as exc:
            raise error(f"unreadable: {exc.strerror or exc}", file=str(path)) from None
    if len(data) > max_bytes:  # it grew after it was opened
        raise _too_big(path, max_bytes, error)
    return data


def loads_json(data: bytes | str, *, max_depth: int = 64) -> Any:
    """Parse JSON that nests at most `max_depth` arrays/objects deep; ValueError for anything else.

    Invalid UTF-8 is replaced, not an error: the text is what it is. The parse and its depth limit are
    the one every reader of a user's file uses (referee.core.jsonio.depth.loads_text), so a hostile
    `[[[[...]]]]`, closed or not, is called too deep, never a RecursionError.

    >>> loads_json(b'{"a": [1, "x\\xff"]}') == {"a": [1, "x\\ufffd"]}
    True
    >>> loads_json(b"[" * 100 + b"]" * 100)
    Traceback (most recent call last):
    ...
    ValueError: JSON nested deeper than 64 levels
    """
    from referee.core.jsonio.depth import loads_text

    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    return loads_text(text, max_depth=max_depth, message=f"JSON nested deeper than {max_depth} levels")


def own_dir(root: Path, *parts: str) -> tuple[Path, list[str]]:
    """Make `root/parts...` a chain of real folders, replacing whatever else stands on the way.

    For the runner's own folders in a run directory (`agent/<step>`, `evidence/<step>/<phase>`,
    `claims`): a link, a FIFO or a file the agent planted there is removed (never followed) and a
    folder made in its place. Returns the folder and one line per thing removed.

    >>> import tempfile, pathlib; d = pathlib.Path(tempfile.mkdtemp()); (d / "x").symlink_to("/")
    >>> p, removed = own_dir(d, "x", "y"); p.is_dir() and not (d / "x").is_symlink(), removed
    (True, ['x was a link, not a folder; removed'])
    """
    cur = Path(root)
    removed: list[str] = []
    for i, part in enumerate(parts):
        if not part or part in (".", "..") or "/" in part or "\\" in part:
            raise EvidenceError(f"'{part}' is not a folder name", file=str(root))
        cur = cur / part
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISDIR(st.st_mode):
            os.unlink(cur)  # unlink removes a link itself, never what it points to
            removed.append(f"{'/'.join(parts[:i + 1])} was {file_kind(st.st_mode)}, not a folder; removed")
            st = None
        if st is None:
            try:
                os.mkdir(cur)
            except FileExistsError:  # made in between: looked at again on the next call
                pass
    return cur, removed


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


def inside_problem(root: Path, rel: str) -> str | None:
    """Why `rel` is not a plain relative path inside `root` (None when it is): empty, absolute, a `..`, `.`
    or empty part, a backslash or NUL, or a symlink on the way (links are never followed, not even inward).

    >>> inside_problem(Path("/nonexistent"), "evidence/a/after/x.json") is None
    True
    >>> inside_problem(Path("/r"), "../outside.json"), inside_problem(Path("/r"), "/etc/passwd")
    ("'..' leads out of the run directory", 'it is absolute')
    """
    if not rel:
        return "it is empty"
    if "\\" in rel or "\0" in rel:
        return "it holds a backslash or NUL"
    if rel.startswith("/") or os.path.isabs(rel):
        return "it is absolute"
    parts = rel.split("/")
    if ".." in parts:
        return "'..' leads out of the run directory"
    if any(p in ("", ".") for p in parts):
        return "it has an empty or '.' part"
    cur = Path(root)
    for p in parts:
        cur = cur / p
        try:
            if os.path.islink(cur):
                return f"{cur.relative_to(root).as_posix()} is a symlink"
        except OSError:
            break
        if not os.path.lexists(cur):
            break
    return None


def iter_jsonl(path: Path, *, error: type[RefereeError] = EvidenceError) -> Iterator[tuple[int, str]]:
    """Yield (line number, stripped line) for each non-blank line, streaming (a regular file only)."""
    import io

    with io.TextIOWrapper(open_regular(path, error=error), encoding="utf-8", errors="replace") as fh:
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


def read_yaml(path: Path, error: type[RefereeError], what: str) -> object:
    """A small YAML file's content; an unreadable file or bad syntax is one `error` naming file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"cannot read {what}: {getattr(exc, 'strerror', None) or exc}", file=str(path),
                    fix="check the path") from None
    import yaml  # only the few callers that read YAML pay for it

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        place = f"{mark.line + 1}:{mark.column + 1}" if mark else None
        raise error(f"invalid YAML: {getattr(exc, 'problem', exc)}", file=str(path), place=place,
                    fix="fix the YAML syntax") from None
