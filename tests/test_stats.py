import random
import statistics

import numpy as np
import pytest

from perfgate.model import Timer
from perfgate.stats import (
    bootstrap_medians,
    mann_whitney_p,
    median_change_ci_pct,
    median_ratio_ci,
    percent_change,
    quantile,
    summarize,
)


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


def test_change_interval_contains_the_true_change_and_is_reproducible():
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


def test_ratio_of_medians_interval_matches_the_published_example():
    # Bonett & Price's ratio of medians, worked example from the statpsych documentation
    y1 = [36, 44, 47, 42, 49, 39, 46, 31, 33, 48]
    y2 = [32, 39, 26, 35, 43, 27, 40, 37, 34, 29, 49, 42, 40]
    ci = median_ratio_ci(y1, y2, confidence=0.95)
    assert ci is not None
    assert ci == pytest.approx((1.162162, 0.927667, 1.455933), abs=5e-6)


def test_change_interval_agrees_with_a_bootstrap_percentile_interval():
    rng = np.random.default_rng(11)
    base = 1.0 + rng.gamma(2.0, 0.01, 200)
    cur = 1.03 + rng.gamma(2.0, 0.01, 200)
    ci = median_change_ci_pct(list(base), list(cur))
    assert ci is not None
    mb = bootstrap_medians(base, 4000, rng)
    mc = bootstrap_medians(cur, 4000, rng)
    boot_lo, boot_hi = np.quantile(100 * (mc / mb - 1), (0.025, 0.975))
    width = boot_hi - boot_lo
    assert abs(ci[0] - boot_lo) < 0.25 * width and abs(ci[1] - boot_hi) < 0.25 * width


def test_change_interval_covers_the_true_change_about_95_percent_of_the_time():
    rng = np.random.default_rng(5)
    true_ratio = 1.05
    covered = 0
    for _ in range(400):
        base = rng.lognormal(0.0, 0.05, 60)
        cur = true_ratio * rng.lognormal(0.0, 0.05, 60)
        ci = median_ratio_ci(list(cur), list(base))
        assert ci is not None
        covered += ci[1] <= true_ratio <= ci[2]
    assert 0.91 <= covered / 400 <= 0.99


@pytest.mark.parametrize(
    "base, cur", [([0.0, 1.0, 1.0], [1.0, 1.0, 1.0]), ([1.0], [1.0, 2.0]), ([1.0, -2.0, 3.0], [1.0, 2.0, 3.0])]
)
def test_change_interval_is_absent_when_it_cannot_be_formed(base, cur):
    assert median_change_ci_pct(base, cur) is None
