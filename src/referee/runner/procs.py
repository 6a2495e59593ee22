"""Child processes of the runner (the app, the agent): started in their own group, stopped as a group."""

from __future__ import annotations

import os
import signal
import subprocess


def stop_group(proc: subprocess.Popen, grace_s: float = 3.0) -> None:
    """SIGTERM the process group of `proc`, then SIGKILL whatever is left after `grace_s`.

    The runner starts apps and agents with `start_new_session=True`, so their children go too.

    >>> p = subprocess.Popen(["sleep", "30"], start_new_session=True); stop_group(p); p.poll() is not None
    True
    """
    if proc.poll() is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=grace_s)
            return
        except subprocess.TimeoutExpired:
            continue
