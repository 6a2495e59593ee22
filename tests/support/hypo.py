"""The suite's Hypothesis profiles: `ci` (the default: each property a tenth of its examples) and `thorough`.

`REFEREE_HYPOTHESIS=thorough make test` runs every property with the examples its test names (3,000 for the
fast paths), as before issue 31; `ci` keeps a tenth of them, at least 50, so the suite ends in minutes.
Neither has a deadline: a loaded machine makes any example slow. A test names its full count through
`examples(N)`, which the profile scales:

    @settings(max_examples=examples(3000), deadline=None)
"""

from __future__ import annotations

import os

from hypothesis import settings

PROFILES = ("ci", "thorough")
CI_SHARE, CI_FLOOR = 10, 50

settings.register_profile("ci", deadline=None, max_examples=100)
settings.register_profile("thorough", deadline=None)


def profile() -> str:
    """The profile REFEREE_HYPOTHESIS names (`ci` when unset or unknown).

    >>> profile() in PROFILES
    True
    """
    name = os.environ.get("REFEREE_HYPOTHESIS", "ci")
    return name if name in PROFILES else "ci"


def load() -> str:
    """Load the profile for this run (tests/conftest.py does, once); its name."""
    name = profile()
    settings.load_profile(name)
    return name


def examples(n: int) -> int:
    """How many of a property's `n` examples this run tries: all of them under `thorough`.

    >>> examples(3000) in (300, 3000)
    True
    >>> examples(20) <= 50
    True
    """
    if profile() == "thorough":
        return n
    return min(n, max(n // CI_SHARE, CI_FLOOR))
