"""Helpers for the security acceptance tests: a base folder any user can read, the hostile agent's
command line, the CLI with a deadline, process and file-tree inspection.

Import as `from tests.security.sec_helpers import ...`. These tests see referee only through its
command line and the files it writes.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.conftest import FORCE_PROCESS, ROOT
from tests.support.incli import process_needed, run_in_process

AGENTS_SRC = Path(__file__).resolve().parent / "agents"

# The agents may run as another user (isolation): a system interpreter that user can execute.
AGENT_PY = next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if os.access(p, os.X_OK)), sys.executable)


def make_base(prefix: str = "referee-sec-") -> Path:
    """A fresh folder under /tmp that every user may enter and read, holding a copy of the agents."""
    parent = "/tmp" if os.access("/tmp", os.W_OK) else tempfile.gettempdir()
    base = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    os.chmod(base, 0o755)
    agents = base / "agents"
    agents.mkdir()
    os.chmod(agents, 0o755)
    for src in AGENTS_SRC.glob("*.py"):
        shutil.copyfile(src, agents / src.name)
        os.chmod(agents / src.name, 0o644)
    return base


def remove_tree(path: Path) -> None:
    """rmtree that copes with FIFOs, links and read-only folders left by hostile agents."""
    def onerror(func, p, _exc):
        try:
            os.chmod(os.path.dirname(p), 0o755)
            func(p)
        except OSError:
            pass

    shutil.rmtree(path, onerror=onerror)


def hostile_cmd(base: Path, out: Path) -> str:
    """The hostile agent's command line (it is told the --out folder, as an agent with a shell would find it)."""
    return " ".join(shlex.quote(x) for x in (AGENT_PY, str(base / "agents" / "hostile.py"), str(out)))


def limit_memory(gib: float):
    """A preexec_fn capping the address space, so a memory bomb fails the test, not the machine."""
    def _limit():
        n = int(gib * (1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (n, n))
    return _limit


def cli(args, *, cwd: Path, env: dict, timeout: float = 60, preexec=None,
        process: bool = False) -> tuple[int | None, str, str, float]:
    """Run `referee ARGS` with a deadline: returns (rc, stdout, stderr, seconds).

    In this process (tests.support.incli) unless `process` or `preexec` is given (or `env` needs a child): a
    child that does not finish within `timeout` is killed (its whole process group) and reported as a hang,
    and the caller decides whether that fails the test; in this process, pytest-timeout ends a hang.
    """
    t0 = time.monotonic()
    if not (process or preexec or FORCE_PROCESS) and process_needed(env) is None:
        rc, bout, berr = run_in_process(args, cwd=cwd, env=env)
        return rc, bout.decode("utf-8", "replace"), berr.decode("utf-8", "replace"), time.monotonic() - t0
    cmd = [sys.executable, "-m", "referee.cli.main", *[str(a) for a in args]]
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, preexec_fn=preexec)
    try:
        out, err = proc.communicate(timeout=timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:  # a grandchild still holds the pipes
            out, err = b"", b""
        rc = None
    dt = time.monotonic() - t0
    return rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), dt


def hung(rc, args, seconds: float, out: str, err: str) -> str:
    return (f"`referee {' '.join(map(str, args))}` hung: killed after {seconds:.0f} s\n"
            f"stdout: {out[-1500:]}\nstderr: {err[-1500:]}")


def cli_env() -> dict:
    from tests.conftest import base_cli_env

    return base_cli_env()


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_dirs(out: Path) -> list[Path]:
    """Run directories under --out: OUT/<plan>/<UTC timestamp>/."""
    return sorted(p for p in out.glob("*/*") if p.is_dir() and (p / "manifest.json").exists())


def verdicts_of(run_dir: Path) -> dict[str, str]:
    res = json.loads((run_dir / "results.json").read_text())
    return {s["id"]: s["verdict"] for s in res["steps"]}


def json_verdicts(stdout: str) -> dict[str, dict] | None:
    """Steps from `referee grade --json` output (None when it printed no JSON)."""
    try:
        data = json.loads(stdout)
    except ValueError:
        return None
    return {s["id"]: s for run in data.get("runs", []) for s in run.get("steps", [])}


def procs_with(token: str, field: str = "cmdline") -> list[int]:
    """Live (non-zombie) processes whose command line (or `field`: "environ", inherited by every child) holds
    `token`."""
    found = []
    for d in Path("/proc").glob("[0-9]*"):
        try:
            if token.encode() not in (d / field).read_bytes():
                continue
            state = (d / "stat").read_text().rsplit(") ", 1)[1][0]
        except (OSError, IndexError):
            continue
        if state != "Z" and int(d.name) != os.getpid():
            found.append(int(d.name))
    return found


def wait_gone(token: str, timeout: float, field: str = "cmdline") -> list[int]:
    """Wait until no process holds `token` (in `field`, as procs_with); returns the ones still alive after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        alive = procs_with(token, field)
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


def kill_token(token: str) -> None:
    for pid in procs_with(token):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def tree_state(root: Path, skip: tuple[Path, ...] = ()) -> dict[str, tuple]:
    """Every entry under `root` (links not followed): kind and content, for before/after comparisons."""
    state: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        d = Path(dirpath)
        if any(d == s or s in d.parents for s in skip):
            dirnames[:] = []
            continue
        for name in dirnames + filenames:
            p = d / name
            if any(p == s for s in skip):
                continue
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                state[str(p)] = ("link", os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                state[str(p)] = ("file", hashlib.sha256(p.read_bytes()).hexdigest())
            elif stat.S_ISDIR(st.st_mode):
                state[str(p)] = ("dir",)
            else:
                state[str(p)] = ("other", stat.S_IFMT(st.st_mode))
    return state


def regular_files(root: Path) -> list[Path]:
    """Regular files under `root`, links and FIFOs neither followed nor opened."""
    out = []
    for dirpath, _dirs, filenames in os.walk(root, followlinks=False):
        for name in filenames:
            p = Path(dirpath) / name
            if stat.S_ISREG(os.lstat(p).st_mode):
                out.append(p)
    return out


def files_containing(root: Path, needles: list[str]) -> dict[str, list[str]]:
    """{needle: [files under root whose bytes contain it]} (JSON-escaped forms count too)."""
    hits: dict[str, list[str]] = {}
    for p in regular_files(root):
        data = p.read_bytes()
        for n in needles:
            forms = {n.encode(), json.dumps(n)[1:-1].encode(), n.replace("&", "&amp;").encode()}
            if any(f in data for f in forms):
                hits.setdefault(n, []).append(str(p.relative_to(root)))
    return hits


def xml_ok(path: Path) -> str | None:
    """None when `path` parses as XML, else the parser's complaint."""
    try:
        ET.parse(path)
    except ET.ParseError as exc:
        return str(exc)
    return None


def png_bytes(width: int, height: int, rgb: tuple[int, int, int] = (255, 255, 255)) -> bytes:
    """A plain PNG of one colour (stdlib only)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def copy_run(run_dir: Path, dst: Path) -> Path:
    shutil.copytree(run_dir, dst, symlinks=True)
    return dst


SRC = ROOT / "src"
