"""The exact two-sided sign test against known binomial values."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import pytest

from referee.evaluation.signtest import PairedFlips, binom_cdf_half, sign_test


@pytest.mark.parametrize("a,b,expected", [
    (9, 1, 22 / 1024),          # 2 * (C(10,0) + C(10,1)) / 2^10
    (1, 9, 22 / 1024),          # symmetric
    (5, 0, 2 / 32),             # 2 * 1/32
    (2, 8, 112 / 1024),         # 2 * (1 + 10 + 45) / 1024 = 0.109375 (scipy.stats.binomtest(2, 10))
    (3, 1, 10 / 16),            # 2 * (1 + 4) / 16
    (5, 5, 1.0),                # 2 * P(X <= 5) > 1 -> capped at 1
    (1, 0, 1.0),                # one discordant pair cannot be significant
    (12, 3, 2 * (1 + 15 + 105 + 455) / 2 ** 15),   # 0.03515625
])
def test_known_values(a, b, expected):
    assert sign_test(a, b) == pytest.approx(expected, rel=1e-12)


def test_no_discordant_pairs_is_undefined():
    assert sign_test(0, 0) is None
    assert PairedFlips(0, 0).p_value is None


def test_large_counts_exact_not_normal_approximation():
    # 79 harmful vs 2 recovery flips: 2 * (1 + 81 + C(81,2)) / 2^81
    expected = float(Fraction(2 * (1 + 81 + comb(81, 2)), 2 ** 81))
    assert sign_test(79, 2) == pytest.approx(expected, rel=1e-12)
    assert PairedFlips(79, 2).discordant == 81


def test_cdf_exact():
    assert binom_cdf_half(0, 3) == Fraction(1, 8)
    assert binom_cdf_half(3, 3) == 1
    assert binom_cdf_half(-1, 3) == 0


def test_negative_counts_rejected():
    with pytest.raises(ValueError):
        sign_test(-1, 2)
