"""perfgate's hand-written statistics (perfgate/stats.py: Student's t through the incomplete beta function,
the normal tail, the Mann-Whitney p-value, the median's order statistic and the confirmed rule's critical
value) against scipy, which the dev extra installs. The code keeps its own: scipy would be a 40 MB runtime
dependency of a core that needs pytest and numpy only, for a few functions whose accuracy these tests pin."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perfgate import stats

scipy_stats = pytest.importorskip("scipy.stats")
special = pytest.importorskip("scipy.special")
integrate = pytest.importorskip("scipy.integrate")

DOFS = (1, 2, 3, 4.5, 7, 10, 29, 100, 1000)


@pytest.mark.parametrize("dof", DOFS)
def test_students_t_cdf_matches_scipy(dof):
    for t in (-60.0, -8.0, -2.5, -1.0, -0.1, 0.0, 0.3, 1.0, 1.96, 3.0, 12.0, 80.0):
        assert stats.t_cdf(t, dof) == pytest.approx(scipy_stats.t.cdf(t, dof), rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("dof", DOFS)
def test_students_t_quantile_matches_scipy_down_to_the_smallest_budgets(dof):
    # a 1% run budget over 10,000 gated tests asks for p = 1 - 1e-6
    for p in (0.5, 0.8, 0.9, 0.975, 0.99, 0.999, 1 - 1e-4, 1 - 1e-6, 0.01, 1e-5):
        assert stats.t_quantile(p, dof) == pytest.approx(scipy_stats.t.ppf(p, dof), rel=1e-8, abs=1e-10)


def test_the_regularised_incomplete_beta_matches_scipy():
    for a in (0.5, 1.0, 2.5, 15.0, 500.0):
        for b in (0.5, 1.0, 4.0, 60.0):
            for x in (1e-8, 0.01, 0.2, 0.5, 0.77, 0.99, 1 - 1e-9):
                assert stats._betainc(a, b, x) == pytest.approx(special.betainc(a, b, x), rel=1e-9, abs=1e-15)


def test_the_normal_tail_keeps_its_stated_relative_error():
    x = np.linspace(-8.0, 8.0, 3201)
    ours, theirs = stats.normal_sf(x), scipy_stats.norm.sf(x)
    assert np.max(np.abs(ours - theirs) / theirs) < 1.2e-7


@pytest.mark.parametrize("seed", range(6))
def test_mann_whitney_matches_scipys_asymptotic_test_with_ties(seed):
    rng = np.random.default_rng(seed)
    a = np.round(rng.normal(1.0, 0.05, 30 + seed), 2)  # rounded: ties, as timer resolution makes them
    b = np.round(rng.normal(1.0 + 0.01 * seed, 0.05, 25), 2)
    expected = scipy_stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic", use_continuity=True)
    assert stats.mann_whitney_p(a, b) == pytest.approx(expected.pvalue, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("n", [5, 9, 20, 60, 200, 1000])
def test_the_medians_order_statistic_has_its_binomial_coverage(n):
    a, z = stats._median_order_statistic(n)
    tail = scipy_stats.binom.cdf(a - 1, n, 0.5)
    assert z == pytest.approx(scipy_stats.norm.ppf(1 - tail), rel=1e-9)


def _all_exceed_by_scipy(c: float, stages: int, n_centre: int, dof: int) -> float:
    """The same expectation by scipy's adaptive quadrature (scipy.special's normal and chi-square
    densities): u ~ N(0, 1/n_centre), q = sqrt(chi2(dof) / dof)."""
    a, sd = math.sqrt(1 + 1 / n_centre), 1 / math.sqrt(n_centre)

    def inner(q: float) -> float:
        def f(u: float) -> float:
            return float(
                special.ndtr(-(u + c * a * q)) ** stages
                * math.exp(-0.5 * (u / sd) ** 2)
                / (sd * math.sqrt(2 * math.pi))
            )

        return integrate.quad(f, -10 * sd, 10 * sd, epsabs=1e-14)[0]

    def outer(v: float) -> float:
        return inner(math.sqrt(v / dof)) * _chi2_pdf(v, dof)

    return float(integrate.quad(outer, 0, dof + 60 * math.sqrt(2 * dof) + 60, limit=200, epsabs=1e-14)[0])


def _chi2_pdf(v: float, dof: int) -> float:
    if v <= 0:
        return 0.0
    return math.exp((dof / 2 - 1) * math.log(v) - v / 2 - (dof / 2) * math.log(2) - special.gammaln(dof / 2))


@pytest.mark.parametrize(("stages", "n_centre", "dof"), [(1, 6, 5), (3, 6, 5), (3, 30, 60)])
def test_the_confirmed_rules_probability_and_critical_value_match_scipys_quadrature(stages, n_centre, dof):
    for alpha in (0.01, 1e-4):
        c = stats.critical_value(stages, alpha, n_centre, dof)
        assert _all_exceed_by_scipy(c, stages, n_centre, dof) == pytest.approx(alpha, rel=2e-3)
    if stages == 1:  # one stage: exactly Student's t
        assert stats.all_exceed_probability(2.2, 1, n_centre, dof) == pytest.approx(
            scipy_stats.t.sf(2.2, dof), rel=2e-3
        )
