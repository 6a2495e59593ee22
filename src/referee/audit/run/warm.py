"""Imported by a process pool's forkserver: the audit's modules, and the RE2 side of every pattern they made.

Each worker forks from the forkserver, so it starts with them made instead of making them itself on its
first long text (some tens of milliseconds a worker).
"""

from __future__ import annotations

import referee.audit.claim.reader  # noqa: F401  (the claim cues)
import referee.audit.extract.rules  # noqa: F401  (the rules' patterns, the atom kinds)
from referee.core.prefilter import make_all

MADE = make_all()
