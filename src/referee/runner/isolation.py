"""Agent isolation: the agent runs as another identity that can write only its own folder of the run.

Modes (plan: `actor.isolation`; docs/security-isolation.md):

- `user` (the runner is root): the agent runs as the unprivileged account `referee-agent`
  (created on first use), with no supplementary groups and no way back to root (no_new_privs).
  It can write its `agent/<step>/` and its home; the rest of the run directory is root's and
  read-only to it, and it cannot read the runner's memory or environment (another uid).
- `bwrap` (bubblewrap): the agent runs in a sandbox where `/` is read-only except its folder, a
  fresh home and the working directory (the run directory stays read-only even inside it), with
  its own pid namespace and /proc, so the runner's processes are out of sight.
- `none`: no isolation; recorded in the manifest and shown as "unisolated" in every report.
- `auto` (the default): `user` when the runner is root and the account can reach the agent's
  files, else `bwrap` when it works here, else `none` with the reason recorded and a loud warning.
"""

from __future__ import annotations

import functools
import os
import pwd
import shlex
import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from referee.core.fstree import identity as path_identity
from referee.core.fstree import open_dir
from referee.errors import PlanError
from referee.plan.model import AgentLimits
from referee.rundir.keys import KEY_ENV, key_path
from referee.rundir.schema import IsolationRecord
from referee.runner.homes import make_home, remove_home
from referee.runner.limits import applied
from referee.runner.privileges import listed, seal_tree, setid_filter, strip_tree
from referee.runner.reaper import Tracker, new_tracker, take_slot

AGENT_USER = "referee-agent"
SANDBOX_UID = 65534  # the bwrap agent's uid under a root runner (nobody): never 0, never the runner's
# bwrap's own user namespace: the agent is SANDBOX_UID in it, without a capability (a root runner only)
UNPRIVILEGED = ("--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID))
SECCOMP_FD = "@REFEREE_SECCOMP_FD@"  # in `wrap`'s command line: the launcher puts the filter's descriptor there
AGENT_SLOTS = 64  # runs on one host at once with user isolation, each with an account of its own


def agent_account(slot: int) -> str:
    """The agent account of a slot: one per run in progress on this host, so that no run's agent can write
    another's `agent/<step>/` (each is its account's) or be swept with it.

    >>> agent_account(0), agent_account(1)
    ('referee-agent', 'referee-agent-2')
    """
    return AGENT_USER if slot == 0 else f"{AGENT_USER}-{slot + 1}"


Requested = str  # "auto" | "user" | "bwrap" | "none" (ActorSpec.isolation)

# Only these reach the agent (and a command run as the agent) from the runner's environment: never credentials,
# tokens or DB URLs.
ENV_ALLOW = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TERM", "USER", "LOGNAME", "SHELL",
             "PYTHONPATH", "VIRTUAL_ENV", "SYSTEMROOT", "DISPLAY", "XDG_RUNTIME_DIR")


def is_root() -> bool:
    return os.geteuid() == 0


def ensure_agent_user(name: str = AGENT_USER) -> tuple[int, int]:
    """The agent account's (uid, gid), made with `useradd --system` on first use (no home, no login).

    OSError when it does not exist and cannot be made.
    """
    try:
        pw = pwd.getpwnam(name)
        return pw.pw_uid, pw.pw_gid
    except KeyError:
        pass
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    shell = "/usr/sbin/nologin" if os.path.exists("/usr/sbin/nologin") else "/bin/false"
    try:
        proc = subprocess.run([useradd, "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
                               "--shell", shell, name], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OSError(f"cannot create the user {name}: {exc}") from None
    try:  # a parallel run may have made it first; that is fine
        pw = pwd.getpwnam(name)
    except KeyError:
        raise OSError(f"cannot create the user {name}: {proc.stderr.strip() or proc.returncode}") from None
    return pw.pw_uid, pw.pw_gid


@functools.lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """None when bubblewrap can make a sandbox here (tried once), else why not."""
    exe = shutil.which("bwrap")
    if exe is None:
        return "bwrap is not installed (Debian: apt-get install bubblewrap)"
    try:
        proc = subprocess.run([exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
                               *(UNPRIVILEGED if is_root() else ()), "--die-with-parent", "--new-session", "true"],
                              stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap does not run: {exc}"
    if proc.returncode != 0:
        return f"bwrap cannot make a sandbox here: {(proc.stderr.strip().splitlines() or ['?'])[-1]}"
    return None


def needed_paths(command: str | list[str], env_path: str | None, extra: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """(test flag, path) the agent's identity must pass to run `command`: its program executable, every
    existing file it names readable (`x`/`r`, as in `test -x`).

    >>> needed_paths("sh /etc/hostname --out /nope", "/usr/bin:/bin")[1]
    ('r', '/etc/hostname')
    """
    try:
        words = shlex.split(command) if isinstance(command, str) else list(command)
    except ValueError:
        words = []
    out: list[tuple[str, str]] = []
    if words and "=" not in words[0]:
        prog = words[0] if "/" in words[0] else shutil.which(words[0], path=env_path)
        if prog:
            out.append(("x", prog))
    for w in words[1:]:
        if "/" in w and os.path.exists(w):
            out.append(("r", w))
    out.extend(("r", p) for p in extra)
    return out


def probe(uid: int, gid: int, checks: list[tuple[str, str]], cwd: Path) -> list[str]:
    """The checks the account fails, run as that account (so ACLs and every path component count)."""
    script = 'for a; do f=${a%%:*}; p=${a#*:}; test -"$f" "$p" || printf "%s\\n" "$a"; done'
    # the probe runs from /, the agent from cwd: a relative path of its command line is the agent's cwd's
    args = [f"{flag}:{os.path.join(cwd, path)}" for flag, path in checks] + [f"x:{cwd}"]
    try:
        proc = subprocess.run(["/bin/sh", "-c", script, "sh", *args], user=uid, group=gid, extra_groups=[],
                              cwd="/", env={"PATH": "/usr/bin:/bin"}, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [f"the probe did not run: {exc}"]
    return [("cannot run " if line[0] == "x" else "cannot read ") + line[2:] for line in proc.stdout.splitlines()]


def _writable_by(st: os.stat_result, uid: int, gid: int) -> bool:
    if st.st_uid == uid:
        return bool(st.st_mode & stat.S_IWUSR)
    if st.st_gid == gid:
        return bool(st.st_mode & stat.S_IWGRP)
    return bool(st.st_mode & stat.S_IWOTH)


def exposed_ancestors(run_dir: Path, uid: int, gid: int) -> list[str]:
    """The run directory, or a folder above it, that the account could write or rename (and so replace).

    A sticky folder (like /tmp) protects the entries it does not own.
    """
    bad = []
    p = Path(os.path.abspath(run_dir))
    if _writable_by(os.stat(p), uid, gid):
        bad.append(f"{p} is writable")
    while p.parent != p:
        st, pst = os.lstat(p), os.stat(p.parent)
        sticky_safe = pst.st_mode & stat.S_ISVTX and st.st_uid != uid and pst.st_uid != uid
        if _writable_by(pst, uid, gid) and not sticky_safe:
            bad.append(f"{p} can be renamed (its folder is writable)")
        p = p.parent
    return bad


@dataclass
class Sandbox:
    """One run's isolation: how each agent step is wrapped, tracked, and sealed afterwards."""

    mode: str  # "user" | "bwrap" | "none"
    requested: str
    note: str
    run_dir: Path
    cwd: Path
    uid: int | None = None
    gid: int | None = None
    home: Path | None = None
    tracking: str = "session"
    limits: AgentLimits | None = None  # on each agent process (plan: actor.limits)
    user: str = AGENT_USER  # user mode: the account this run holds (agent_account)
    _old_umask: int | None = field(default=None, repr=False)
    _slot_lock: int | None = field(default=None, repr=False)  # the open lock that holds `user` for this run
    _stripped: list[str] = field(default_factory=list, repr=False)  # privileges taken off since take_stripped

    def applied_limits(self) -> tuple[dict[str, int], list[str]]:
        """The limits that hold in this sandbox's mode, and why any were left out (`limits.applied`)."""
        return applied(self.limits, self.mode)

    def record(self) -> IsolationRecord:
        chosen, notes = self.applied_limits()
        note = "; ".join(n for n in (self.note, *notes) if n)
        return IsolationRecord(mode=self.mode, requested=self.requested, note=note,  # type: ignore[arg-type]
                               user=self.user if self.mode == "user" else None,
                               tracking=self.tracking, limits=chosen or None)  # type: ignore[arg-type]

    def tracker(self) -> Tracker:
        fallback = {"user": "uid", "bwrap": "pidns"}.get(self.mode, "session")
        return new_tracker(fallback, uid=self.uid, gid=self.gid)

    def identity(self) -> tuple[int, int] | None:
        """The (uid, gid) the agent's first process takes before it runs the agent (user mode)."""
        return (self.uid, self.gid) if self.mode == "user" and self.uid is not None and self.gid is not None else None

    def env(self, env: dict[str, str], home: Path | None = None) -> dict[str, str]:
        """The agent's environment with its own home and temp folder (or `home`'s: `scratch_home`)."""
        home = home or self.home
        if home is None:
            return env
        env = {**env, "HOME": str(home), "TMPDIR": str(home / "tmp")}
        if self.mode == "user":
            env.update(USER=self.user, LOGNAME=self.user)
        env.pop("XDG_RUNTIME_DIR", None)
        program = setid_filter() if self.mode == "bwrap" and is_root() else None
        if program is not None:
            env["REFEREE_SECCOMP"] = program.hex()  # the launcher takes it out before bwrap starts
        return env

    def scratch_home(self) -> Path:
        """A fresh, empty home for one command run as the agent; the caller removes it. Not the agent's own: the
        dotfiles the agent left there (`.curlrc`, `.gitconfig`, a `usercustomize.py`) would run inside the
        plan's command, read its secrets and decide its exit code."""
        ident = self.identity()
        return make_home(*ident) if ident else make_home()

    def prepare(self, agent_dir: Path) -> None:
        """Before a step: its folder becomes the agent's (user mode)."""
        if self.mode == "user" and self.uid is not None and self.gid is not None:
            fd = open_dir(agent_dir)  # the runner's fresh folder; a handle all the same
            try:
                os.fchown(fd, self.uid, self.gid)
                os.fchmod(fd, 0o755)
            finally:
                os.close(fd)

    def wrap(self, argv: list[str], agent_dir: Path) -> list[str]:
        """The command line that runs `argv` inside this sandbox."""
        if self.mode != "bwrap":
            return argv
        assert self.home is not None
        a = [shutil.which("bwrap") or "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
             "--tmpfs", "/dev/shm"]
        run_dir, cwd = Path(os.path.abspath(self.run_dir)), Path(os.path.abspath(self.cwd))
        if cwd != Path("/") and not _inside(cwd, run_dir):
            a += ["--bind", str(cwd), str(cwd)]  # the agent's workspace
            top = self._runs_top()
            if top is not None:
                # read-only from the folder below the workspace down, so nothing above the run can be renamed
                a += ["--ro-bind", str(top), str(top)]
        agent = os.path.abspath(agent_dir)
        a += ["--bind", str(self.home), str(self.home), "--bind", agent, agent,
              "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
              "--die-with-parent", "--new-session"]
        a += _hide_keys(cwd, run_dir, Path(os.path.abspath(self.home)), Path(agent))
        if is_root():
            # never uid 0 in the sandbox: a user namespace of its own, as an unprivileged uid with no capability;
            # that namespace is root on disk, so no setuid/setgid file may be made (the launcher hands bwrap the
            # filter: `env` gives it REFEREE_SECCOMP)
            a += [*UNPRIVILEGED, "--cap-drop", "ALL"]
            if setid_filter() is not None:
                a += ["--seccomp", SECCOMP_FD]
        return a + ["--chdir", str(cwd), "--", *argv]

    def seal(self, agent_dir: Path) -> list[str]:
        """After a step (all its processes gone): its files become the runner's, read-only to the agent (user mode),
        and no file the agent could write keeps a setuid/setgid bit or a file capability (`strip`).

        Returns refusals: files in the folder the agent did not make (hard links to others' files).
        """
        refused: list[str] = []
        if self.mode == "user" and self.uid is not None:
            # walk_handles' depth (64) is past what the store takes files from (store.MAX_AGENT_DEPTH, 32): all of
            # that is sealed, and nothing below it becomes evidence
            refused, stripped = seal_tree(agent_dir, self.uid, to=(os.geteuid(), os.getegid()))
            self._stripped += [f"agent/{agent_dir.name}/{line}" for line in stripped]
        self.strip(agent_dir)
        return refused

    def workspace(self) -> Path | None:
        """The working directory when the agent could write in it (bwrap binds it; in user mode what its account
        may write there), None for `/` (nothing to walk there) or a workspace inside the run directory."""
        run_dir, cwd = Path(os.path.abspath(self.run_dir)), Path(os.path.abspath(self.cwd))
        if self.mode not in ("user", "bwrap") or cwd == Path("/") or _inside(cwd, run_dir):
            return None
        return cwd

    def strip(self, agent_dir: Path | None = None) -> None:
        """Take setuid/setgid bits and file capabilities off every file the agent could write: its folder (bwrap;
        user mode seals it), its home and the workspace (user mode: the files its account owns), through handles.
        What was taken is kept for `take_stripped`."""
        if self.mode not in ("user", "bwrap"):
            return
        owner = self.uid if self.mode == "user" else None
        roots: list[tuple[Path, str]] = []
        if agent_dir is not None and self.mode == "bwrap":
            roots.append((agent_dir, f"agent/{agent_dir.name}"))
        if self.home is not None:
            roots.append((self.home, "$HOME"))
        workspace = self.workspace()
        if workspace is not None:
            roots.append((workspace, "$PWD"))
        # the folder of the run directories (the runner's; bwrap binds it read-only): the agent writes only its own
        # folder there, walked above, and earlier runs are not walked again at every step
        skip = frozenset(i for i in (path_identity(self.run_dir), path_identity(self._runs_top() or self.run_dir)) if i)
        for root, label in roots:
            self._stripped += strip_tree(root, label, owner=owner, skip=skip)

    def _runs_top(self) -> Path | None:
        """The folder right below the workspace that holds the run directory (`wrap` binds it read-only)."""
        run_dir, cwd = Path(os.path.abspath(self.run_dir)), Path(os.path.abspath(self.cwd))
        if cwd == run_dir or not _inside(run_dir, cwd):
            return None
        return cwd / run_dir.relative_to(cwd).parts[0]

    def take_stripped(self) -> list[str]:
        """Strip once more (commands run as the agent after the step may have made more), and give the files
        stripped since the last call, one line each (at most `privileges.MAX_LISTED` and a count)."""
        self.strip()
        out, self._stripped = list(dict.fromkeys(self._stripped)), []
        return listed(out)

    def close(self) -> None:
        if self.home is not None:
            remove_home(self.home)  # the agent's HOME, as deep as it made it, through handles
            self.home = None
        if self._old_umask is not None:
            os.umask(self._old_umask)
            self._old_umask = None
        if self._slot_lock is not None:
            os.close(self._slot_lock)  # the account is free for the next run
            self._slot_lock = None


def _key_folders() -> list[Path]:
    """The folders that hold signing keys: the active key's, and the user's default one (under $HOME, and under
    $XDG_CONFIG_HOME when set)."""
    bare = {k: v for k, v in os.environ.items() if k not in (KEY_ENV, "XDG_CONFIG_HOME")}
    keys = [key_path(), key_path({k: v for k, v in os.environ.items() if k != KEY_ENV}), key_path(bare)]
    return list(dict.fromkeys(Path(os.path.abspath(k)).parent for k in keys))


def _hide_keys(*keep: Path) -> list[str]:
    """bwrap arguments that hide every signing-key folder from the sandbox (an empty tmpfs in its place); the agent
    there is the runner's user, root included, so a 0600 key of that user is otherwise its to read, and whoever
    reads one can seal a forged run directory. A folder that holds what the sandbox needs (`keep`: workspace,
    run directory, homes) keeps its other files; only its key files are hidden."""
    out: list[str] = []
    for folder in _key_folders():
        if not folder.is_dir() or folder == Path("/"):
            continue
        if any(_inside(k, folder) for k in keep):
            out += [x for key in folder.glob("*key*") if key.is_file() for x in ("--ro-bind", "/dev/null", str(key))]
        else:
            out += ["--tmpfs", str(folder)]
    return out


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def user_unfit(problems: list[str], name: str = AGENT_USER, *, run_dir: bool = False) -> PlanError:
    """The plan error of an explicit `isolation: user` that cannot run the agent (`run_dir`: the run directory is
    among what the account must reach)."""
    return PlanError(f"actor.isolation: user cannot work here: {'; '.join(problems)}",
                     fix=f"make these readable by the user {name} (chmod o+rx, or setfacl -m u:{name}:rx), "
                         + ("put --out where it cannot write, " if run_dir else "") + "or choose another isolation")


def user_cannot_run(command: str | list[str], env_path: str | None, cwd: Path) -> list[str]:
    """Why the agent's account cannot run `command` from `cwd` (its program, the files it names, the folder), before
    any run directory exists: an explicit `isolation: user` that cannot work is a plan error, not a run's ERROR."""
    if not is_root():
        return ["the runner is not root (only root can run the agent as another user)"]
    try:
        uid, gid = ensure_agent_user()
    except OSError as exc:
        return [str(exc)]
    return probe(uid, gid, needed_paths(command, env_path), Path(os.path.abspath(cwd)))


@dataclass(frozen=True)
class _Account:
    """The agent account a run holds: its name, ids, and the open lock that holds it (`take_slot`)."""

    name: str
    uid: int
    gid: int
    lock: int


def _user_problems(run_dir: Path, cwd: Path, checks: list[tuple[str, str]]) -> tuple[_Account | None, list[str]]:
    """The account this run's agent would run as (its slot taken), or None; and why it cannot run the agent."""
    if not is_root():
        return None, ["the runner is not root (only root can run the agent as another user)"]
    try:
        slot, lock = take_slot(AGENT_SLOTS)
    except OSError as exc:
        return None, [str(exc)]
    name = agent_account(slot)
    try:
        uid, gid = ensure_agent_user(name)
    except OSError as exc:
        os.close(lock)
        return None, [str(exc)]
    (run_dir / "agent").mkdir(exist_ok=True)
    problems = probe(uid, gid, [*checks, ("x", str(run_dir / "agent"))], cwd)
    problems += exposed_ancestors(run_dir, uid, gid)
    if problems:
        os.close(lock)
    return _Account(name, uid, gid, lock), problems


def open_sandbox(requested: Requested, *, run_dir: Path, cwd: Path, command: str | list[str],
                 env_path: str | None, extra_read: tuple[str, ...] = (), limits: AgentLimits | None = None) -> Sandbox:
    """Decide the isolation of one run (see the module docstring) and make what it needs (account, home);
    its agent processes get `limits`.

    PlanError when the plan asks for a mode that cannot work here, naming what is missing.
    """
    sandbox = _open_sandbox(requested, run_dir=run_dir, cwd=cwd, command=command, env_path=env_path,
                            extra_read=extra_read)
    sandbox.limits = limits
    return sandbox


def _open_sandbox(requested: Requested, *, run_dir: Path, cwd: Path, command: str | list[str],
                  env_path: str | None, extra_read: tuple[str, ...]) -> Sandbox:
    # the probe runs as the agent's user from elsewhere: a relative --out would be looked for there, fail, and
    # quietly cost user isolation
    run_dir, cwd = Path(os.path.abspath(run_dir)), Path(os.path.abspath(cwd))
    checks = needed_paths(command, env_path, extra_read)
    notes: list[str] = []
    if requested == "none":
        return Sandbox("none", requested, "actor.isolation: none in the plan", run_dir, cwd, tracking=_tracking("none"))
    if requested in ("auto", "user"):
        account, problems = _user_problems(run_dir, cwd, checks)
        if account is not None and not problems:
            old = os.umask(0)
            os.umask(old | 0o022)  # nothing the runner writes during the run may be writable by the agent
            return Sandbox("user", requested, "", run_dir, cwd, uid=account.uid, gid=account.gid,
                           home=make_home(account.uid, account.gid), tracking=_tracking("user"),
                           user=account.name, _old_umask=old, _slot_lock=account.lock)
        why = f"user isolation: {'; '.join(problems)}"
        if requested == "user":
            raise user_unfit(problems, account.name if account else AGENT_USER, run_dir=True)
        if is_root():
            notes.append(why)
    if requested in ("auto", "bwrap"):
        problem = bwrap_problem()
        if problem is None:
            return Sandbox("bwrap", requested, "; ".join(notes), run_dir, cwd, home=make_home(),
                           tracking=_tracking("bwrap"))
        if requested == "bwrap":
            raise PlanError(f"actor.isolation: bwrap cannot work here: {problem}",
                            fix="install bubblewrap (apt-get install bubblewrap), or choose another isolation")
        notes.append(problem)
    return Sandbox("none", requested, "auto found no isolation that works here: " + "; ".join(notes), run_dir, cwd,
                   tracking=_tracking("none"))


def _tracking(mode: str) -> str:
    from referee.runner.reaper import cgroup_base

    if cgroup_base() is not None:
        return "cgroup"
    return {"user": "uid", "bwrap": "pidns"}.get(mode, "session")
