import random
import statistics

import pytest

from perfgate.model import Timer
from perfgate.stats import mann_whitney_p, median_change_ci_pct, percent_change, quantile, summarize


def test_summary_uses_median_and_derives_throughput_from_it():
    s = summarize([1.0, 2.0, 3.0, 4.0, 100.0], Timer.HOST, bytes_moved=2_000_000_000, flops=4 * 10**12)
    assert s.median_ms == 3.0
    assert s.min_ms == 1.0 and s.max_ms == 100.0
    assert s.q1_ms == 2.0 and s.q3_ms == 4.0
    assert s.gbps == pytest.approx(2e9 / 3e-3 / 1e9)
    assert s.tflops == pytest.approx(4e12 / 3e-3 / 1e12)


def test_quantile_interpolates_like_numpy():
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert quantile([10.0], 0.9) == 10.0


def test_identical_distributions_are_not_significant():
    rng = random.Random(1)
    a = [1 + rng.gauss(0, 0.01) for _ in range(100)]
    b = [1 + rng.gauss(0, 0.01) for _ in range(100)]
    assert mann_whitney_p(a, b) > 0.05


def test_shifted_distribution_is_significant_despite_outliers():
    rng = random.Random(2)
    a = [1 + rng.gauss(0, 0.01) for _ in range(50)] + [5.0, 6.0]
    b = [1.05 + rng.gauss(0, 0.01) for _ in range(50)]
    assert mann_whitney_p(a, b) < 1e-6


def test_all_ties_give_p_of_one():
    assert mann_whitney_p([1.0] * 10, [1.0] * 10) == 1.0


def test_bootstrap_interval_contains_the_true_change_and_is_reproducible():
    rng = random.Random(3)
    base = [1 + rng.gauss(0, 0.02) for _ in range(200)]
    cur = [1.1 + rng.gauss(0, 0.02) for _ in range(200)]
    lo, hi = median_change_ci_pct(base, cur)
    observed = percent_change(statistics.median(base), statistics.median(cur))
    assert lo <= observed <= hi
    assert 7.0 < lo < hi < 13.0
    assert (lo, hi) == median_change_ci_pct(base, cur)


def test_percent_change_from_zero_is_undefined():
    assert percent_change(0.0, 1.0) is None
    assert percent_change(0.0, 0.0) == 0.0
    assert percent_change(2.0, 3.0) == 50.0
