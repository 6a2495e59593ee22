"""The write lock on an output file: a refused process names the holder even when it asked in the moment between
the holder taking the lock and writing its name, and takes the lock when the holder let go in that moment."""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from pathlib import Path

import pytest

from referee.core.lockfile import NAME_WAIT_S, exclusive, lock_path
from referee.errors import BusyError


def _held_without_name(out: Path) -> int:
    """Take the lock of `out` as a holder that has not written its name yet (the first moment of every holder)."""
    lock = lock_path(out)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def test_a_name_written_a_moment_after_the_lock_is_named(tmp_path):
    out = tmp_path / "audit.jsonl"
    fd = _held_without_name(out)
    info = {"by": "referee audit", "pid": 4242, "host": os.uname().nodename, "since": "2026-12-01T21:00:00+0000"}
    timer = threading.Timer(0.1, lambda: os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0))
    timer.start()
    try:
        with pytest.raises(BusyError) as got:
            with exclusive(out):
                pass
    finally:
        timer.join()
        os.close(fd)
    assert "(referee audit, pid 4242, since 2026-12-01T21:00:00+0000)" in str(got.value)


def test_a_lock_let_go_a_moment_later_is_taken(tmp_path):
    out = tmp_path / "audit.jsonl"
    fd = _held_without_name(out)
    timer = threading.Timer(0.1, os.close, (fd,))  # the holder was finishing: its name was already blanked
    timer.start()
    try:
        with exclusive(out, by="second"):
            assert b'"by": "second"' in lock_path(out).read_bytes()
    finally:
        timer.join()


def test_a_holder_that_never_names_itself_is_refused_without_a_name_after_the_wait(tmp_path):
    out = tmp_path / "audit.jsonl"
    fd = _held_without_name(out)
    try:
        t0 = time.monotonic()
        with pytest.raises(BusyError) as got:
            with exclusive(out):
                pass
        waited = time.monotonic() - t0
    finally:
        os.close(fd)
    assert "is being written by another process;" in str(got.value)
    assert NAME_WAIT_S <= waited < NAME_WAIT_S + 5
