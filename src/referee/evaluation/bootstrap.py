"""Seeded nonparametric bootstrap over cell counts: numpy when present, pure python otherwise.

Every statistic evaluation reports is a function of a few cell counts (for one method: the six
(positive, disposition) cells). Drawing N records with replacement from N records and counting
them per cell gives exactly a multinomial(N, counts/N) draw, so the bootstrap draws the cell
counts directly: the same distribution as resampling record indices, at O(cells) per resample
instead of O(N). Intervals are percentile intervals over the resamples where the statistic is
defined; a statistic that is undefined on the data itself has no interval.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from referee.evaluation.metrics import RATE_METRICS, Confusion, rate_formulas, rates

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0
DEFAULT_LEVEL = 0.95


@dataclass(frozen=True)
class Interval:
    """A percentile bootstrap interval; `undefined` counts resamples where the statistic was 0/0."""

    lo: float | None
    hi: float | None
    undefined: int = 0


@dataclass(frozen=True)
class BootstrapSpec:
    """How to bootstrap: resample count, seed, confidence level, engine ("auto" | "numpy" | "python")."""

    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    level: float = DEFAULT_LEVEL
    engine: str = "auto"

    def resolved_engine(self) -> str:
        """The engine that will run: "numpy" when importable (or asked for), else "python"."""
        if self.engine in ("numpy", "auto"):
            try:
                import numpy  # noqa: F401

                return "numpy"
            except ImportError:
                if self.engine == "numpy":
                    from referee.errors import MissingExtraError

                    raise MissingExtraError("plot", "numpy") from None
        return "python"


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile of sorted values (numpy's default), q in [0, 1].

    >>> percentile([1.0, 2.0, 3.0, 4.0], 0.5), percentile([5.0], 0.975)
    (2.5, 5.0)
    """
    m = len(sorted_values)
    h = (m - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, m - 1)
    return sorted_values[lo] + (h - lo) * (sorted_values[hi] - sorted_values[lo])


def resample_cells(cells: Sequence[int], spec: BootstrapSpec):
    """Draw `spec.resamples` bootstrap replicates of the cell counts: an (R, K) array or a list of lists.

    >>> reps = resample_cells([2, 3], BootstrapSpec(resamples=4, seed=1, engine="python"))
    >>> len(reps), all(sum(r) == 5 for r in reps)
    (4, True)
    """
    n = int(sum(cells))
    k = len(cells)
    if spec.resolved_engine() == "numpy":
        import numpy as np

        gen = np.random.default_rng(spec.seed)
        if n == 0:
            return np.zeros((spec.resamples, k), dtype=np.int64)
        p = np.asarray(cells, dtype=np.float64) / n
        return gen.multinomial(n, p, size=spec.resamples)
    rng = random.Random(spec.seed)
    cum = list(_cumsum(cells))
    out = []
    for _ in range(spec.resamples):
        rep = [0] * k
        if n:
            for j in rng.choices(range(k), cum_weights=cum, k=n):
                rep[j] += 1
        out.append(rep)
    return out


def _cumsum(xs: Sequence[int]):
    total = 0
    for x in xs:
        total += x
        yield total


def _interval(values: list[float], undefined: int, level: float) -> Interval:
    if not values:
        return Interval(None, None, undefined)
    values.sort()
    a = (1.0 - level) / 2.0
    return Interval(percentile(values, a), percentile(values, 1.0 - a), undefined)


def _rates_numpy(reps) -> dict[str, Any]:
    """The rate metrics of every replicate at once (metrics.rate_formulas over arrays): NaN where 0/0."""
    import numpy as np

    r = reps.astype(np.float64)

    def div(a, b):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(b == 0, np.nan, a / np.where(b == 0, 1.0, b))

    def harmonic(precision, recall):
        both = ~(np.isnan(precision) | np.isnan(recall))
        f1 = np.where(both, div(2 * precision * recall, precision + recall), np.nan)
        return np.where(both & np.isnan(f1), 0.0, f1)

    return rate_formulas(tuple(r[:, i] for i in range(6)), div, harmonic)


def bootstrap_rates(c: Confusion, spec: BootstrapSpec = BootstrapSpec()) -> dict[str, Interval]:
    """Percentile intervals for every rate metric of one confusion; same seed, same intervals.

    >>> c = Confusion(neg_pass=40, neg_flag=5, pos_pass=5, pos_flag=10)
    >>> a = bootstrap_rates(c, BootstrapSpec(resamples=200, seed=7))
    >>> a == bootstrap_rates(c, BootstrapSpec(resamples=200, seed=7)), a["recall"].lo < 10 / 15 < a["recall"].hi
    (True, True)
    """
    point = rates(c)
    reps = resample_cells(c.cells(), spec)
    out: dict[str, Interval] = {}
    if spec.resolved_engine() == "numpy":
        import numpy as np

        arrays = _rates_numpy(reps)
        for name in RATE_METRICS:
            arr = arrays[name]
            ok = ~np.isnan(arr)
            n_undefined = int((~ok).sum())
            if point[name] is None:
                out[name] = Interval(None, None, n_undefined)
            else:
                out[name] = _interval([float(x) for x in arr[ok]], n_undefined, spec.level)
        return out
    values: dict[str, list[float]] = {name: [] for name in RATE_METRICS}
    undefined = dict.fromkeys(RATE_METRICS, 0)
    for rep in reps:
        rr = rates(Confusion.from_cells(rep))
        for name in RATE_METRICS:
            value = rr[name]
            if value is None:
                undefined[name] += 1
            else:
                values[name].append(value)
    for name in RATE_METRICS:
        out[name] = (Interval(None, None, undefined[name]) if point[name] is None
                     else _interval(values[name], undefined[name], spec.level))
    return out


def bootstrap_stat(cells: Sequence[int], stat: Callable[[Sequence[int]], float | None],
                   spec: BootstrapSpec = BootstrapSpec()) -> Interval:
    """A percentile interval for any statistic of cell counts (e.g. a paired recall shift).

    >>> shift = lambda c: None if sum(c) == 0 else (c[1] - c[2]) / sum(c)
    >>> iv = bootstrap_stat([10, 8, 1, 11], shift, BootstrapSpec(resamples=300, seed=3))
    >>> iv.lo < 7 / 30 < iv.hi
    True
    """
    if stat(list(cells)) is None:
        return Interval(None, None, spec.resamples)
    values: list[float] = []
    undefined = 0
    for rep in resample_cells(cells, spec):
        v = stat([int(x) for x in rep])
        if v is None:
            undefined += 1
        else:
            values.append(float(v))
    return _interval(values, undefined, spec.level)
