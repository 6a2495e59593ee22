"""Stop signals handled for the length of a block, by the CLI, `referee run -j N` and each plan's run."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator


@contextmanager
def handling(sigs: Iterable[signal.Signals], handler: Callable[[int, Any], None]) -> Iterator[None]:
    """`handler` for each of `sigs` inside the block, the old handlers back after it. A signal ignored when
    this process started (`nohup`, a background job) stays ignored; off the main thread, where Python
    allows no handler, nothing is installed.

    >>> import os
    >>> def say(signum, frame): raise RuntimeError(signal.Signals(signum).name)
    >>> try:
    ...     with handling([signal.SIGUSR1], say):
    ...         os.kill(os.getpid(), signal.SIGUSR1)
    ... except RuntimeError as exc:
    ...     print(exc)
    SIGUSR1
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {sig: signal.signal(sig, handler) for sig in sigs if signal.getsignal(sig) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for sig, before in old.items():
            signal.signal(sig, before)
