"""Shared fixtures for the whole suite: real servers on loopback, started and stopped by the suite.

Fixtures (keep this API small; other test writers depend on it):

- ``free_port()`` (function, also importable as ``tests.conftest.free_port``): a free TCP port on 127.0.0.1.
- ``pg_url`` (session): a real PostgreSQL server started from /usr/lib/postgresql/*/bin in a temp
  dir, listening on 127.0.0.1:<free port>; yields ``postgresql+psycopg://postgres@127.0.0.1:PORT/postgres``
  (trust auth, no password). Skips, loudly, only when no PostgreSQL binaries are installed.
- ``moto_endpoint`` (session): moto's server on 127.0.0.1:<free port>; yields ``http://127.0.0.1:PORT``.
  Use credentials "testing" and region us-east-1 (``cli_env`` sets them).
- ``cli_env`` (function): the environment the CLI runs with (os.environ + dummy AWS credentials,
  REFEREE_DEBUG removed). A dict you may modify in a test before calling ``referee_cli``.
- ``referee_cli`` (function): ``referee_cli(*args, cwd=None, env=None, timeout=120, input=None, process=False)``
  runs ``referee ARGS`` and returns ``(rc, stdout, stderr)``: in this process (``tests.support.incli``: the
  environment, folder and file descriptors a child would have), or with ``process=True`` (a test about
  signals, process groups, the runner's own process, `-j` children) as ``[sys.executable, "-m",
  "referee.cli.main", *args]``, whose whole process group is killed on timeout (the test fails).
- ``app_script``: absolute path of tests/support/app.py; ``agents_dir``: tests/support/agents.
- ``test_app`` (function): starts tests/support/app.py directly (not through the runner) and
  yields ``TestApp(url, db, port, proc)``.
- ``scratch_cwd`` (session, autouse): the tests' working directory is a scratch folder (see its docstring).
- ``signing_key`` (session, autouse): the suite's own key for sealing run directories (never the
  user's ~/.config/referee/key): REFEREE_KEY_FILE points at it in os.environ and so in ``cli_env``.
  ``tests.support.sealing.reseal(run_dir)`` re-signs a run directory a test edited on purpose.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # so `tests.support` imports however pytest was started
    sys.path.insert(0, str(ROOT))

from tests.support import hypo  # noqa: E402
from tests.support.incli import process_needed, run_in_process, text_of  # noqa: E402

HYPOTHESIS_PROFILE = hypo.load()  # `ci` unless REFEREE_HYPOTHESIS=thorough (tests/support/hypo.py)

SUPPORT = ROOT / "tests" / "support"
APP_SCRIPT = SUPPORT / "app.py"
AGENTS_DIR = SUPPORT / "agents"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, timeout: float = 30.0, proc: subprocess.Popen | None = None) -> None:
    """Block until 127.0.0.1:port accepts a connection (or fail after `timeout`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout}s")


def wait_http_ok(url: str, timeout: float = 30.0, interval: float = 0.05) -> None:
    """Poll `url` until it answers HTTP 200 (servers that listen before they are ready)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            if time.monotonic() > deadline:
                raise
        time.sleep(interval)


def stop_process(proc: subprocess.Popen) -> None:
    """Terminate a server the suite started, killing it if it lingers."""
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


@pytest.fixture(scope="session", autouse=True)
def signing_key(tmp_path_factory):
    """The suite's signing key (made on first use by referee.rundir.keys, mode 0600 in a 0700 folder)."""
    folder = tmp_path_factory.mktemp("signing-key")
    folder.chmod(0o700)
    path = folder / "key"
    old = os.environ.get("REFEREE_KEY_FILE")
    os.environ["REFEREE_KEY_FILE"] = str(path)
    try:
        yield path
    finally:
        if old is None:
            os.environ.pop("REFEREE_KEY_FILE", None)
        else:
            os.environ["REFEREE_KEY_FILE"] = old


@pytest.fixture(scope="session", autouse=True)
def scratch_cwd(tmp_path_factory):
    """Every test starts in a scratch folder, not the repository: a `referee run` without `cwd` makes its working
    directory the agent's workspace, which the runner walks after every step to take setuid bits off
    (runner/isolation.py `strip`); the repository's .venv alone is ~40,000 entries, about a second a step."""
    old = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("cwd"))
    try:
        yield
    finally:
        os.chdir(old)


@pytest.fixture(name="free_port")
def free_port_fixture():
    return free_port


@pytest.fixture(scope="session")
def app_script() -> Path:
    return APP_SCRIPT


@pytest.fixture(scope="session")
def agents_dir() -> Path:
    return AGENTS_DIR


# ---------------------------------------------------------------- PostgreSQL


def _pg_bindir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: [int(x) if x.isdigit() else x for x in p.split("/")])
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@pytest.fixture(scope="session")
def pg_url():
    """A real PostgreSQL server for the session; yields a SQLAlchemy URL (psycopg 3 driver)."""
    bindir = _pg_bindir()
    if bindir is None or not (bindir / "pg_ctl").exists():
        msg = ("!!! PostgreSQL IS NOT INSTALLED: no initdb/pg_ctl under /usr/lib/postgresql/*/bin or on PATH; "
               "the PostgreSQL tests are SKIPPED. Install it with: apt-get install postgresql !!!")
        warnings.warn(msg, stacklevel=2)
        print("\n" + msg, file=sys.stderr)
        pytest.skip(msg)

    base = Path(tempfile.mkdtemp(prefix="referee-pg-"))
    data = base / "data"
    prefix: list[str] = []
    if os.geteuid() == 0:  # initdb refuses to run as root: run the server as `postgres`
        import pwd

        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            pytest.fail("running as root and there is no 'postgres' user to run PostgreSQL as")
        os.chown(base, pw.pw_uid, pw.pw_gid)
        runuser = shutil.which("runuser")
        prefix = [runuser, "-u", "postgres", "--"] if runuser else ["su", "postgres", "-s", "/bin/sh", "-c"]
    os.chmod(base, 0o700)

    def as_pg(cmd: list[str], **kw) -> subprocess.CompletedProcess:
        if prefix and prefix[0] == "su":
            import shlex

            full = prefix + [" ".join(shlex.quote(c) for c in cmd)]
        else:
            full = prefix + cmd
        return subprocess.run(full, capture_output=True, text=True, **kw)

    r = as_pg([str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8",
               "--locale=C", "--no-sync"], timeout=120)
    if r.returncode != 0:
        shutil.rmtree(base, ignore_errors=True)
        pytest.fail(f"initdb failed: {r.stderr or r.stdout}")
    port = free_port()
    opts = f"-h 127.0.0.1 -p {port} -k {base} -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    r = as_pg([str(bindir / "pg_ctl"), "-D", str(data), "-l", str(base / "server.log"), "-o", opts, "-w", "-t", "60",
               "start"], timeout=90)
    if r.returncode != 0:
        log = (base / "server.log").read_text(errors="replace") if (base / "server.log").exists() else ""
        shutil.rmtree(base, ignore_errors=True)
        pytest.fail(f"pg_ctl start failed: {r.stderr or r.stdout}\n{log}")
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        as_pg([str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "-t", "30", "stop"], timeout=60)
        shutil.rmtree(base, ignore_errors=True)


# ---------------------------------------------------------------- moto DynamoDB


@pytest.fixture(scope="session")
def moto_endpoint():
    """moto's server (DynamoDB and the rest) on loopback; yields its endpoint URL."""
    port = free_port()
    log = tempfile.TemporaryFile()
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1"}
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        try:
            wait_for_port(port, timeout=60, proc=proc)
        except (RuntimeError, TimeoutError) as exc:
            log.seek(0)
            pytest.fail(f"moto server did not start: {exc}\n{log.read().decode(errors='replace')[-2000:]}")
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(proc)
        log.close()


# ---------------------------------------------------------------- the CLI


def base_cli_env() -> dict:
    """A fresh copy of the environment the CLI runs with (see `cli_env`)."""
    env = dict(os.environ)
    env.pop("REFEREE_DEBUG", None)
    env.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_DEFAULT_REGION": "us-east-1", "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"})
    pp = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(ROOT / "src") + (os.pathsep + pp if pp else "")
    return env


@pytest.fixture
def cli_env() -> dict:
    return base_cli_env()


# REFEREE_TESTS_CLI=process: every CLI call in a child, as before issue 31 (to tell an in-process artefact from a bug)
FORCE_PROCESS = os.environ.get("REFEREE_TESTS_CLI") == "process"


def run_cli(args, *, cwd=None, env=None, timeout: float = 120, input: str | None = None,
            process: bool = False) -> tuple[int, str, str]:
    """Run the referee CLI; returns (rc, stdout, stderr). In this process (tests.support.incli) unless
    `process` is set or `env` needs a child interpreter; a child's whole group is killed on timeout (in this
    process, pytest-timeout stops a command that hangs)."""
    if not (process or FORCE_PROCESS) and process_needed(env) is None:
        rc, out, err = run_in_process(args, cwd=cwd, env=env, input=input)
        return rc, text_of(out), text_of(err)
    cmd = [sys.executable, "-m", "referee.cli.main", *[str(a) for a in args]]
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        pytest.fail(f"referee {' '.join(map(str, args))} did not finish in {timeout}s\nstdout: {out[-3000:]}\n"
                    f"stderr: {err[-3000:]}")
    return proc.returncode, out, err


@pytest.fixture
def referee_cli(cli_env):
    def _run(*args, cwd=None, env=None, timeout: float = 120, input: str | None = None, process: bool = False):
        return run_cli(args, cwd=cwd, env=env if env is not None else cli_env, timeout=timeout, input=input,
                       process=process)

    return _run


# ---------------------------------------------------------------- the test app, started directly


@dataclass
class TestApp:
    __test__ = False  # not a test class
    url: str
    db: Path
    port: int
    proc: subprocess.Popen


@pytest.fixture
def test_app(tmp_path):
    port = free_port()
    db = tmp_path / "app.db"
    proc = subprocess.Popen([sys.executable, str(APP_SCRIPT), "--port", str(port), "--db", str(db)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, timeout=30, proc=proc)
        url = f"http://127.0.0.1:{port}"
        wait_http_ok(url + "/health")
        yield TestApp(url=url, db=db, port=port, proc=proc)
    finally:
        stop_process(proc)
