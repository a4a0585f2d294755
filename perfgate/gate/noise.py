"""A case's between-process noise, per metric: the SCALE of its process values, from the baseline's
calibration processes and the noise window (the process values of recent passing runs on the tracked
branch, read from the history). Never their location: the centre a run is judged against is the
calibration's alone (gate/decision.py).

The window's location is thrown away before it is used. Its values are taken relative to their own level
(their mean, or, with DETREND_MIN_RUNS or more, a least-squares line through them in run order), so a
window that sits 3% slow (a driver update), or creeps +0.5% a run, does not move the threshold: it only
says how far processes of the same code land from each other. Each residual is scaled up by sqrt(W / (W -
p)) (p = 1 or 2 fitted parameters) so it spreads like a fresh process does, and re-placed at the
calibration's centre: these are the reference processes whose extremes bound the threshold
(`rank_bound` in gate/decision.py) and whose spread is the noise s.

s is the pooled relative standard deviation: the calibration's squared deviations from their mean (n_c - 1
degrees of freedom) plus the window's squared residuals (W - p), over their degrees of freedom. Below
EXCLUSION_MIN_PROCESSES reference processes nothing is left out of s; from there on, at most one in 20 that
stands apart from all the others (a 12 us add measured at 23 us once in 28 processes) is left out of s
only. No process is ever left out of the extremes: a process of a slower mode that happens to be alone in
the reference is what keeps that mode from failing the case (the earlier rule dropped it as "isolated").
The window's own processes, as they joined the reference, are kept apart too (`window_upper_pct`) on a
side where one of them lies beyond every calibration process by UNSEEN_SD of their standard deviations:
their rank bound holds where the calibration missed a mode the gate's processes land in (gate/decision.py).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from perfgate.model import NoiseEstimate, Timer

DEFAULT_NOISE_FLOOR_PCT = {
    Timer.CUDA_EVENT: 0.1,
    Timer.HOST: 0.5,
    Timer.HOST_THREAD_CPU: 0.5,
    Timer.HOST_PROCESS_CPU: 0.5,
    Timer.PYTEST_BENCHMARK: 0.5,
}
MIN_REFERENCE_PROCESSES = 3  # fewer cannot estimate a spread: the case is uncalibrated
EXCLUSION_MIN_PROCESSES = 20  # below this no process is ever left out of s
EXCLUSION_SHARE = 20  # at most one process in this many may be left out of s
EXTREMES_KEPT = 8  # reference processes kept per side for the rank bound (gate/decision.py)
DETREND_MIN_RUNS = 8  # a window this long loses its trend (a line) as well as its level


def noise_floor(timer: Timer, floor_pct: float | None) -> float:
    return DEFAULT_NOISE_FLOOR_PCT[timer] if floor_pct is None else floor_pct


def estimate_noise(calibration: Sequence[float], window: Sequence[float], floor_pct: float) -> NoiseEstimate | None:
    """The relative spread of calibration and window process values (the window newest first, as
    store/window.py reads it); None for fewer than three, or nothing to estimate a spread from."""
    cal = [float(v) for v in calibration]
    win = [float(v) for v in window][::-1]  # oldest first: a trend is fitted in run order
    if len(cal) + len(win) < MIN_REFERENCE_PROCESSES or any(v <= 0 for v in (*cal, *win)):
        return None
    centre = math.fsum(cal) / len(cal) if cal else math.fsum(win) / len(win)
    ranked = [100.0 * (v - centre) / centre for v in cal]  # raw values: exact for the rank bound
    residuals, win_df = window_residuals_pct(win)
    slope = theil_sen_slope(win) if len(win) >= DETREND_MIN_RUNS else 0.0
    if win_df and cal and not window_moved(ranked, win, centre, residuals, win_df, slope):
        ranked += [100.0 * (v - centre) / centre for v in win]  # where they are: exchangeable, exact
    elif win_df:  # moved: its shape about its median line, at the calibration's median, spread like fresh
        cal_median = statistics.median(ranked) if ranked else 0.0
        widen = math.sqrt(len(win) / win_df)
        ranked += [cal_median + r * widen for r in window_shape_pct(win, slope)]
    odd = _isolated_index(sorted(range(len(ranked)), key=ranked.__getitem__), ranked)
    upper_own, lower_own = _window_own(ranked[: len(cal)], ranked[len(cal) :], floor_pct)
    kept_cal = [d for i, d in enumerate(ranked[: len(cal)]) if i != odd]
    kept_mean = math.fsum(kept_cal) / len(kept_cal) if kept_cal else 0.0
    spread = [d - kept_mean for d in kept_cal] + [r for i, r in enumerate(residuals, len(cal)) if i != odd]
    df = max(len(kept_cal) - 1, 0) + win_df - (odd is not None and odd >= len(cal))
    if df < 1:
        return None
    sd = math.sqrt(math.fsum(d * d for d in spread) / df)
    ordered = sorted(ranked)
    return NoiseEstimate(
        max(sd, floor_pct),
        df,
        len(win),
        0 if odd is None else 1,
        upper_pct=tuple(round(d, 6) for d in ordered[::-1][:EXTREMES_KEPT]),
        lower_pct=tuple(round(d, 6) for d in ordered[:EXTREMES_KEPT]),
        processes=len(ranked),
        window_upper_pct=tuple(round(d, 6) for d in upper_own[::-1][:EXTREMES_KEPT]),
        window_lower_pct=tuple(round(d, 6) for d in lower_own[:EXTREMES_KEPT]),
    )


WILD_PCT = 25.0  # a window process this far from the centre is not a mode the window's own bound protects
# the window's own bound applies on a side where a window process lies this many calibration standard
# deviations beyond every calibration process: a mode the calibration did not see (3% on a 0.2% case is 15);
# stationary noise rarely reaches it (W = 30 against n_c = 10: the largest differ by ~0.5 sd), so a case
# without one keeps R's threshold and stages (a 12 us add's 2% was caught 96% -> 66% with R_w throughout)
UNSEEN_SD = 3.0


def _window_own(cal_pct: Sequence[float], placed: Sequence[float], floor_pct: float) -> tuple[list[float], list[float]]:
    """The window's processes as placed in the reference, sorted, for its own rank bound on each side; empty
    on a side where no window process lies UNSEEN_SD calibration standard deviations beyond every calibration
    process (nothing the calibration could not have produced: R alone holds there). Without those
    beyond WILD_PCT (a 12 us add once read at 23 us: as a window of 10's largest it made the case blind to
    5% for as long as it stayed; the gross rule's 25% is where a change is never noise) and without the one
    that stands apart from all the others when the window alone holds EXCLUSION_MIN_PROCESSES (alone among
    fewer, a process of a slower mode is what protects that mode). Both stay in the whole reference."""
    kept = [d for d in placed if abs(d) <= WILD_PCT]
    odd = _isolated_index(sorted(range(len(kept)), key=kept.__getitem__), kept)
    own = sorted(d for i, d in enumerate(kept) if i != odd)
    if len(cal_pct) < 2 or not own:
        return [], []
    reach = UNSEEN_SD * max(statistics.stdev(cal_pct), floor_pct)
    return (own if own[-1] > max(cal_pct) + reach else []), (own if own[0] < min(cal_pct) - reach else [])


def window_residuals_pct(values: Sequence[float]) -> tuple[list[float], int]:
    """Each window value's distance from the window's own level (%, of that level), oldest first, and the
    residuals' degrees of freedom: around the mean below DETREND_MIN_RUNS runs, else around a least-squares
    line in run order (a creep or a drift is not noise). ([], 0) for fewer than two values."""
    n = len(values)
    if n < 2:
        return [], 0
    mean = math.fsum(values) / n
    slope = 0.0
    if n >= DETREND_MIN_RUNS:
        mid = (n - 1) / 2.0
        slope = math.fsum((i - mid) * (v - mean) for i, v in enumerate(values)) / math.fsum(
            (i - mid) ** 2 for i in range(n)
        )
    level = [mean + slope * (i - (n - 1) / 2.0) for i in range(n)]
    if any(lv <= 0 for lv in level):
        return [], 0
    return [100.0 * (v - lv) / lv for v, lv in zip(values, level, strict=True)], n - (2 if slope else 1)


MOVED_Z = 3.0  # a window level or trend this many standard errors from the calibration's has moved
QUARTILE_VARIANCE = 1.857  # n * var(sample quartile) / sd^2 for normal values: 0.1875 / phi(0.674)^2


def window_moved(
    cal_pct: Sequence[float],
    win: Sequence[float],
    centre: float,
    residuals: Sequence[float],
    win_df: int,
    slope: float | None = None,
) -> bool:
    """Whether the window's level (both its quartiles) or its trend (Theil-Sen, over the window) lies more than
    MOVED_Z standard errors from the calibration's level: then it is location (an environment change, a
    drift, a creep) and only its shape may join the reference. Otherwise its processes join where they
    are, and the reference stays exchangeable with the fresh processes (the rank bound's premise)."""
    n_c, n_w = len(cal_pct), len(win)
    mean_c = math.fsum(cal_pct) / n_c
    var = (math.fsum((d - mean_c) ** 2 for d in cal_pct) + math.fsum(r * r for r in residuals)) / max(
        1, n_c - 1 + win_df
    )
    sd = math.sqrt(var)
    if sd <= 0:
        return False
    # the level moved when both quartiles did: a slower mode in 40% of the processes lifts the median now and
    # then (in 18% of 30-run windows it holds most of them) while its faster processes still sit at the
    # calibration's level; taking the window as moved then dropped the mode from the reference and failed
    # unchanged code (issue 31: a per-case mode the calibration missed, 4-6 of 50 runs at 100 cases)
    placed = [100.0 * (v - centre) / centre for v in win]
    # two or three runs (a window restarting after a recalibration): their lowest and highest stand for the
    # quartiles. Their median alone, which a 40% mode holds in 35% of 3-run windows, took a window with two
    # slow processes for moved: the mode left the reference, and its fast process, placed as shape 3% below the
    # calibration's median, was named a faster mode (issue 31: a user who recalibrated on the note was asked
    # again, 61 calibrations in 20 replays of the missed per-case mode)
    low, high = statistics.quantiles(placed, n=4)[::2] if n_w >= 4 else (min(placed), max(placed))
    bound = MOVED_Z * sd * math.sqrt((QUARTILE_VARIANCE if n_w >= 4 else math.pi / 2) / n_w + 1.0 / n_c)
    if low - mean_c > bound or mean_c - high > bound:
        return True
    if n_w < DETREND_MIN_RUNS:
        return False
    slope = theil_sen_slope(win) if slope is None else slope
    return abs(100.0 * slope * (n_w - 1) / centre) > MOVED_Z * sd * math.sqrt(12.0 / n_w)


def theil_sen_slope(values: Sequence[float]) -> float:
    """The median of the slopes between every pair of values (in run order): a trend one odd run cannot
    make. numpy: 435 pairs for a window of 30, per case and metric, at every gate."""
    import numpy as np

    y = np.asarray(values, dtype=np.float64)
    i, j = np.triu_indices(len(y), k=1)
    return float(np.median((y[j] - y[i]) / (j - i)))


def window_shape_pct(values: Sequence[float], slope: float | None = None) -> list[float]:
    """Each window value's distance from the window's MEDIAN line (%, oldest first): its median, or with
    DETREND_MIN_RUNS or more a Theil-Sen line. Robust where `window_residuals_pct` is exact: a slower mode
    in 40% of the processes stays 3% above a median that sits in the faster mode (it is shape, and the rank
    bound must see it), while a window that is 3% slow throughout, or creeps, has its level and trend
    removed (they are location)."""
    n = len(values)
    if slope is None:
        slope = theil_sen_slope(values) if n >= DETREND_MIN_RUNS else 0.0
    level = statistics.median(v - slope * i for i, v in enumerate(values))
    out = []
    for i, v in enumerate(values):
        at = level + slope * i
        out.append(100.0 * (v - at) / at if at > 0 else 0.0)
    return out


def _isolated_index(order: Sequence[int], values: Sequence[float], least: int = EXCLUSION_MIN_PROCESSES) -> int | None:
    """The index of the one process that stands apart from all the others (farther from its nearest
    neighbour than the others spread in all), among at least `least`; None otherwise. `order`: the indices
    of `values` sorted by value. A mode has neighbours; an isolated wild process has none."""
    if len(order) < max(least, MIN_REFERENCE_PROCESSES + 1):
        return None
    v = [values[i] for i in order]
    low_gap, high_gap = v[1] - v[0], v[-1] - v[-2]
    if high_gap >= low_gap and high_gap > v[-2] - v[0]:
        return order[-1]
    if low_gap > high_gap and low_gap > v[-1] - v[1]:
        return order[0]
    return None


def without_isolated(values: Sequence[float], min_processes: int = EXCLUSION_MIN_PROCESSES) -> list[float]:
    """`values` sorted, without the one process that stands apart from all others, when there are at least
    `min_processes` (baseline/review.py names such a calibration process)."""
    kept = sorted(values)
    odd = _isolated_index(range(len(kept)), kept, min_processes)
    return kept if odd is None else kept[:odd] + kept[odd + 1 :]
