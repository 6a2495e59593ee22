"""A test-only extractor made slow on purpose: the rules extractor, except on a view whose task names SPIN (it spins
on the CPU for ever), BACKTRACK (a regular expression that backtracks exponentially: `re` never returns to
Python meanwhile), SLEEP (it sleeps for ever) or HOG (it grows its memory 8 MiB at a time, up to 1 GiB). Before
it does, it writes its process id to `$REFEREE_TEST_SLOW_PIDS/<word>.<pid>`, so a test can see where it ran and that
the process is gone. It lives under tests/ only: the product has no switch that makes a record slow."""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from referee.audit.extract.rules import RulesExtractor


@dataclass(frozen=True)
class SlowOnPurpose(RulesExtractor):
    """RulesExtractor, but never ending (or ever growing) on a task that names SPIN, BACKTRACK, SLEEP or HOG."""

    pids: str = ""  # the folder the process ids go to

    def extract(self, view, sample: int = 0):
        word = next((w for w in ("SPIN", "BACKTRACK", "SLEEP", "HOG") if w in view.task), None)
        if word is None:
            return super().extract(view, sample)
        if self.pids:
            Path(self.pids, f"{word}.{os.getpid()}").touch()
        if word == "BACKTRACK":
            re.match(r"(a|aa)+$", "a" * 60 + "b")  # Fibonacci(60) paths: far longer than any budget
        held = []
        while True:
            if word == "SLEEP":
                time.sleep(3600)
            elif word == "HOG" and len(held) < 128:
                held.append(b"x" * (8 << 20))  # written, so resident
                time.sleep(0.01)
