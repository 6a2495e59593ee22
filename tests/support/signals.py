"""A child the test will signal starts with the stop signals at their defaults, whatever the test run inherited.

A test suite started in the background of a script (`make test &`) inherits SIGINT ignored, and under `nohup`
SIGHUP ignored; a child inherits both across exec, and referee keeps a signal ignored at start (as nohup asks),
so a test that sends one would see it ignored. Use as `subprocess.Popen(..., preexec_fn=default_stop_signals)`.
"""

from __future__ import annotations

import signal


def default_stop_signals() -> None:
    """In the child, before exec: SIGINT, SIGHUP and SIGTERM back to their default actions."""
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
