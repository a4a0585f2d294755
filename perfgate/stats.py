"""Sample summaries and the significance test behind a verdict (pure, standard library only)."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence

from perfgate.model import Timer, TimingStats


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile of already sorted values (numpy's default method)."""
    if not sorted_values:
        raise ValueError("quantile of no values")
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summarize(samples_ms: Sequence[float], timer: Timer, bytes_moved: int | None = None,
              flops: int | None = None) -> TimingStats:
    """Median-centred summary; throughput is derived from the median, the robust centre."""
    if not samples_ms:
        raise ValueError("no samples to summarise")
    s = sorted(samples_ms)
    median = quantile(s, 0.5)
    seconds = median / 1e3
    return TimingStats(
        timer=timer,
        n_samples=len(s),
        median_ms=median,
        mean_ms=statistics.fmean(s),
        stdev_ms=statistics.stdev(s) if len(s) > 1 else 0.0,
        min_ms=s[0],
        max_ms=s[-1],
        q1_ms=quantile(s, 0.25),
        q3_ms=quantile(s, 0.75),
        gbps=bytes_moved / seconds / 1e9 if bytes_moved and seconds > 0 else None,
        tflops=flops / seconds / 1e12 if flops and seconds > 0 else None,
    )


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of the Mann-Whitney U test (normal approximation, tie-corrected).

    Rank-based, so a few outlier samples (a context switch, a clock dip) do not decide a verdict the
    way they would in a t-test on means.
    """
    n1, n2 = len(a), len(b)
    if n1 < 2 or n2 < 2:
        return 1.0
    pooled = sorted([(v, 0) for v in a] + [(v, 1) for v in b])
    ranks = [0.0] * len(pooled)
    tie_term = 0.0
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        avg_rank = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[k] = avg_rank
        t = j - i + 1
        tie_term += t**3 - t
        i = j + 1
    r1 = sum(r for r, (_, grp) in zip(ranks, pooled) if grp == 0)
    u1 = r1 - n1 * (n1 + 1) / 2
    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)))
    if var <= 0:
        return 1.0  # every sample identical: no evidence of a difference
    z = (abs(u1 - n1 * n2 / 2) - 0.5) / math.sqrt(var)  # continuity correction
    return max(0.0, min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2))))


def median_change_ci_pct(baseline: Sequence[float], current: Sequence[float], confidence: float = 0.95,
                         resamples: int = 1000, seed: int = 0) -> tuple[float, float]:
    """Bootstrap confidence interval of the percent change of the median (current vs baseline).

    Seeded so the same samples always print the same interval.
    """
    rng = random.Random(seed)
    b, c = list(baseline), list(current)
    changes = []
    for _ in range(resamples):
        mb = statistics.median(rng.choices(b, k=len(b)))
        mc = statistics.median(rng.choices(c, k=len(c)))
        if mb:
            changes.append(100.0 * (mc - mb) / mb)
    changes.sort()
    tail = (1 - confidence) / 2
    return quantile(changes, tail), quantile(changes, 1 - tail)


def percent_change(baseline: float, current: float) -> float | None:
    """Signed percent change; None when the baseline is 0 (a ratio would be meaningless)."""
    if baseline == 0:
        return None if current != 0 else 0.0
    return 100.0 * (current - baseline) / abs(baseline)
