"""The per-user signing key that seals run directories: where it lives, made on first use, refused when exposed.

The key is 32 random bytes (hex in the file) kept outside every run directory, so an agent that
can write its run directory cannot re-sign what it changed. Where it lives, first match wins:
`$REFEREE_KEY_FILE`, `$XDG_CONFIG_HOME/referee/key`, `~/.config/referee/key`. It is created on
first use with mode 0600 in a folder made 0700; a key file that is a symlink, not a regular file,
not owned by this user, or readable by group or others is refused with a one-line error.
Grading a run on another machine needs the same key (copy it, or point REFEREE_KEY_FILE at it).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from referee.errors import RefereeError

KEY_ENV = "REFEREE_KEY_FILE"
KEY_BYTES = 32


class KeyFileError(RefereeError):
    """A signing key file that is missing where it must exist, exposed, or unreadable."""


@dataclass(frozen=True)
class SigningKey:
    """The key's bytes and its public id (a hash of the key: safe to write into a seal)."""

    secret: bytes
    path: Path

    @property
    def key_id(self) -> str:
        """16 hex digits that name this key without revealing it.

        >>> SigningKey(b"k" * 32, Path("/k")).key_id
        '2d11046ebf722bcb'
        """
        return hashlib.sha256(b"referee-key-id\0" + self.secret).hexdigest()[:16]

    def __repr__(self) -> str:  # never print the secret
        return f"SigningKey(path={str(self.path)!r}, key_id={self.key_id!r})"


def key_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where the signing key lives (see the module docstring), from `environ` (default: os.environ).

    >>> key_path({KEY_ENV: "/tmp/k"}).as_posix(), key_path({"XDG_CONFIG_HOME": "/c"}).as_posix()
    ('/tmp/k', '/c/referee/key')
    """
    env = os.environ if environ is None else environ
    explicit = env.get(KEY_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "referee" / "key"


def _create(path: Path) -> None:
    """Write a fresh key beside `path`, then link it into place, never over an existing one: two runners
    starting at once both end up reading the one key that got there first, never a half-written file."""
    if not path.parent.exists():
        os.makedirs(path.parent, mode=0o700, exist_ok=True)
        os.chmod(path.parent, 0o700)  # whatever the umask
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        os.fchmod(fd, 0o600)  # whatever the umask
        os.write(fd, (secrets.token_hex(KEY_BYTES) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)


def load_key(create: bool = True, path: Path | None = None) -> SigningKey:
    """The signing key (at `path`, default `key_path()`), made on first use when `create`; KeyFileError
    (one line, with the fix) when it is missing, exposed or unreadable.

    >>> import tempfile; p = Path(tempfile.mkdtemp()) / "sub" / "key"
    >>> k = load_key(path=p); oct(p.stat().st_mode & 0o777), oct(p.parent.stat().st_mode & 0o777)
    ('0o600', '0o700')
    >>> load_key(path=p).key_id == k.key_id
    True
    >>> p.chmod(0o644); load_key(path=p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    referee.rundir.keys.KeyFileError: .../key: the signing key is readable or writable by others (mode 0o644); run: ...
    """
    path = key_path() if path is None else Path(path)
    fix_env = f"or set {KEY_ENV} to a key file of your own"
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if not create:
            raise KeyFileError("no signing key", file=str(path),
                               fix=f"copy the key of the machine that made the run here, {fix_env}") from None
        try:
            _create(path)
            st = os.lstat(path)
        except OSError as exc:
            raise KeyFileError(f"cannot create the signing key: {exc.strerror or exc}", file=str(path),
                               fix=f"make its folder writable, {fix_env}") from None
    except OSError as exc:
        raise KeyFileError(f"cannot read the signing key: {exc.strerror or exc}", file=str(path), fix=fix_env) from None
    if stat.S_ISLNK(st.st_mode):
        raise KeyFileError("the signing key is a symlink; refused (whoever controls the link controls the key)",
                           file=str(path), fix=f"replace the link with the key file itself, {fix_env}")
    if not stat.S_ISREG(st.st_mode):
        raise KeyFileError("the signing key is not a regular file", file=str(path), fix=fix_env)
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        raise KeyFileError(f"the signing key belongs to another user (uid {st.st_uid})", file=str(path),
                           fix=f"use a key file of your own: {fix_env}")
    if st.st_mode & 0o077:
        raise KeyFileError(f"the signing key is readable or writable by others (mode {oct(st.st_mode & 0o777)})",
                           file=str(path), fix=f"run: chmod 600 {path}")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as fh:
            raw = fh.read(4096).strip()
    except OSError as exc:
        raise KeyFileError(f"cannot read the signing key: {exc.strerror or exc}", file=str(path), fix=fix_env) from None
    try:
        secret = bytes.fromhex(raw.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        secret = raw  # a key file of the user's own making: its bytes are the key
    if len(secret) < 16:
        raise KeyFileError(f"the signing key is too short ({len(secret)} bytes; at least 16)", file=str(path),
                           fix=f"delete it so a new one is made, {fix_env}")
    return SigningKey(secret, path)


def existing_key(path: Path | None = None) -> SigningKey | None:
    """The signing key if its file exists (KeyFileError when it is exposed), else None: for checking, never made.

    >>> import tempfile; existing_key(Path(tempfile.mkdtemp()) / "none") is None
    True
    """
    path = key_path() if path is None else Path(path)
    if not os.path.lexists(path):
        return None
    return load_key(create=False, path=path)
