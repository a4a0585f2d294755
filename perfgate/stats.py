"""Sample summaries and the statistics behind a verdict (pure; numpy, vectorised).

The bootstrap and the rank test were pure-Python loops that took 99.6% of `compare_run` at 1,000
cases. The rank test and the bootstrap (kept for paired speedup ratios, a few dozen values) are array
operations now; the change interval shown for every case is an order-statistic interval (one sort per
sample), which is what takes `compare_run` on 10,000 cases from minutes to seconds.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np
from numpy.typing import NDArray

from perfgate.model import Timer, TimingStats

FloatArray = NDArray[np.float64]


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile of already sorted values (numpy's default method)."""
    if not len(sorted_values):
        raise ValueError("quantile of no values")
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return float(sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo))


def summarize(
    samples_ms: Sequence[float], timer: Timer, bytes_moved: int | None = None, flops: int | None = None
) -> TimingStats:
    """Median-centred summary; throughput is derived from the median, the robust centre."""
    s = np.sort(np.asarray(samples_ms, dtype=np.float64))
    if s.size == 0:
        raise ValueError("no samples to summarise")
    if not np.all(np.isfinite(s)):
        raise ValueError("samples must be finite")
    q1, median, q3 = (float(v) for v in np.quantile(s, (0.25, 0.5, 0.75)))
    seconds = median / 1e3
    return TimingStats(
        timer=timer,
        n_samples=int(s.size),
        median_ms=median,
        mean_ms=float(s.mean()),
        stdev_ms=float(s.std(ddof=1)) if s.size > 1 else 0.0,
        min_ms=float(s[0]),
        max_ms=float(s[-1]),
        q1_ms=q1,
        q3_ms=q3,
        gbps=bytes_moved / seconds / 1e9 if bytes_moved and seconds > 0 else None,
        tflops=flops / seconds / 1e12 if flops and seconds > 0 else None,
    )


def _rank_sum_u(a: FloatArray, b: FloatArray) -> tuple[float, float]:
    """U of `a` against `b` (each pair: 1 when a's value is larger, 1/2 when tied) and the tie-correction
    term sum(t^3 - t) over the tie groups of both samples together; one sort per sample and binary
    searches, not a rank array (per case this ran several numpy calls more, at 1,000 cases a third of
    `perfgate compare`)."""
    x, y = np.sort(a), np.sort(b)
    below = np.searchsorted(y, x, "left")
    tied = np.searchsorted(y, x, "right") - below
    u = float(below.sum()) + 0.5 * float(tied.sum())
    both = np.concatenate((x, y))
    both.sort(kind="mergesort")  # two sorted runs: one merge
    edges = np.flatnonzero(both[1:] != both[:-1])
    if edges.size == both.size - 1:
        return u, 0.0  # no ties
    bounds = np.concatenate(((-1,), edges, (both.size - 1,)))  # (np.diff's prepend/append cost more here)
    counts = np.diff(bounds).astype(np.float64)  # each tie group's size
    return u, float(np.sum(counts**3 - counts))


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of the Mann-Whitney U test (normal approximation, tie-corrected).

    Rank-based, so a few outlier samples (a context switch, a clock dip) do not decide a verdict the
    way they would in a t-test on means.
    """
    n1, n2 = len(a), len(b)
    if n1 < 2 or n2 < 2:
        return 1.0
    u1, tie_term = _rank_sum_u(np.asarray(a, np.float64), np.asarray(b, np.float64))
    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)))
    if var <= 0:
        return 1.0  # every sample identical: no evidence of a difference
    z = (abs(u1 - n1 * n2 / 2) - 0.5) / math.sqrt(var)  # continuity correction
    return max(0.0, min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2))))


def bootstrap_medians(values: Sequence[float] | FloatArray, resamples: int, rng: np.random.Generator) -> FloatArray:
    """Medians of `resamples` resamples with replacement, all drawn at once."""
    arr = np.asarray(values, dtype=np.float64)
    idx = rng.integers(0, arr.size, size=(resamples, arr.size))
    result: FloatArray = np.median(arr[idx], axis=1)
    return result


@functools.lru_cache(maxsize=64)
def _median_order_statistic(n: int) -> tuple[int, float]:
    """The 1-based order statistic a with [Y(a), Y(n-a+1)] the distribution-free interval of a median,
    and the normal quantile of that interval's exact (binomial) coverage."""
    a = max(1, round(n / 2 - math.sqrt(n)))
    k = np.arange(a, dtype=np.float64)  # P(B <= a-1) for B ~ Binomial(n, 1/2), summed in log space
    log_pmf = (
        math.lgamma(n + 1) - np.array([math.lgamma(x + 1) + math.lgamma(n - x + 1) for x in k]) - n * math.log(2.0)
    )
    tail = float(np.exp(log_pmf).sum())
    return a, NormalDist().inv_cdf(1.0 - tail) if tail < 0.5 else 0.0


def _log_median_se(sorted_values: FloatArray) -> float | None:
    n = sorted_values.size
    a, z0 = _median_order_statistic(n)
    if z0 <= 0.0:
        return None  # too few samples for an interval
    return float(math.log(sorted_values[n - a]) - math.log(sorted_values[a - 1])) / (2.0 * z0)


def _sorted_median(s: FloatArray) -> float:
    """np.median of already sorted values (the same number: the middle one, or the mean of the two)."""
    mid = s.size // 2
    return float(s[mid]) if s.size % 2 else float((s[mid - 1] + s[mid]) / 2.0)


@functools.lru_cache(maxsize=16)
def _normal_quantile(p: float) -> float:
    return NormalDist().inv_cdf(p)


def median_ratio_ci(
    current: Sequence[float], baseline: Sequence[float], confidence: float = 0.95
) -> tuple[float, float, float] | None:
    """Ratio of medians (current / baseline) and its distribution-free confidence interval.

    Price & Bonett's interval: each median's log standard error from the order statistics that bracket
    it, their exact binomial coverage turned into a z value, combined on the log scale. It needs one
    sort per sample instead of a bootstrap's thousand resamples (the bootstrap took 99% of `compare_run`
    at 1,000 cases), has no seed, and stays close to the bootstrap percentile interval for the sample
    sizes perfgate takes. None when either side has a non-positive value or too few samples.
    """
    cur = np.sort(np.asarray(current, dtype=np.float64))
    base = np.sort(np.asarray(baseline, dtype=np.float64))
    if cur.size < 2 or base.size < 2 or not (cur[0] > 0 and base[0] > 0):
        return None
    if not (np.isfinite(cur[-1]) and np.isfinite(base[-1])):
        return None
    se_cur, se_base = _log_median_se(cur), _log_median_se(base)
    if se_cur is None or se_base is None:
        return None
    centre = math.log(_sorted_median(cur)) - math.log(_sorted_median(base))
    half = _normal_quantile(0.5 + confidence / 2) * math.hypot(se_cur, se_base)
    return math.exp(centre), math.exp(centre - half), math.exp(centre + half)


def median_change_ci_pct(
    baseline: Sequence[float], current: Sequence[float], confidence: float = 0.95
) -> tuple[float, float] | None:
    """Confidence interval of the percent change of the median (current vs baseline); see
    `median_ratio_ci`."""
    ci = median_ratio_ci(current, baseline, confidence)
    return None if ci is None else (100.0 * (ci[1] - 1.0), 100.0 * (ci[2] - 1.0))


def ratio_ci(
    numerators: Sequence[float],
    denominators: Sequence[float],
    confidence: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Median of paired ratios and its bootstrap interval (pairs resampled together)."""
    ratios = np.asarray(numerators, np.float64) / np.asarray(denominators, np.float64)
    rng = np.random.default_rng(seed)
    meds = bootstrap_medians(ratios, resamples, rng)
    tail = (1 - confidence) / 2
    lo, hi = np.quantile(meds, (tail, 1 - tail))
    return float(np.median(ratios)), float(lo), float(hi)


def percent_change(baseline: float, current: float) -> float | None:
    """Signed percent change; None when the baseline is 0 (a ratio would be meaningless)."""
    if baseline == 0:
        return None if current != 0 else 0.0
    return 100.0 * (current - baseline) / abs(baseline)


# --- Student's t quantile (no scipy): the regularised incomplete beta by continued fraction ---------


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction for the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for num in (
            m * (b - m) * x / ((a + m2 - 1) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, dof: float) -> float:
    """P(T <= t) for Student's t with `dof` degrees of freedom."""
    tail = 0.5 * _betainc(dof / 2.0, 0.5, dof / (dof + t * t))
    return 1.0 - tail if t >= 0 else tail


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, dof: float) -> float:
    """The t value with P(T <= t) = p (bisection on the CDF; exact to ~1e-10). Cached: ~80 CDF evaluations
    (1-2 ms) each, and a gate asks for the same few (p, dof) pairs for every case."""
    if not 0.0 < p < 1.0 or dof <= 0:
        raise ValueError("need 0 < p < 1 and dof > 0")
    if p < 0.5:
        return -t_quantile(1.0 - p, dof)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, dof) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, dof) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2.0


def chi2_quantile(p: float, dof: float) -> float:
    """The chi-square quantile (Wilson & Hilferty's cube-root normal approximation: within 2% of the exact
    quantile over the central 90% from 5 degrees of freedom on, 7% at 3; tests/test_stats_scipy.py checks
    it against scipy). It serves only the range of what a case detects."""
    if not 0.0 < p < 1.0 or dof <= 0:
        raise ValueError("need 0 < p < 1 and dof > 0")
    h = 2.0 / (9.0 * dof)
    return float(dof * max(1.0 - h + NormalDist().inv_cdf(p) * math.sqrt(h), 1e-6) ** 3)


# --- the confirmed rule's critical value: all of k fresh processes beyond c (no scipy) ----------------


def normal_sf(x: FloatArray) -> FloatArray:
    """P(Z > x), vectorised; erfc by Numerical Recipes' Chebyshev fit (relative error < 1.2e-7 everywhere, so
    tail probabilities of 1e-7 keep their digits)."""
    z = np.abs(x) / math.sqrt(2.0)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -1.26551223 + t * (
        1.00002368
        + t
        * (
            0.37409196
            + t
            * (
                0.09678418
                + t
                * (
                    -0.18628806
                    + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))
                )
            )
        )
    )
    erfc = t * np.exp(-z * z + poly)
    out: FloatArray = np.where(x >= 0, 0.5 * erfc, 1.0 - 0.5 * erfc)
    return out


@functools.lru_cache(maxsize=64)
def _quadrature(n_centre: int, dof: int) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Nodes and weights for an expectation over (u, q): u ~ N(0, 1/n_centre), the centre's error in noise
    units, and q = s_hat / sigma ~ sqrt(chi2(dof) / dof), the noise estimate's error. Gauss-Hermite in u;
    in q a log-spaced grid under the exact chi-square density (trapezoid weights, renormalised)."""
    x, w = np.polynomial.hermite_e.hermegauss(48)
    u, wu = x / math.sqrt(n_centre), w / w.sum()
    lo, hi = math.log(1e-9 * dof), math.log(dof + 60.0 * math.sqrt(2.0 * dof) + 60.0)
    t = np.linspace(lo, hi, 400)
    v = np.exp(t)
    log_pdf = (dof / 2 - 1) * t - v / 2 - (dof / 2) * math.log(2.0) - math.lgamma(dof / 2)
    wq = np.exp(log_pdf + t) * np.gradient(t)  # the density of log v
    return u, wu, np.sqrt(v / dof), wq / wq.sum()


def all_exceed_probability(c: float, stages: int, n_centre: int, dof: int) -> float:
    """For unchanged code: the probability that each of `stages` fresh process values lies more than
    c * s_hat * sqrt(1 + 1/n_centre) above the centre (the mean of n_centre calibration values), with
    s_hat estimated on `dof` degrees of freedom. The processes share the centre and the noise estimate,
    so their exceedances are not independent: the expectation is taken over both estimates' errors."""
    u, wu, q, wq = _quadrature(n_centre, dof)
    a = math.sqrt(1.0 + 1.0 / n_centre)
    tail = normal_sf(u[:, None] + c * a * q[None, :]) ** stages
    return float(wu @ tail @ wq)


@functools.lru_cache(maxsize=4096)
def critical_value(stages: int, alpha: float, n_centre: int, dof: int) -> float:
    """The c at which all_exceed_probability is alpha (one stage: Student's t quantile, exactly)."""
    if stages < 1 or not 0.0 < alpha < 1.0 or n_centre < 1 or dof < 1:
        raise ValueError("need stages >= 1, 0 < alpha < 1, n_centre >= 1, dof >= 1")
    if stages == 1:
        return t_quantile(1.0 - alpha, dof)
    lo, hi = 0.0, t_quantile(1.0 - alpha, dof)  # all of k beyond c is rarer than one beyond c
    for _ in range(30):  # to ~1e-9 of the bracket: far below the noise estimate's own error
        mid = (lo + hi) / 2.0
        if all_exceed_probability(mid, stages, n_centre, dof) > alpha:
            lo = mid
        else:
            hi = mid
    return hi
