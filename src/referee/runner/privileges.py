"""No privilege left behind: after a step, setuid/setgid bits and file capabilities go from what the agent could write.

Under a root runner a bwrap agent writes files that are root's on disk; `chmod 4755` on a copy of a shell
there is a root shell for any local user once the sandbox (and its nosuid mounts) is gone. A user-mode
agent's setuid file runs as its account, which owns the next run's agent folder. So after each step the
runner walks the agent's folder, its home and the workspace it could write, through folder handles (no
link followed: `fstree.walk_handles`), and takes the bits and the `security.capability` attribute off
every regular file that has them, by a handle on the file itself (`O_PATH | O_NOFOLLOW`). The same handles
take the agent's folder back when the step is over (`seal_tree`).
"""

from __future__ import annotations

import errno
import functools
import os
import stat
import struct
from pathlib import Path

from referee.core.fstree import walk_handles
from referee.core.safetext import fs_name

SETID = stat.S_ISUID | stat.S_ISGID
CAPS = "security.capability"
MAX_LISTED = 100  # lines a step record lists; the rest are counted


def _handle(fd: int, name: str) -> int:
    """An `O_PATH` handle on `name` itself (a link stays the link), for chmod/xattr through /proc/self/fd."""
    return os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)


def _has_caps(ref: str, *, handle: bool = True) -> bool:
    """Whether `ref` has a file capability: a /proc/self/fd link of a handle (followed: to the file it holds), or
    `/proc/self/fd/<folder>/<name>` (`handle` False: the name itself, a link not followed)."""
    try:
        os.getxattr(ref, CAPS, follow_symlinks=handle)
        return True
    except OSError as exc:
        if exc.errno in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOENT):
            return False
        raise


def strip_file(fd: int, name: str, *, owner: int | None = None) -> list[str]:
    """Take setuid, setgid and file capabilities off the regular file `name` of the folder `fd`; what was taken.

    `owner`: only a file of this uid (what an agent of that account could have changed). Nothing else is
    touched: a link, a folder or a special file is left as it is.
    """
    try:
        h = _handle(fd, name)
    except OSError:
        return []
    try:
        st = os.fstat(h)
        if not stat.S_ISREG(st.st_mode) or (owner is not None and st.st_uid != owner):
            return []
        ref = f"/proc/self/fd/{h}"  # the file the handle holds, whatever its name now leads to
        taken = []
        if st.st_mode & SETID:
            os.chmod(ref, stat.S_IMODE(st.st_mode) & ~SETID)
            taken += [w for bit, w in ((stat.S_ISUID, "setuid"), (stat.S_ISGID, "setgid")) if st.st_mode & bit]
        if _has_caps(ref):
            os.removexattr(ref, CAPS)
            taken.append("file capabilities")
        return taken
    finally:
        os.close(h)


def strip_tree(root: Path, label: str, *, owner: int | None = None,
               skip: frozenset[tuple[int, int]] = frozenset()) -> list[str]:
    """`strip_file` on every regular file below `root` (any depth, no link followed, `skip` folders not entered);
    one line per file stripped, named `label/relative path`. A file is looked at by `fstatat` on its folder's
    handle, and opened only when it has a bit to take, or is executable and has an extended attribute there:
    the workspace is walked after every step."""
    out: list[str] = []
    for fd, folder, _dirs, others in walk_handles(root, max_depth=None, skip=skip):
        for name in others:
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISREG(st.st_mode) or (owner is not None and st.st_uid != owner):
                    continue
                # a capability counts only on a program (and no agent can set one: it holds no CAP_SETFCAP); a
                # file made executable later is looked at again then
                if not st.st_mode & SETID and not (st.st_mode & 0o111 and _has_caps(f"/proc/self/fd/{fd}/{name}",
                                                                                      handle=False)):
                    continue
                taken = strip_file(fd, name, owner=owner)
            except OSError as exc:
                taken = [f"not stripped ({exc.strerror or exc})"]
            if taken:
                rel = (folder / name).relative_to(root).as_posix()
                out.append(f"{label}/{fs_name(rel)}: {', '.join(taken)} removed")
    return out


def seal_tree(root: Path, agent_uid: int, *, to: tuple[int, int]) -> tuple[list[str], list[str]]:
    """Take the agent's folder back after its step: every entry the agent's account owns becomes `to`'s (uid,
    gid) and loses write for others, setuid and setgid; all through handles, so a link made in it is changed
    itself, never what it leads to. Returns (files the agent did not make, relative paths; what was stripped)."""
    refused: list[str] = []
    stripped: list[str] = []
    for fd, folder, dirs, others in walk_handles(root):
        for name in [*dirs, *others]:
            rel = (folder / name).relative_to(root).as_posix()
            try:
                h = _handle(fd, name)
            except OSError:  # gone, or a name too long to reach: not taken as evidence either
                continue
            try:
                st = os.fstat(h)
                if st.st_uid != agent_uid:
                    if not stat.S_ISDIR(st.st_mode):
                        refused.append(rel)
                    continue
                ref = f"/proc/self/fd/{h}"
                if stat.S_ISREG(st.st_mode):
                    taken = [w for bit, w in ((stat.S_ISUID, "setuid"), (stat.S_ISGID, "setgid")) if st.st_mode & bit]
                    if _has_caps(ref):
                        os.removexattr(ref, CAPS)
                        taken.append("file capabilities")
                    if taken:
                        stripped.append(f"{fs_name(rel)}: {', '.join(taken)} removed")
                os.chown(name, *to, dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISLNK(st.st_mode):
                    os.chmod(ref, stat.S_IMODE(st.st_mode) & ~0o7022)
            except OSError:
                continue
            finally:
                os.close(h)
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fchown(top, *to)
        os.fchmod(top, 0o755)
    finally:
        os.close(top)
    return refused, stripped


def listed(lines: list[str]) -> list[str]:
    """At most MAX_LISTED lines, and a count of the rest."""
    if len(lines) <= MAX_LISTED:
        return lines
    return [*lines[:MAX_LISTED], f"... and {len(lines) - MAX_LISTED} more"]


# -- no setuid file made at all: a seccomp filter for the bwrap agent of a root runner -----------------------------
# That agent is root on disk (its user namespace maps it there), so a setuid file it makes is root's for as long
# as the step runs. The filter refuses (EPERM) every chmod, and every create, whose mode holds S_ISUID/S_ISGID;
# openat2 (its mode is behind a pointer a filter cannot read) says ENOSYS, so libc falls back to openat; io_uring
# (whose operations no filter sees) is refused; another architecture's syscalls (32-bit, x32) say ENOSYS.

_ARCHES = {  # machine -> (AUDIT_ARCH_*, {syscall: (flags argument or None, mode argument)}, openat2, io_uring_setup)
    "x86_64": (0xC000003E, {90: (None, 1), 91: (None, 1), 268: (None, 2), 452: (None, 2), 85: (None, 1),
                            2: (1, 2), 257: (2, 3), 133: (None, 1), 259: (None, 2)}, 437, 425),
    "aarch64": (0xC00000B7, {52: (None, 1), 53: (None, 2), 452: (None, 2), 56: (2, 3), 33: (None, 2)}, 437, 425),
}
_LD, _JEQ, _JSET, _JGE, _RET = 0x20, 0x15, 0x45, 0x35, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_CREATES = os.O_CREAT | 0o20000000  # O_CREAT, __O_TMPFILE


@functools.lru_cache(maxsize=None)
def setid_filter(machine: str | None = None) -> bytes | None:
    """A compiled seccomp program (struct sock_filter[], for `bwrap --seccomp FD`) that refuses making a setuid or
    setgid file; None on an architecture it does not know.

    >>> len(setid_filter("x86_64")) % 8, setid_filter("sparc") is None
    (0, True)
    """
    arch = _ARCHES.get(machine or os.uname().machine)
    if arch is None:
        return None
    audit, calls, openat2, io_uring = arch
    # (code, jump if true, jump if false, k); a str code is a label, a str jump goes to that label
    ops: list[tuple[int | str, object, object, int]] = [(_LD, 0, 0, 4), (_JEQ, 0, "nosys", audit), (_LD, 0, 0, 0)]
    if audit == 0xC000003E:
        ops.append((_JGE, "nosys", 0, 0x40000000))  # x32
    ops += [(_JEQ, "nosys", 0, openat2), (_JEQ, "eperm", 0, io_uring)]
    for i, (nr, (flags, mode)) in enumerate(calls.items()):
        nxt = f"next{i}"
        ops.append((_JEQ, 0, nxt, nr))
        if flags is not None:
            ops += [(_LD, 0, 0, 16 + 8 * flags), (_JSET, 0, "allow", _CREATES)]  # low word: little-endian
        ops += [(_LD, 0, 0, 16 + 8 * mode), (_JSET, "eperm", "allow", SETID), (nxt, 0, 0, 0)]
    ops += [("allow", 0, 0, 0), (_RET, 0, 0, _ALLOW), ("eperm", 0, 0, 0), (_RET, 0, 0, _ERRNO | errno.EPERM),
            ("nosys", 0, 0, 0), (_RET, 0, 0, _ERRNO | errno.ENOSYS)]
    labels: dict[str, int] = {}
    code: list[tuple[int, object, object, int]] = []
    for c, jt, jf, k in ops:
        if isinstance(c, str):
            labels[c] = len(code)
        else:
            code.append((c, jt, jf, k))

    def rel(at: int, to: object) -> int:
        return 0 if to == 0 else labels[str(to)] - at - 1

    return b"".join(struct.pack("<HBBI", c, rel(i, jt), rel(i, jf), k) for i, (c, jt, jf, k) in enumerate(code))
