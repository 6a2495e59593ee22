"""Acceptance: SIGINT/SIGTERM/SIGHUP to referee audit alone stop it (exit 130, workers too); it resumes to serial."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from importlib.util import find_spec
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.conftest import base_cli_env, run_cli  # noqa: E402
from tests.security.sec_helpers import procs_with, wait_gone  # noqa: E402
from tests.support.scale_work import write_corpus  # noqa: E402
from tests.support.signals import default_stop_signals  # noqa: E402

N = 400  # traces; with --chunk-size 10 an audit of them takes a second or more on 2 cores
CHUNK = ["--chunk-size", "10"]
MARK_VAR = "REFEREE_STOP_ACCEPTANCE_MARK"  # names this test's processes (and their workers) in /proc/PID/environ


def _cmd(traces: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "referee.cli.main", "audit", str(traces), "--out", str(out),
            "--no-progress", "--show", "none", *extra]


def _env(mark: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(SRC))
    env[MARK_VAR] = mark
    env.pop("REFEREE_DEBUG", None)
    return env


def _lines(path: Path) -> int:
    try:
        with open(path, "rb") as fh:
            return fh.read().count(b"\n")
    except FileNotFoundError:
        return 0


def _marked_pids(mark: str) -> list[int]:
    """Live processes whose environment carries this test's mark (the referee process, its pool, its forkserver,
    a Dask cluster's processes): processes of other tests never match."""
    return procs_with(f"{MARK_VAR}={mark}", field="environ")


def _pool_up(mark: str) -> bool:
    """The forkserver the pool's workers start from and at least two workers forked from it are alive."""
    n = 0
    for pid in _marked_pids(mark):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                n += b"multiprocessing.forkserver" in fh.read()
        except OSError:
            pass
    return n >= 3


def _no_leftovers(mark: str, grace: float = 5.0) -> list[int]:
    return wait_gone(f"{MARK_VAR}={mark}", grace, field="environ")


def _describe(pids: list[int]) -> str:
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace")[:200]
            out.append(f"{pid}: {cmdline}")
        except OSError:
            out.append(f"{pid}: (gone)")
    return "\n".join(out)


def _cleanup(proc: subprocess.Popen, mark: str) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in _marked_pids(mark):  # only ever processes this test started (they carry its mark)
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        proc.communicate(timeout=10)
    except Exception:
        pass


def _wait_for_records(proc: subprocess.Popen, out: Path, at_least: int, timeout: float, *, mark: str = "",
                      helpers: int = 0, pool: bool = False) -> int:
    """Polls OUT's newline count until it reaches `at_least` (and, with `helpers`, until that many other processes
    of this test, the pool's workers or the cluster's, are alive; with `pool`, until the pool's workers are up)
    while the audit still runs; returns the count."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            so, se = proc.communicate()
            pytest.fail(f"referee exited ({proc.returncode}) before {at_least} records were written "
                        f"({_lines(out)} there)\nstdout:\n{so}\nstderr:\n{se}")
        k = _lines(out)
        if (k >= at_least and (not helpers or len([p for p in _marked_pids(mark) if p != proc.pid]) >= helpers)
                and (not pool or _pool_up(mark))):
            return k
        time.sleep(0.02)  # each look scans /proc: a tighter loop takes the cores the audit needs
    pytest.fail(f"only {_lines(out)} records after {timeout} s; processes of this test:\n"
                f"{_describe(_marked_pids(mark)) if mark else '?'}")


def _check_complete_records(out: Path) -> list[dict]:
    data = out.read_bytes()
    assert data.endswith(b"\n"), "the last record written before the stop is cut"
    records = [json.loads(line) for line in data.decode("utf-8").splitlines()]
    for rec in records:
        assert isinstance(rec, dict) and rec.get("run_id"), rec
    assert len({r["run_id"] for r in records}) == len(records), "a run_id written twice before the stop"
    return records


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, bytes]:
    """The input and the file a `--workers 1` audit of it writes."""
    base = tmp_path_factory.mktemp("stop_signals_serial")
    traces = write_corpus(base / "t.jsonl", N, steps=16)
    out = base / "serial.jsonl"
    rc, _, err = run_cli(_cmd(traces, out, "--workers", "1", *CHUNK)[3:], env=base_cli_env(), timeout=180)
    assert rc == 0, err
    serial = out.read_bytes()
    assert serial.count(b"\n") == N
    return traces, serial


def _stop_and_resume(tmp_path: Path, corpus, sig: signal.Signals, expect_line: str, extra: list[str], *,
                     resume: bool = True, first: int = 20, helpers: int = 0, pool: bool = False, wait: float = 60.0,
                     stop_timeout: float = 30.0) -> None:
    traces, serial = corpus
    out = tmp_path / "audit.jsonl"
    mark = uuid.uuid4().hex
    cmd = _cmd(traces, out, *extra)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(mark),
                            start_new_session=True, preexec_fn=default_stop_signals)
    try:
        seen = _wait_for_records(proc, out, first, wait, mark=mark, helpers=helpers, pool=pool)
        before = len(_marked_pids(mark))
        assert proc.poll() is None
        assert seen < N, "the audit had finished before the signal could land mid-audit"
        os.kill(proc.pid, sig)  # the process alone, not its group
        t0 = time.monotonic()
        try:
            so, se = proc.communicate(timeout=stop_timeout)
        except subprocess.TimeoutExpired:
            alive = proc.poll() is None
            pytest.fail(f"{sig.name}: communicate() did not return within {stop_timeout} s (referee itself "
                        f"{'still running' if alive else 'exited'}; processes of this test still alive:\n"
                        f"{_describe(_marked_pids(mark))})")
        took = time.monotonic() - t0
        left = _no_leftovers(mark)
        stopped_at = _lines(out)
        assert proc.returncode == 130, f"exit {proc.returncode}\nstdout:\n{so}\nstderr:\n{se}"
        assert expect_line in se.splitlines(), f"no line {expect_line!r} in stderr:\n{se}"
        assert not left, f"processes outlived the stopped audit:\n{_describe(left)}"
        assert 0 < stopped_at < N, f"{stopped_at} records at the stop: the audit was not stopped mid-way"
        records = _check_complete_records(out)
        assert len(records) == stopped_at
        print(f"{sig.name} {extra}: stopped at {stopped_at}/{N} records, {before} processes "
              f"before the signal, communicate returned after {took:.2f} s")
    finally:
        _cleanup(proc, mark)

    if not resume:
        return
    # the resume is no process signalled: it runs in this one
    rc2, so2, se2 = run_cli(cmd[3:], env=base_cli_env())
    assert rc2 == 0, f"resume exit {rc2}\nstdout:\n{so2}\nstderr:\n{se2}"
    closing = [line for line in so2.splitlines() if "already there" in line]
    assert closing and f"; {stopped_at} already there" in closing[-1], so2
    assert out.read_bytes() == serial, "the resumed file is not byte for byte the --workers 1 run's"


def test_sigterm_pool_stops_and_resumes_to_serial(tmp_path, corpus):
    _stop_and_resume(tmp_path, corpus, signal.SIGTERM, "referee: interrupted (SIGTERM)",
                     ["--workers", "2", *CHUNK], pool=True)


def test_sighup_pool_stops_and_resumes_to_serial(tmp_path, corpus):
    _stop_and_resume(tmp_path, corpus, signal.SIGHUP, "referee: interrupted (SIGHUP)",
                     ["--workers", "2", *CHUNK], pool=True)


def test_sigterm_one_worker_stops_and_resumes_to_serial(tmp_path, corpus):
    _stop_and_resume(tmp_path, corpus, signal.SIGTERM, "referee: interrupted (SIGTERM)",
                     ["--workers", "1", *CHUNK])


def test_sigint_to_process_alone_pool_stops_and_resumes_to_serial(tmp_path, corpus):
    _stop_and_resume(tmp_path, corpus, signal.SIGINT, "referee: interrupted", ["--workers", "2", *CHUNK],
                     pool=True)


def test_sighup_ignored_at_start_stays_ignored(tmp_path, corpus):
    traces, serial = corpus
    out = tmp_path / "audit.jsonl"
    mark = uuid.uuid4().hex
    proc = subprocess.Popen(_cmd(traces, out, "--workers", "2", *CHUNK), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(mark), start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    try:
        seen = _wait_for_records(proc, out, 20, 60.0, mark=mark, pool=True)
        assert proc.poll() is None and seen < N, "the audit had finished before SIGHUP could land mid-audit"
        os.kill(proc.pid, signal.SIGHUP)
        so, se = proc.communicate(timeout=120)
        left = _no_leftovers(mark)
    finally:
        _cleanup(proc, mark)
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{so}\nstderr:\n{se}"
    assert "interrupted" not in se, se
    assert f"wrote {N} records" in so, so
    assert not left, f"processes outlived the audit:\n{_describe(left)}"
    assert out.read_bytes() == serial, "the file is not byte for byte the --workers 1 run's"


@pytest.mark.skipif(find_spec("distributed") is None, reason="dask.distributed is not installed")
def test_sigterm_dask_local_cluster_stops(tmp_path, corpus):
    _stop_and_resume(tmp_path, corpus, signal.SIGTERM, "referee: interrupted (SIGTERM)",
                     ["--executor", "dask", "--workers", "2", *CHUNK], resume=False, first=1, helpers=2, wait=90.0,
                     stop_timeout=40.0)
