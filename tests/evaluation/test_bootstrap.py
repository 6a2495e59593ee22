"""The seeded bootstrap: reproducible, honest about undefined resamples, and equal in law to index resampling."""

from __future__ import annotations

import pytest

from referee.evaluation.bootstrap import BootstrapSpec, bootstrap_rates, bootstrap_stat, percentile, resample_cells
from referee.evaluation.metrics import Confusion, rates

C = Confusion(neg_pass=60, neg_flag=8, neg_review=12, pos_pass=6, pos_flag=10, pos_review=4)


@pytest.mark.parametrize("engine", ["numpy", "python"])
def test_same_seed_same_intervals(engine):
    spec = BootstrapSpec(resamples=300, seed=11, engine=engine)
    assert bootstrap_rates(C, spec) == bootstrap_rates(C, spec)


@pytest.mark.parametrize("engine", ["numpy", "python"])
def test_other_seed_other_intervals(engine):
    a = bootstrap_rates(C, BootstrapSpec(resamples=300, seed=1, engine=engine))
    b = bootstrap_rates(C, BootstrapSpec(resamples=300, seed=2, engine=engine))
    assert a != b


def test_intervals_bracket_point_estimates():
    point = rates(C)
    ivs = bootstrap_rates(C, BootstrapSpec(resamples=1000, seed=0))
    for name, iv in ivs.items():
        assert iv.lo <= point[name] <= iv.hi, name
        assert 0.0 <= iv.lo <= iv.hi <= 1.0


def test_undefined_point_has_no_interval():
    ivs = bootstrap_rates(Confusion(neg_pass=10, neg_flag=2), BootstrapSpec(resamples=100))
    assert ivs["recall"].lo is None and ivs["recall"].hi is None
    assert ivs["recall"].undefined == 100       # no resample can contain a positive
    assert ivs["precision"].lo is not None


def test_resamples_where_metric_is_undefined_are_counted_not_scored_as_zero():
    # one positive in twenty: about (19/20)^20 = 36% of resamples hold no positive at all
    c = Confusion(neg_pass=19, pos_flag=1)
    iv = bootstrap_rates(c, BootstrapSpec(resamples=1000, seed=5))["recall"]
    assert 250 < iv.undefined < 470
    assert (iv.lo, iv.hi) == (1.0, 1.0)          # every defined resample found the one positive


def test_each_replicate_keeps_n():
    reps = resample_cells(C.cells(), BootstrapSpec(resamples=50, seed=3))
    assert reps.shape == (50, 6)
    assert set(reps.sum(axis=1).tolist()) == {C.n}


def test_multinomial_draw_matches_index_resampling_in_law():
    """Drawing cell counts from multinomial(N, p) is the same bootstrap as resampling record indices."""
    np = pytest.importorskip("numpy")
    labels = np.repeat(np.arange(6), C.cells())
    rng = np.random.default_rng(123)
    recalls = []
    for _ in range(3000):
        cnt = np.bincount(labels[rng.integers(0, C.n, C.n)], minlength=6)
        recalls.append(cnt[4] / (cnt[3] + cnt[4] + cnt[5]))
    reps = resample_cells(C.cells(), BootstrapSpec(resamples=3000, seed=9))
    multi = reps[:, 4] / reps[:, 3:].sum(axis=1)
    assert float(np.mean(multi)) == pytest.approx(float(np.mean(recalls)), abs=0.01)
    assert float(np.std(multi)) == pytest.approx(float(np.std(recalls)), rel=0.08)


def test_numpy_and_python_engines_agree_closely():
    a = bootstrap_rates(C, BootstrapSpec(resamples=2000, seed=0, engine="numpy"))
    b = bootstrap_rates(C, BootstrapSpec(resamples=2000, seed=0, engine="python"))
    for name in a:
        assert a[name].lo == pytest.approx(b[name].lo, abs=0.04), name
        assert a[name].hi == pytest.approx(b[name].hi, abs=0.04), name


def test_level_narrows_interval():
    wide = bootstrap_rates(C, BootstrapSpec(resamples=1000, level=0.95))["f1"]
    narrow = bootstrap_rates(C, BootstrapSpec(resamples=1000, level=0.5))["f1"]
    assert wide.lo <= narrow.lo <= narrow.hi <= wide.hi


def test_percentile_matches_numpy_linear():
    np = pytest.importorskip("numpy")
    xs = sorted([0.1, 0.9, 0.3, 0.35, 0.5, 0.77, 0.2])
    for q in (0.025, 0.5, 0.975):
        assert percentile(xs, q) == pytest.approx(float(np.percentile(xs, q * 100)))


def test_generic_statistic_interval():
    shift = lambda c: None if sum(c) == 0 else (c[1] - c[2]) / sum(c)  # noqa: E731
    iv = bootstrap_stat([5, 12, 2, 11], shift, BootstrapSpec(resamples=500, seed=1))
    assert iv.lo < 10 / 30 < iv.hi
    assert bootstrap_stat([0, 0, 0, 0], shift).lo is None


def test_ten_thousand_records_give_tight_intervals_around_the_point():
    # speed is measured in benchmarks/bench_eval.py; here: a large sample gives narrow, centred intervals
    big = Confusion(neg_pass=6000, neg_flag=600, neg_review=900, pos_pass=300, pos_flag=1800, pos_review=400)
    out = bootstrap_rates(big, BootstrapSpec(resamples=1000, seed=0))
    assert {"precision", "recall", "f1"} <= set(out)
    for name, iv in out.items():
        assert iv.lo is not None and iv.lo <= iv.hi and iv.hi - iv.lo < 0.1, (name, iv)
    p = 1800 / (1800 + 600)  # precision = pos_flag / all flags
    assert out["precision"].lo < p < out["precision"].hi
