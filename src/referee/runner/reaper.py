"""Every agent process ends with its step: find them all (a cgroup, the agent's uid, or its session) and kill them.

A step's processes are tracked, in order of preference, by a cgroup v2 made for the step (nothing
escapes it: double forks and `setsid` stay inside), by the agent's own uid (user isolation: every
process of that account is the agent's), or by the session and process tree of the agent's first
process (the fallback: a daemon that double-forks and calls `setsid` escapes it; bwrap's pid
namespace catches those, since the namespace dies with its first process).
"""

from __future__ import annotations

import fcntl
import functools
import itertools
import os
import signal
import subprocess
import time
from pathlib import Path

# "off" keeps the runner out of cgroups (hosts whose policy forbids it; tests of the fallbacks)
CGROUP_ENV = "REFEREE_CGROUP"
_counter = itertools.count()


def _proc_stat(pid: int) -> tuple[int, int, int] | None:
    """(ppid, pgrp, session) of a live, non-zombie process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            rest = fh.read().rsplit(b") ", 1)[1].split()
    except (OSError, IndexError):
        return None
    if rest[0] in (b"Z", b"X"):
        return None
    return int(rest[1]), int(rest[2]), int(rest[3])


def _all_pids() -> list[int]:
    return [int(n) for n in os.listdir("/proc") if n.isdigit()]


def session_members(sid: int) -> list[int]:
    """The live (non-zombie) processes whose session or process group is `sid`, the runner excepted.

    >>> p = subprocess.Popen(["sleep", "30"], start_new_session=True)
    >>> session_members(p.pid) == [p.pid]
    True
    >>> p.kill(); _ = p.wait(); session_members(p.pid)
    []
    """
    me = os.getpid()
    return [pid for pid in _all_pids()
            if pid != me and (st := _proc_stat(pid)) is not None and sid in (st[1], st[2])]


def kill_each(pids: list[int], sig: int) -> None:
    """Send `sig` to each of `pids` that still exists."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


class Tracker:
    """The processes of one agent step. `join_path` is the cgroup.procs the first process joins, if any."""

    kind = "session"
    join_path = ""

    def started(self, pid: int) -> None:
        """The agent's first process (the launcher) has this pid."""
        self.root = pid

    def pids(self) -> list[int]:
        raise NotImplementedError

    def signal_all(self, sig: int) -> None:
        kill_each(self.pids(), sig)

    def kill_all(self) -> int:
        """SIGKILL every process of the step until none is left; how many there were at first."""
        first = self.pids()
        pids = first
        for _ in range(200):
            if not pids:
                break
            kill_each(pids, signal.SIGKILL)
            time.sleep(0.01)
            pids = self.pids()
        return len(first)

    def close(self) -> None:
        pass


class SessionTracker(Tracker):
    """The first process, its descendants and everything in its session or process group.

    bwrap's pid namespace makes this complete (orphans stay below the sandbox's init, which takes
    the namespace down with it); without one, a double-forked `setsid` daemon escapes.
    """

    def __init__(self, kind: str = "session") -> None:
        self.kind = kind
        self.root = 0

    def pids(self) -> list[int]:
        if not self.root:
            return []
        table = {pid: st for pid in _all_pids() if (st := _proc_stat(pid)) is not None}
        found = {p for p, (_, pgrp, sid) in table.items() if sid == self.root or pgrp == self.root}
        if self.root in table:
            found.add(self.root)
        grew = True
        while grew:  # descendants of anything found
            more = {p for p, (ppid, _, _) in table.items() if ppid in found and p not in found}
            found |= more
            grew = bool(more)
        found.discard(os.getpid())
        return sorted(found)


class UidTracker(Tracker):
    """Every process whose real, effective or saved uid is the agent's account (user isolation).

    `kill(-1)` as that account signals all of them at once, so a fork loop cannot outrun it.
    """

    kind = "uid"

    def __init__(self, uid: int, gid: int) -> None:
        self.uid, self.gid = uid, gid

    def pids(self) -> list[int]:
        out = []
        for pid in _all_pids():
            try:
                with open(f"/proc/{pid}/status", "rb") as fh:
                    status = fh.read()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith(b"Uid:"):
                    if self.uid in [int(x) for x in line.split()[1:4]] and b"State:\tZ" not in status:
                        out.append(pid)
                    break
        return out

    def kill_all(self) -> int:
        first = self.pids()
        for _ in range(20):
            if not self.pids():
                break
            # sh's builtin kill: /bin/sh is always there, and the runner's interpreter may not be reachable
            subprocess.run(["/bin/sh", "-c", "kill -9 -1"], user=self.uid, group=self.gid, extra_groups=[],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=10, check=False)
            kill_each(self.pids(), signal.SIGKILL)
            time.sleep(0.01)
        return len(first)


class CgroupTracker(Tracker):
    """A cgroup v2 made for the step: whatever the agent forks stays in it; `cgroup.kill` ends them all."""

    kind = "cgroup"

    def __init__(self, path: Path) -> None:
        self.dir = path
        self.join_path = str(path / "cgroup.procs")

    @classmethod
    def make(cls, base: Path) -> "CgroupTracker":
        """A new cgroup under `base`, named after this runner's pid (so an orphan can be told later)."""
        path = base / f"referee-{os.getpid()}-{next(_counter)}"
        path.mkdir()
        return cls(path)

    def pids(self) -> list[int]:
        try:
            text = (self.dir / "cgroup.procs").read_text()
        except OSError:
            return []
        return [int(x) for x in text.split()]

    def kill_all(self) -> int:
        first = self.pids()
        if not first:
            return 0
        kill_file = self.dir / "cgroup.kill"
        if kill_file.exists():
            kill_file.write_text("1")
        for _ in range(500):  # cgroup.kill is asynchronous; older kernels: kill what is listed until empty
            pids = self.pids()
            if not pids:
                break
            kill_each(pids, signal.SIGKILL)
            time.sleep(0.01)
        return len(first)

    def close(self) -> None:
        for _ in range(100):
            try:
                self.dir.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:  # still populated for a moment after the last SIGKILL
                self.kill_all()
                time.sleep(0.02)


def _cgroup2_dir() -> Path | None:
    """The runner's own cgroup v2 directory, from /proc/self/mountinfo and /proc/self/cgroup."""
    try:
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
        mine = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    rel = next((line[3:] for line in mine if line.startswith("0::")), None)
    if rel is None:
        return None
    for line in mounts:
        fields = line.split()
        if "-" not in fields:
            continue
        if fields[fields.index("-") + 1] == "cgroup2":
            root, point = fields[3], fields[4].replace("\\040", " ")
            if root != "/" and rel.startswith(root):
                rel = rel[len(root):]
            return Path(point) / rel.lstrip("/")
    return None


@functools.lru_cache(maxsize=1)
def cgroup_base() -> Path | None:
    """Where step cgroups go, if this runner may make them and move processes into them (tried once)."""
    if os.environ.get(CGROUP_ENV, "").lower() in ("0", "off", "no", "false"):
        return None
    base = _cgroup2_dir()
    if base is None or not os.access(base, os.W_OK):
        return None
    _sweep_orphans(base)
    try:
        probe = CgroupTracker.make(base)
    except OSError:
        return None
    try:
        proc = subprocess.run(["/bin/sh", "-c", 'echo $$ > "$1" && exit 7', "sh", probe.join_path],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=10, check=False)
        return base if proc.returncode == 7 else None
    except (OSError, subprocess.TimeoutExpired):
        return None
    finally:
        probe.kill_all()
        probe.close()


def _sweep_orphans(base: Path) -> None:
    """End what is left in the step cgroups of a runner that died without ending them (SIGKILL, a crash):
    its agents would otherwise run on; their cgroup names the runner's pid."""
    for d in base.glob("referee-*-*"):
        try:
            pid = int(d.name.split("-")[1])
        except ValueError:
            continue
        if pid == os.getpid() or _proc_stat(pid) is not None:
            continue
        orphan = CgroupTracker(d)
        orphan.kill_all()
        orphan.close()


def new_tracker(fallback: str, *, uid: int | None = None, gid: int | None = None) -> Tracker:
    """A tracker for one step: a cgroup where possible, else the uid (`fallback="uid"`) or the session.

    >>> t = new_tracker("session"); t.kind in ("cgroup", "session"), t.pids(); t.close()
    (True, [])
    """
    base = cgroup_base()
    if base is not None:
        try:
            return CgroupTracker.make(base)
        except OSError:
            pass
    if fallback == "uid" and uid is not None and gid is not None:
        return UidTracker(uid, gid)
    return SessionTracker("pidns" if fallback == "pidns" else "session")


def lock_dir() -> Path:
    """Where the host-wide locks of agent accounts lie: /run where this runner may write, else the temp folder."""
    import tempfile

    return Path("/run") if os.access("/run", os.W_OK) else Path(tempfile.gettempdir())


def take_slot(slots: int, where: Path | None = None) -> tuple[int, int]:
    """(slot, fd): the first of `slots` agent-account slots no other run on this host holds, and the open lock
    that holds it for this run (close `fd` to free it; a runner that dies frees it too). OSError if all are held.

    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> (a, fa), (b, fb) = take_slot(4, d), take_slot(4, d); a, b
    (0, 1)
    >>> os.close(fa); take_slot(4, d)[0]
    0
    """
    where = where or lock_dir()
    for slot in range(slots):
        fd = os.open(where / f"referee-agent-slot-{slot}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return slot, fd
    raise OSError(f"all {slots} agent accounts are in use by other runs on this host")
