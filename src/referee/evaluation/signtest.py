"""Exact two-sided sign test (binomial, p = 1/2) and the discordant-pair counts it runs on."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import comb


def binom_cdf_half(k: int, n: int) -> Fraction:
    """P(X <= k) for X ~ Binomial(n, 1/2), exactly.

    >>> binom_cdf_half(1, 10)
    Fraction(11, 1024)
    """
    if k < 0:
        return Fraction(0)
    k = min(k, n)
    return Fraction(sum(comb(n, i) for i in range(k + 1)), 2 ** n)


def sign_test(a: int, b: int) -> float | None:
    """Exact two-sided sign test of `a` versus `b` discordant pairs; None when there are none (n/a).

    p = min(1, 2 * P(X <= min(a, b))) with X ~ Binomial(a + b, 1/2), the same as
    scipy.stats.binomtest(a, a + b, 0.5).pvalue.

    >>> sign_test(9, 1)
    0.021484375
    >>> sign_test(2, 8), sign_test(5, 5), sign_test(0, 0) is None
    (0.109375, 1.0, True)
    """
    if a < 0 or b < 0:
        raise ValueError("counts must be non-negative")
    n = a + b
    if n == 0:
        return None
    p = 2 * binom_cdf_half(min(a, b), n)
    return float(min(Fraction(1), p))


@dataclass(frozen=True)
class PairedFlips:
    """Discordant pairs between two conditions on the same records, and their sign test.

    `harmful`: records the first condition got right and the second got wrong; `recovery`: the reverse.

    >>> PairedFlips(harmful=79, recovery=2).p_value < 1e-18
    True
    """

    harmful: int
    recovery: int

    @property
    def discordant(self) -> int:
        return self.harmful + self.recovery

    @property
    def p_value(self) -> float | None:
        return sign_test(self.harmful, self.recovery)
