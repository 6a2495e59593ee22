"""A plan's verdicts over its last complete runs, and what they say: new failures, fixes, flips, slowdowns.

Pure data and pure functions: `runner.history` reads the run directories into `RunColumn`s, the
renderers (`report.history_view`, `report.history_html`) show a `History`. Rules, in one place:

- *new failure*: PASS in the run before the newest, not PASS (FAIL, ERROR, SKIPPED, FLAKY) in the newest;
  *fixed*: the other way round. Only steps both runs performed count.
- *flips* (flaky across runs): the step's verdict changed more than once over the window (FLIPS), or it
  was FLAKY (failed, then passed on a retry) in any run of it.
- *slower*: the step took more than SLOWER times the median of its earlier durations in the window, and
  at least MIN_GROWTH_S seconds more (a step of 0.1 s that took 0.3 s is noise, not a trend).
- *build failures*: runs whose `app.build` failed (nothing was started) are skipped runs, named as build
  failures: never a column of N step failures, never a new failure of each step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median
from typing import Any, Mapping, Sequence

__all__ = ["BUILD_FAILED", "FLIPS", "MIN_GROWTH_S", "SLOWER", "History", "RunColumn", "Skipped", "Trend", "analyse",
           "new_and_fixed"]

FLIPS = 2  # verdict changes in the window from which a step is said to flip
SLOWER = 2.0  # times its median
MIN_GROWTH_S = 0.5
BUILD_FAILED = "the build failed"  # how a run stopped by a failed `app.build` says so (runner.build.build_failure)


@dataclass(frozen=True)
class RunColumn:
    """One complete run: its folder name (UTC stamp), and each step it performed with its verdict and duration."""

    name: str
    verdicts: Mapping[str, str]
    durations: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Skipped:
    """A run left out of the comparison, and why (`runner.history.incomplete_reason`)."""

    name: str
    why: str

    @property
    def build_failed(self) -> bool:
        """The run stopped because its `app.build` failed.

        >>> Skipped("r", "stopped early: the build failed (exit 2)").build_failed
        True
        >>> Skipped("r", "interrupted").build_failed
        False
        """
        return BUILD_FAILED in self.why


@dataclass(frozen=True)
class Trend:
    """A step that took longer in the newest run than its median before."""

    step: str
    now_s: float
    median_s: float


@dataclass(frozen=True)
class History:
    """Steps as rows, complete runs as columns (oldest first), and what the window says."""

    plan: str
    runs: tuple[RunColumn, ...]
    skipped: tuple[Skipped, ...] = ()
    steps: tuple[str, ...] = ()
    new_failures: tuple[str, ...] = ()
    fixed: tuple[str, ...] = ()
    flips: Mapping[str, str] = field(default_factory=dict)  # step -> why ("PASS FAIL PASS: 2 changes")
    slower: tuple[Trend, ...] = ()

    def row(self, step: str) -> list[str | None]:
        """The step's verdict in each run, oldest first (None: that run did not have or perform it)."""
        return [r.verdicts.get(step) for r in self.runs]

    @property
    def build_failures(self) -> tuple[Skipped, ...]:
        """The skipped runs whose build failed, oldest first."""
        return tuple(s for s in self.skipped if s.build_failed)

    def to_json(self) -> dict[str, Any]:
        """The history as `referee history --json` prints it."""
        new, fixed, slow = set(self.new_failures), set(self.fixed), {t.step: t for t in self.slower}
        return {
            "plan": self.plan,
            "runs": [r.name for r in self.runs],
            "skipped": [{"run": s.name, "why": s.why, "build_failed": s.build_failed} for s in self.skipped],
            "build_failures": [{"run": s.name, "why": s.why} for s in self.build_failures],
            "steps": [{"id": s, "verdicts": self.row(s),
                       "durations_s": [r.durations.get(s) for r in self.runs],
                       "new_failure": s in new, "fixed": s in fixed, "flips": self.flips.get(s),
                       "slower": ({"now_s": slow[s].now_s, "median_s": slow[s].median_s} if s in slow else None)}
                      for s in self.steps],
            "new_failures": list(self.new_failures),
            "fixed": list(self.fixed),
            "flaky": list(self.flips),
            "slower": [t.step for t in self.slower],
        }


def new_and_fixed(then: Mapping[str, str], now: Mapping[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Steps PASS in `then` and not PASS in `now` (new failures), and the other way round (fixed), in `now`'s order.

    >>> new_and_fixed({"a": "PASS", "b": "FAIL", "c": "PASS"}, {"a": "FLAKY", "b": "PASS", "d": "FAIL"})
    (('a',), ('b',))
    """
    new = tuple(s for s, v in now.items() if s in then and then[s] == "PASS" and v != "PASS")
    fixed = tuple(s for s, v in now.items() if s in then and then[s] != "PASS" and v == "PASS")
    return new, fixed


def _flips(verdicts: Sequence[str | None]) -> str | None:
    """Why a step flips across runs, or None.

    >>> _flips(["PASS", "FAIL", None, "PASS", "FAIL"])
    'PASS FAIL - PASS FAIL: 3 changes'
    >>> _flips(["PASS", "FLAKY", "PASS"]), _flips(["PASS", "FAIL", "FAIL"])
    ('PASS FLAKY PASS: FLAKY in 1 run', None)
    """
    seen = [v for v in verdicts if v is not None]
    changes = sum(1 for a, b in zip(seen, seen[1:]) if a != b)
    flaky = seen.count("FLAKY")
    shown = " ".join(v or "-" for v in verdicts)
    if flaky:
        return f"{shown}: FLAKY in {flaky} run{'s' if flaky != 1 else ''}"
    if changes >= FLIPS:
        return f"{shown}: {changes} changes"
    return None


def _trend(step: str, durations: Sequence[float | None]) -> Trend | None:
    """The newest duration against the median of the earlier ones (at least two), or None.

    >>> _trend("s", [0.2, 0.3, 0.25, 1.4])
    Trend(step='s', now_s=1.4, median_s=0.25)
    >>> _trend("s", [0.1, 0.1, 0.35]) is None, _trend("s", [1.0, 1.5]) is None  # under 0.5 s more; one earlier
    (True, True)
    """
    if not durations or durations[-1] is None:
        return None
    earlier = [d for d in durations[:-1] if d is not None]
    if len(earlier) < 2:
        return None
    now, mid = durations[-1], median(earlier)
    if now > SLOWER * mid and now - mid >= MIN_GROWTH_S:
        return Trend(step, round(now, 3), round(mid, 3))
    return None


def analyse(plan: str, runs: Sequence[RunColumn], skipped: Sequence[Skipped] = ()) -> History:
    """The history of `runs` (complete runs, oldest first): steps in the newest run's order, then any others."""
    steps: dict[str, None] = {}
    for r in reversed(runs):
        steps.update(dict.fromkeys(r.verdicts))
    new: tuple[str, ...] = ()
    fixed: tuple[str, ...] = ()
    if len(runs) >= 2:
        new, fixed = new_and_fixed(runs[-2].verdicts, runs[-1].verdicts)
    flips = {s: why for s in steps if (why := _flips([r.verdicts.get(s) for r in runs])) is not None}
    slower = tuple(t for s in steps if (t := _trend(s, [r.durations.get(s) for r in runs])) is not None)
    return History(plan, tuple(runs), tuple(skipped), tuple(steps), new, fixed, flips, slower)
