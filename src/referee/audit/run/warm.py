"""Imported by a process pool's forkserver: the audit's modules and the patterns they compile at import.

Each worker forks from the forkserver, so it starts with them made instead of making them itself.
"""

from __future__ import annotations

import referee.audit.claim.reader  # noqa: F401  (the claim cues)
import referee.audit.extract.rules  # noqa: F401  (the rules' patterns, the atom kinds)
