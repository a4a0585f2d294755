"""Step changes in one series of process medians (pure: numbers in, typed records out, no I/O).

A creeping regression hides under every pull request's threshold; over main's history it is a step.
This finds the steps the way Apache Otava (Hunter) and Matteson & James' E-divisive do: hierarchical
binary segmentation (find the split that makes the two sides most different, test it, recurse into each
side), then a merge pass that drops steps smaller than `min_change_pct` and recomputes their neighbours.

Two choices differ from Otava, for GPU process medians:

- The split statistic is the standardized difference of the two sides' means, |mean_L - mean_R| *
  sqrt(tau (n - tau) / n) (the likelihood-ratio CUSUM for a shift in location), on values clipped at
  `clip_mads` robust deviations from the segment's median, so one wild process cannot make a step.
- Significance is a permutation test of the *maximum* over all splits (E-divisive's test, not Otava's
  t-test at the chosen split, which ignores that the split was chosen to look different). Under no change
  the values are exchangeable, so the p-value is exact whatever the noise looks like (bimodal processes
  included), and a series without a step is called changed with probability at most `max_p`. The
  permutations come from a generator seeded from the settings and the segment length, so the same series
  always gives the same answer; they stop as soon as the outcome is decided (most stationary segments are
  settled within a few dozen permutations).
- A permutation p-value cannot be smaller than the share of arrangements at least as extreme: for a
  perfectly clean step of k runs in n that is 2 / C(n, k) (the arrangement and its mirror), 1.2e-3 for
  7 + 6 runs, above max_p = 0.001, so a short series could never show a step however large. Where the
  chosen split has at least `T_TEST_SIDE` (5) runs a side and the permutations cannot resolve it
  (2 / C(n, k) above max_p / RESOLUTION_MARGIN: any such split of under 17 runs, a short side of 5 in
  under 21), it is tested instead with the pooled t-test, Bonferroni-corrected over the segment's splits
  with 5 runs a side (exact for Gaussian noise, conservative for the choice of split; the clipping above
  keeps a wild process from making a step).
  Either test holds max_p, so a stationary series is called changed with probability at most 2 max_p
  whichever is used; scripts/changepoint_rates.py measures it (docs/change-points.md).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from perfgate.stats import t_cdf

FloatArray = NDArray[np.float64]
_BATCHES = (32, 128, 512, 2048)  # permutation batch sizes, growing: an early exceedance ends the test cheaply
T_TEST_SIDE = 5  # the t-test stands in only with this many runs on each side (fewer: bimodal noise fools it)
CIRCULAR_MAX_RUNS = 160  # longer segments are searched for one split (n^2 intervals a permutation)
RESOLUTION_MARGIN = 10  # permutations resolve a clean split in >= ~90% of draws when 2 / C(n, k) <= max_p / this


@dataclass(frozen=True)
class ChangePointSettings:
    max_p: float = 0.001  # each split must reach this permutation p-value
    min_change_pct: float = 1.0  # smaller steps (median after vs before) are merged away
    min_segment: int = 3  # points on each side of a step: a step needs this many runs to be seen
    permutations: int = 999
    clip_mads: float = 5.0  # values beyond this many robust deviations count as this far
    seed: int = 20240531

    def __post_init__(self) -> None:
        if not 0.0 < self.max_p < 1.0:
            raise ValueError(f"max_p must be in (0, 1), got {self.max_p}")
        if self.min_segment < 2:
            raise ValueError(f"min_segment must be at least 2, got {self.min_segment}")
        if (self.permutations + 1) * self.max_p < 1.0 - 1e-9:
            raise ValueError(f"{self.permutations} permutations cannot reach p <= {self.max_p}")
        if not (self.min_change_pct >= 0.0 and math.isfinite(self.min_change_pct)):
            raise ValueError(f"min_change_pct must be a finite number >= 0, got {self.min_change_pct}")


@dataclass(frozen=True)
class Step:
    """A step between point index-1 (the last before) and point `index` (the first after)."""

    index: int
    before_median: float  # median of the points since the previous step
    after_median: float  # median of the points up to the next step
    change_pct: float  # 100 * (after / before - 1): positive = the values went up
    p_value: float  # the permutation p-value of the split when it was found


def find_steps(values: Sequence[float], settings: ChangePointSettings | None = None) -> tuple[Step, ...]:
    """The steps in `values` (oldest first), in order. Values must be finite and positive (medians)."""
    settings = settings or ChangePointSettings()
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise ValueError("change points need a 1-D series of finite, positive values")
    found = _segment(x, settings)
    return _merge(x, found, settings.min_change_pct)


def _segment(x: FloatArray, s: ChangePointSettings) -> dict[int, float]:
    """Binary segmentation: split index -> p-value, for every significant split (an interval found by the
    circular search gives two, and three segments to search on)."""
    found: dict[int, float] = {}
    todo = [(0, len(x))]
    while todo:
        lo, hi = todo.pop()
        seg = x[lo:hi]
        split = _best_interval(seg, s) if _circular(len(seg), s) else _best_split(seg, s)
        if split is None:
            continue
        cuts, p = split
        bounds = [lo, *(lo + c for c in cuts), hi]
        for c in cuts:
            found[lo + c] = p
        todo += list(itertools.pairwise(bounds))
    return found


def _circular(n: int, s: ChangePointSettings) -> bool:
    """Whether a segment is searched for an interval (circular binary segmentation, Olshen et al. 2004) rather
    than one split: long enough for permutations to resolve a clean interval of min_segment runs, short enough
    for the n^2 intervals a permutation (CIRCULAR_MAX_RUNS: ~0.1 s a segment)."""
    return 2 * s.min_segment <= n <= CIRCULAR_MAX_RUNS and _permutations_resolve(n, T_TEST_SIDE, s)


def _best_interval(seg: FloatArray, s: ChangePointSettings) -> tuple[tuple[int, ...], float] | None:
    """The most different interval [a, b) of a segment against the rest (a = 0 or b = n: one split), as its
    cuts inside the segment, and the permutation p-value of the maximum over all intervals, when it reaches
    max_p. A single split sees a temporary slowdown in mid-series only as two weak steps (the rest of the
    series on both sides dilutes each); the interval sees it whole, wherever it lies."""
    y = _clipped(seg, s.clip_mads)
    pairs = _interval_pairs(len(y), s.min_segment)
    observed = _interval_statistics(y[np.newaxis, :], pairs)[0]
    k = int(np.argmax(observed))
    best = float(observed[k])
    if best <= 0.0:
        return None
    p = _permutation_p(y, best, s, lambda rows: _interval_statistics(rows, pairs))
    if p is None:
        return None
    a, b = int(pairs[0][k]), int(pairs[1][k])
    return tuple(c for c in (a, b) if 0 < c < len(y)), p


def _interval_pairs(n: int, m: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Every interval [a, b) with m to n - m points, whose cuts leave at least m points outside it on each
    side they have (a = 0 and b = n are no cut)."""
    a, b = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    length = b - a
    ok = (length >= m) & (length <= n - m) & ((a == 0) | (a >= m)) & ((b == n) | (n - b >= m))
    return a[ok], b[ok]


def _interval_statistics(rows: FloatArray, pairs: tuple[NDArray[np.int64], NDArray[np.int64]]) -> FloatArray:
    """Per row, the standardized mean difference of every interval against the rest."""
    n = rows.shape[1]
    centred = rows - rows.mean(axis=1, keepdims=True)
    sums = np.concatenate([np.zeros((rows.shape[0], 1)), np.cumsum(centred, axis=1)], axis=1)
    a, b = pairs
    length = (b - a).astype(np.float64)
    stats: FloatArray = np.abs(sums[:, b] - sums[:, a]) / np.sqrt(length * (n - length) / n)
    return stats


def _best_split(seg: FloatArray, s: ChangePointSettings) -> tuple[tuple[int, ...], float] | None:
    """The most different split of a segment and its p-value, when the p-value reaches max_p."""
    n = len(seg)
    if n < 2 * s.min_segment:
        return None
    y = _clipped(seg, s.clip_mads)
    observed = _split_statistics(y[np.newaxis, :], s.min_segment)[0]
    tau = int(np.argmax(observed)) + s.min_segment
    best = float(observed[tau - s.min_segment])
    if best <= 0.0:
        return None
    side = min(tau, n - tau)
    t_test = side >= T_TEST_SIDE and not _permutations_resolve(n, side, s)
    p = (
        _split_t_p(y, tau, s)
        if t_test
        else _permutation_p(y, best, s, lambda rows: _split_statistics(rows, s.min_segment))
    )
    return ((tau,), p) if p is not None else None


def _permutations_resolve(n: int, side: int, s: ChangePointSettings) -> bool:
    """Whether n runs have enough arrangements for a clean step with `side` runs on its short side to reach
    max_p by permutations."""
    # in logs: C(n, side) passes a float's range near n = 1,030 (2.0 / comb raised OverflowError there)
    return math.log(2.0) - _log_comb(n, side) <= math.log(s.max_p / RESOLUTION_MARGIN)


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def _split_t_p(y: FloatArray, tau: int, s: ChangePointSettings) -> float | None:
    """The pooled two-sided t-test of the split at tau, Bonferroni over the segment's allowed splits; None
    when it does not reach max_p."""
    n = len(y)
    left, right = y[:tau], y[tau:]
    diff = abs(float(right.mean()) - float(left.mean()))
    ss = float(((left - left.mean()) ** 2).sum() + ((right - right.mean()) ** 2).sum())
    if ss <= 0.0:
        p = 0.0 if diff > 0.0 else 1.0
    else:
        t = diff / math.sqrt(ss / (n - 2) * (1.0 / tau + 1.0 / (n - tau)))
        p = min(1.0, (n - 2 * T_TEST_SIDE + 1) * 2.0 * (1.0 - t_cdf(t, n - 2)))
    return p if p <= s.max_p else None


def _clipped(seg: FloatArray, clip_mads: float) -> FloatArray:
    centre = float(np.median(seg))
    scale = 1.4826 * float(np.median(np.abs(seg - centre)))
    if scale <= 0.0:
        return seg - centre
    return np.clip(seg - centre, -clip_mads * scale, clip_mads * scale)


def _split_statistics(rows: FloatArray, min_segment: int) -> FloatArray:
    """Per row, the standardized mean difference at every allowed split tau in [m, n - m]."""
    n = rows.shape[1]
    centred = rows - rows.mean(axis=1, keepdims=True)
    cusum = np.cumsum(centred, axis=1)[:, min_segment - 1 : n - min_segment]
    tau = np.arange(min_segment, n - min_segment + 1, dtype=np.float64)
    stats: FloatArray = np.abs(cusum) / np.sqrt(tau * (n - tau) / n)  # |S_tau| / sqrt(tau (n - tau) / n)
    return stats


def _permutation_p(
    y: FloatArray, observed: float, s: ChangePointSettings, statistics: Callable[[FloatArray], FloatArray]
) -> float | None:
    """(1 + exceedances) / (1 + permutations), or None once it can no longer reach max_p."""
    rng = np.random.default_rng([s.seed, len(y)])
    allowed = math.floor(s.max_p * (s.permutations + 1) + 1e-9) - 1  # exceedances that still allow p <= max_p
    exceed, done = 0, 0
    tolerance = observed * (1.0 - 1e-9)  # a permutation that reproduces the split exactly counts
    for size in _batch_sizes(s.permutations):
        perms = rng.permuted(np.broadcast_to(y, (size, len(y))), axis=1)
        maxima = statistics(perms).max(axis=1)
        exceed += int(np.count_nonzero(maxima >= tolerance))
        done += size
        if exceed > allowed:
            return None
    return (1 + exceed) / (1 + done)


def _batch_sizes(total: int) -> list[int]:
    sizes, left = [], total
    for b in _BATCHES:
        if left <= 0:
            break
        sizes.append(min(b, left))
        left -= sizes[-1]
    while left > 0:
        sizes.append(min(_BATCHES[-1], left))
        left -= sizes[-1]
    return sizes


def _merge(x: FloatArray, found: dict[int, float], min_change_pct: float) -> tuple[Step, ...]:
    """Drop the smallest step below `min_change_pct` and measure its neighbours again, until none is left."""
    cuts = sorted(found)
    while True:
        steps = [_step(x, cuts, k, found[c]) for k, c in enumerate(cuts)]
        small = [st for st in steps if abs(st.change_pct) < min_change_pct]
        if not small:
            return tuple(steps)
        cuts.remove(min(small, key=lambda st: abs(st.change_pct)).index)


def _step(x: FloatArray, cuts: list[int], k: int, p: float) -> Step:
    lo = cuts[k - 1] if k > 0 else 0
    hi = cuts[k + 1] if k + 1 < len(cuts) else len(x)
    before = float(np.median(x[lo : cuts[k]]))
    after = float(np.median(x[cuts[k] : hi]))
    return Step(
        index=cuts[k], before_median=before, after_median=after, change_pct=100.0 * (after / before - 1.0), p_value=p
    )
