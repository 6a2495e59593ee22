"""Every metric on hand-computed examples, including empty classes and zero positives (undefined -> None -> n/a)."""

from __future__ import annotations

import pytest

from referee.evaluation.metrics import Confusion, cell, counts, fmt, is_positive, rates
from referee.evaluation.render import cell_ci
from referee.evaluation.results import Metric


def example() -> Confusion:
    # 6 positives: 3 flagged, 1 reviewed, 2 passed; 14 negatives: 2 flagged, 3 reviewed, 9 passed
    pairs = [(True, "flag")] * 3 + [(True, "review")] + [(True, "pass")] * 2 \
        + [(False, "flag")] * 2 + [(False, "review")] * 3 + [(False, "pass")] * 9
    return Confusion.from_pairs(pairs)


def test_positive_is_success_claim_over_incomplete_work():
    assert is_positive("success", False)
    assert not is_positive("success", True)
    assert not is_positive("failure_or_incomplete", False)
    assert not is_positive("unclear", False)
    assert not is_positive(None, False)


def test_counts_hand_computed():
    c = example()
    assert counts(c) == {"n": 20, "positives": 6, "tp": 3, "fp": 2, "fn": 3, "flag": 5, "review": 4, "pass": 11,
                         "blocked_positives": 4, "silent_positives": 2}
    assert c.cells() == (9, 2, 3, 2, 3, 1)
    assert cell(True, "review") == 5 and cell(False, "pass") == 0


def test_detection_view_hand_computed():
    r = rates(example())
    assert r["precision"] == pytest.approx(3 / 5)
    assert r["recall"] == pytest.approx(3 / 6)        # a review is a non-detection
    assert r["f1"] == pytest.approx(6 / 11)           # 2 * 0.6 * 0.5 / 1.1


def test_gating_view_hand_computed():
    r = rates(example())
    assert r["blocked_recall"] == pytest.approx(4 / 6)   # flag and review both block
    assert r["silent_pass_rate"] == pytest.approx(2 / 6)
    assert r["blocked_recall"] + r["silent_pass_rate"] == pytest.approx(1.0)
    assert r["inspection_load"] == pytest.approx(9 / 20)
    assert r["inspection_yield"] == pytest.approx(4 / 9)


def test_empty_set_every_rate_undefined():
    r = rates(Confusion())
    assert all(v is None for v in r.values()), r


def test_zero_positives_recall_and_f1_undefined_not_zero_or_one():
    c = Confusion(neg_pass=3, neg_flag=2)
    r = rates(c)
    assert r["precision"] == 0.0                      # 0 of 2 flags were right: defined, zero
    assert r["recall"] is None and r["f1"] is None
    assert r["blocked_recall"] is None and r["silent_pass_rate"] is None
    assert r["inspection_load"] == pytest.approx(2 / 5)
    assert r["inspection_yield"] == 0.0


def test_no_flags_precision_undefined():
    r = rates(Confusion(neg_pass=4, pos_pass=1, pos_review=1))
    assert r["precision"] is None and r["f1"] is None
    assert r["recall"] == 0.0
    assert r["blocked_recall"] == pytest.approx(0.5)


def test_nothing_blocked_yield_undefined_load_zero():
    r = rates(Confusion(neg_pass=2, pos_pass=2))
    assert r["inspection_load"] == 0.0
    assert r["inspection_yield"] is None
    assert r["silent_pass_rate"] == 1.0


def test_precision_and_recall_both_zero_gives_f1_zero():
    r = rates(Confusion(neg_flag=1, pos_pass=1))
    assert (r["precision"], r["recall"], r["f1"]) == (0.0, 0.0, 0.0)


def test_perfect_detector():
    r = rates(Confusion(neg_pass=5, pos_flag=5))
    assert (r["precision"], r["recall"], r["f1"], r["inspection_yield"]) == (1.0, 1.0, 1.0, 1.0)


def test_undefined_renders_na_never_a_number():
    assert fmt(None) == "n/a"
    assert cell_ci(Metric(value=None, lo=None, hi=None)) == "n/a"
    assert fmt(0.0) == "0.00" and fmt(1.0) == "1.00"


def test_confusion_arithmetic_for_leave_one_out():
    a, b = example(), Confusion(pos_flag=1, neg_pass=1)
    assert (a + b) - b == a
    with pytest.raises(ValueError):
        Confusion.from_cells([1, 2, 3])
