"""The CLI's stop signals: SIGTERM and SIGHUP end a command as Ctrl-C does, and one ignored at start stays so."""

from __future__ import annotations

import os
import signal
import time

import pytest

from referee.cli.main import Stopped, main, stop_signals


def test_sigterm_inside_a_command_is_a_stop_and_the_old_handlers_come_back():
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    with pytest.raises(Stopped) as got:
        with stop_signals():
            os.kill(os.getpid(), signal.SIGTERM)  # the handler runs in this thread, before the next line
            raise AssertionError("SIGTERM did not stop the block")
    assert got.value.signame == "SIGTERM" and isinstance(got.value, KeyboardInterrupt)
    assert {sig: signal.getsignal(sig) for sig in before} == before


def test_a_signal_ignored_at_start_stays_ignored_as_nohup_asks():
    old = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with stop_signals():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
            os.kill(os.getpid(), signal.SIGHUP)  # ignored: nothing is raised
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, old)


def test_a_command_stopped_by_sigterm_says_so_and_exits_130(tmp_path, capsys, monkeypatch):
    import referee.core.executors

    def stopped(*a, **k):
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM did not stop the command")

    monkeypatch.setattr(referee.core.executors, "check_options", stopped)  # the audit's first step, here a stop

    def unhandled(signum, frame):  # what runs if main() installs nothing: a failure, not a killed test process
        raise RuntimeError("main() left SIGTERM to its old handler")

    old = signal.signal(signal.SIGTERM, unhandled)
    (tmp_path / "t.jsonl").write_text('{"run_id": "a", "task": "t", "steps": []}\n', encoding="utf-8")
    try:
        rc = main(["audit", str(tmp_path / "t.jsonl"), "--out", str(tmp_path / "o.jsonl"), "--no-progress"])
    finally:
        signal.signal(signal.SIGTERM, old)
    assert rc == 130 and "referee: interrupted (SIGTERM)" in capsys.readouterr().err


def test_a_stop_dropped_by_a_gc_callback_is_raised_again_where_it_stops_the_block():
    import gc

    # Python drops what a gc callback raises ("Exception ignored"): a SIGTERM handled there must come again
    sent: list[str] = []

    def on_gc(phase, info):
        if phase == "start" and not sent:
            sent.append(phase)
            os.kill(os.getpid(), signal.SIGTERM)  # handled here, inside the callback

    gc.callbacks.append(on_gc)
    try:
        with pytest.raises(Stopped) as got:
            with stop_signals():
                gc.collect()
                deadline = time.monotonic() + 5
                while time.monotonic() < deadline:  # the command's own code: where the signal lands again
                    pass
                raise AssertionError("the SIGTERM handled in a gc callback was lost")
    finally:
        gc.callbacks.remove(on_gc)
    assert sent and got.value.signame == "SIGTERM"



def test_a_dropped_stop_is_not_sent_again_once_the_block_has_ended():
    import sys
    from types import SimpleNamespace

    # a command that ends before its dropped stop comes again ends as it ended: a signal sent after the old
    # handlers are back would kill the process (exit -15) instead
    late: list[int] = []
    old = signal.signal(signal.SIGTERM, lambda signum, frame: late.append(signum))
    try:
        with stop_signals():
            # what Python does with a Stopped raised in a gc callback: hands it to the unraisable hook, and drops it
            stop = Stopped("SIGTERM")
            sys.unraisablehook(SimpleNamespace(exc_type=Stopped, exc_value=stop, exc_traceback=None,
                                               err_msg="Exception ignored in", object=None))
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:
            pass
    finally:
        signal.signal(signal.SIGTERM, old)
    assert late == [], "the stop was sent again after the block had ended"
