"""The decision rule's statistics against scipy's (the dev extra installs it; perfgate itself never imports
it): quantiles, the confirmed rule's joint tail probability, the rank tests, the window's fits."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import comb

from perfgate.gate.common import EXACT_MAX_CASES, signed_rank_p, weighted_median
from perfgate.gate.decision import rank_bound, stages_needed
from perfgate.gate.noise import window_residuals_pct, window_shape_pct
from perfgate.stats import all_exceed_probability, chi2_quantile, critical_value, mann_whitney_p, t_quantile


@pytest.mark.parametrize("dof", [1, 3, 5, 12, 40, 200])
@pytest.mark.parametrize("p", [0.5, 0.9, 0.975, 0.999, 1 - 1e-5])
def test_student_t_quantile_matches_scipy(dof, p):
    assert t_quantile(p, dof) == pytest.approx(stats.t.ppf(p, dof), rel=1e-8)


@pytest.mark.parametrize("dof", [5, 10, 30])
@pytest.mark.parametrize("p", [0.05, 0.5, 0.95])
def test_chi_square_quantile_is_within_two_percent_of_scipy(dof, p):
    assert chi2_quantile(p, dof) == pytest.approx(stats.chi2.ppf(p, dof), rel=0.02)


@pytest.mark.parametrize("stages, n_c, dof", [(2, 6, 5), (3, 6, 5), (3, 6, 33), (5, 10, 40)])
def test_the_joint_tail_probability_matches_scipys_integral(stages, n_c, dof):
    """P(all k fresh processes beyond c * s_hat * a) = E over the centre's error u ~ N(0, 1/n_c) and
    q = s_hat / sigma ~ sqrt(chi2(dof) / dof) of P(Z > u + c a q)^k, by scipy's quadrature."""
    c, a = 1.5, math.sqrt(1 + 1 / n_c)

    def inner(q: float) -> float:
        f = lambda u: stats.norm.sf(u + c * a * q) ** stages * stats.norm.pdf(u, scale=1 / math.sqrt(n_c))  # noqa: E731
        return integrate.quad(f, -8 / math.sqrt(n_c), 8 / math.sqrt(n_c))[0]

    density = lambda q: inner(q) * stats.chi.pdf(q * math.sqrt(dof), dof) * math.sqrt(dof)  # noqa: E731
    exact = integrate.quad(density, 0, 4, limit=200)[0]
    assert all_exceed_probability(c, stages, n_c, dof) == pytest.approx(exact, rel=2e-3)


def test_one_stage_critical_value_is_scipys_t_quantile():
    assert critical_value(1, 1e-4, 6, 5) == pytest.approx(stats.t.ppf(1 - 1e-4, 5), rel=1e-8)


def test_mann_whitney_matches_scipys_asymptotic_test():
    rng = np.random.default_rng(0)
    a, b = rng.normal(0, 1, 40), rng.normal(0.4, 1, 35)
    b[:5] = a[:5]  # ties
    expected = stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic", use_continuity=True).pvalue
    assert mann_whitney_p(a, b) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_signed_rank_matches_scipys_one_sided_normal_approximation_past_the_exact_count(seed):
    z = np.random.default_rng(seed).normal(0.3, 1.0, EXACT_MAX_CASES + 20)
    z[3] = -z[5]  # a tie in |z|
    side = "greater" if np.sum(np.sign(z)) >= 0 else "less"
    expected = stats.wilcoxon(z, alternative=side, correction=True, method="approx").pvalue
    assert signed_rank_p(list(z)) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_signed_rank_is_exact_in_small_runs_as_scipy_counts_it(seed):
    z = np.random.default_rng(seed).normal(0.6, 1.0, 14)
    side = "greater" if np.sum(np.sign(z)) >= 0 else "less"
    assert signed_rank_p(list(z)) == pytest.approx(stats.wilcoxon(z, alternative=side, method="exact").pvalue)


def test_signed_rank_with_tied_ranks_is_the_share_of_sign_patterns_at_least_as_far():
    z = np.array([0.46] * 5 + [-0.1, 0.2, 0.2])  # ranks of processes beyond all their calibration's: ties
    ranks = stats.rankdata(np.abs(z))
    w = max(ranks[z > 0].sum(), ranks.sum() - ranks[z > 0].sum())
    signs = itertools.product((0, 1), repeat=len(z))
    expected = sum(1 for s in signs if np.dot(s, ranks) >= w - 1e-9) / 2 ** len(z)
    assert signed_rank_p(list(z)) == pytest.approx(expected)


def test_weighted_median_is_numpys_on_repeated_values():
    values, weights = [3.0, 1.0, 2.0, 10.0], [2, 1, 3, 1]
    assert weighted_median(values, weights) == np.median(np.repeat(values, weights))


def test_the_window_residuals_are_scipys_least_squares_line():
    rng = np.random.default_rng(4)
    x = 1.0 + 0.004 * np.arange(30) + 0.01 * rng.standard_normal(30)
    fit = stats.linregress(np.arange(30), x)
    residuals, dof = window_residuals_pct(list(x))
    level = fit.intercept + fit.slope * np.arange(30)
    assert dof == 28 and residuals == pytest.approx(list(100 * (x - level) / level), abs=1e-9)


def test_the_window_shape_is_about_scipys_theil_sen_line():
    rng = np.random.default_rng(5)
    x = 1.0 + 0.003 * np.arange(20) + 0.01 * rng.standard_normal(20)
    slope = stats.theilslopes(x, np.arange(20)).slope
    level = np.median(x - slope * np.arange(20)) + slope * np.arange(20)
    assert window_shape_pct(list(x)) == pytest.approx(list(100 * (x - level) / level), abs=1e-9)


@pytest.mark.parametrize("n_ref, alpha", [(6, 1e-2), (6, 1e-4), (36, 1e-4), (36, 1e-5), (20, 1e-3)])
def test_the_stages_are_the_fewest_that_reach_alpha_distribution_free_at_the_second_extreme(n_ref, alpha):
    k = stages_needed(n_ref, alpha, 3, 64)
    assert comb(k + 1, k, exact=True) / comb(n_ref + k, k, exact=True) <= alpha
    assert k == 3 or k / comb(n_ref + k - 1, k - 1, exact=True) > alpha


def test_the_rank_bound_holds_by_simulation_for_a_second_mode():
    """All k fresh processes beyond the rank bound of n exchangeable reference processes: the rate is
    C(j - 1 + k, k) / C(n + k, k) whatever the shape. Two modes, 20% of processes 2% slower."""
    rng = np.random.default_rng(6)
    n, k, alpha, trials = 20, 4, 1e-3, 200_000
    draw = lambda size: 0.3 * rng.standard_normal(size) + 2.0 * (rng.random(size) < 0.2)  # noqa: E731
    ref, fresh = draw((trials, n)), draw((trials, k))
    top = -np.sort(-ref, axis=1)
    bound = np.array([rank_bound(tuple(row[:8]), n, k, alpha) for row in top[:2000]])
    j = int(np.argmax(top[0, :8] == bound[0])) + 1
    rate = np.mean(np.all(fresh > top[:, [j - 1]], axis=1))
    assert rate == pytest.approx(comb(j - 1 + k, k) / comb(n + k, k), rel=0.15)
    assert comb(j - 1 + k, k) / comb(n + k, k) <= alpha
