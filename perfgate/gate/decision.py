"""The time verdict: the current process medians against the baseline's between-process noise.

Within-run samples understate how much a median moves from one process to the next (power state,
autotuning, allocation), so a calibrated baseline keeps one median per calibration process and the
rule asks: is this run's median outside what another process of the unchanged code would give?

With N baseline process medians (centre M, relative standard deviation s, floored) and the pooled centre c
of k current process medians (this run, then any confirmation runs), the change d = 100 (c - M) / M has
standard error se = s * sqrt(1/k + 1/N) and, for unchanged code, d / se follows Student's t with N-1
degrees of freedom (a prediction interval for new process medians). The pooled centre is robust to one
odd process: for k = 2 the smaller of the two (a regression must show in both processes), for k >= 3
their median. The case calls

    REGRESSED     d >  T,  T = max(floor, t(1 - a, N-1) * se)
    IMPROVED      d < -T
    INCONCLUSIVE  d >  b and d + b > T,  b = t(0.95, N-1) * se
                  (above the noise, and a regression of T cannot be ruled out)
    UNCHANGED     otherwise

where a is `alpha` for one process and `confirm_alpha` once confirmation runs joined, and floor is the
minimum effect (`min_effect_pct`, or an explicit per-case `threshold_pct`). T is what the case can
detect ("detects >= T%"). docs/decision-rule.md has the derivation and the measured rates.

An uncalibrated baseline (fewer than 3 process medians) keeps the first rule: Mann-Whitney p < alpha
on the samples and the change beyond `threshold_pct`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from perfgate.model import CaseThresholds, Timer, Verdict
from perfgate.stats import mann_whitney_p, percent_change, relative_sd_pct, t_quantile

MIN_CALIBRATION_PROCESSES = 3
DEFAULT_NOISE_FLOOR_PCT = {Timer.CUDA_EVENT: 0.1, Timer.HOST: 0.5}
INCONCLUSIVE_CONFIDENCE = 0.95
OUTLIER_MADS = 5.0


@dataclass(frozen=True)
class DecisionSettings:
    alpha: float = 0.01
    confirm_alpha: float = 0.001
    noise_floor_pct: float | None = None


@dataclass(frozen=True)
class BaselineTiming:
    """What the rule needs of a baseline case."""

    median_ms: float
    samples_ms: tuple[float, ...]
    process_medians_ms: tuple[float, ...] = ()
    timer: Timer = Timer.CUDA_EVENT


@dataclass(frozen=True)
class TimeDecision:
    verdict: Verdict
    change_pct: float | None
    threshold_pct: float
    calibrated: bool
    processes: int
    noise_pct: float | None = None
    score: float | None = None
    p_value: float | None = None


def noise_pct(process_medians_ms: Sequence[float], timer: Timer, floor_pct: float | None = None) -> float | None:
    """Relative between-process standard deviation (%), floored (five quiet processes do not prove a case
    is quieter than the clock can resolve), of the processes that are not wild outliers (`outliers`)."""
    values = [v for i, v in enumerate(process_medians_ms)
              if i not in outliers(process_medians_ms, timer, floor_pct)]
    sd = relative_sd_pct(values)
    if sd is None:
        return None
    return max(sd, _floor(timer, floor_pct))


def outliers(process_medians_ms: Sequence[float], timer: Timer, floor_pct: float | None = None) -> frozenset[int]:
    """Indexes of process medians more than OUTLIER_MADS robust deviations (1.4826 MAD, at least the noise
    floor) from the median, kept only while three or more processes remain.

    One wild calibration process (measured on the H100: a 12 us add at 23 us in 1 process of 6) would
    otherwise widen the case's threshold tenfold for good. Leaving it out of the noise is safe because a
    wild process at gate time is what confirmation is for: a regression must show in fresh processes.
    Spread that is real (cuBLAS switching between two speeds) has a large MAD and is kept.
    """
    if len(process_medians_ms) <= MIN_CALIBRATION_PROCESSES:
        return frozenset()
    centre = statistics.median(process_medians_ms)
    mad = statistics.median(abs(v - centre) for v in process_medians_ms)
    scale = 1.4826 * max(mad, _floor(timer, floor_pct) / 100.0 * abs(centre))
    out = frozenset(i for i, v in enumerate(process_medians_ms) if abs(v - centre) > OUTLIER_MADS * scale)
    return out if len(process_medians_ms) - len(out) >= MIN_CALIBRATION_PROCESSES else frozenset()


def _floor(timer: Timer, floor_pct: float | None) -> float:
    return DEFAULT_NOISE_FLOOR_PCT[timer] if floor_pct is None else floor_pct


def is_calibrated(base: BaselineTiming) -> bool:
    return len(base.process_medians_ms) >= MIN_CALIBRATION_PROCESSES


def decide_time(base: BaselineTiming, current_medians_ms: Sequence[float], current_samples_ms: Sequence[float],
                thresholds: CaseThresholds, settings: DecisionSettings) -> TimeDecision:
    """The verdict for one case's time (see the module docstring)."""
    if not current_medians_ms:
        raise ValueError("no current process medians")
    if is_calibrated(base):
        return _calibrated(base, current_medians_ms, thresholds, settings)
    return _uncalibrated(base, current_medians_ms, current_samples_ms, thresholds, settings)


def _calibrated(base: BaselineTiming, medians: Sequence[float], thresholds: CaseThresholds,
                settings: DecisionSettings) -> TimeDecision:
    procs = sorted(base.process_medians_ms)
    n, k = len(procs), len(medians)
    centre = _median(procs)
    s = noise_pct(procs, base.timer, settings.noise_floor_pct)
    assert s is not None  # n >= 3
    change = percent_change(centre, pooled(medians))
    se = s * math.sqrt(1.0 / k + 1.0 / n)
    alpha = settings.alpha if k == 1 else settings.confirm_alpha
    floor = thresholds.time_pct if thresholds.time_pct_explicit else thresholds.min_effect_pct
    threshold = max(floor, t_quantile(1.0 - alpha, n - 1) * se)
    band = t_quantile(INCONCLUSIVE_CONFIDENCE, n - 1) * se  # the 95% noise band of the change
    verdict = Verdict.UNCHANGED
    if change is not None:
        if change > threshold:
            verdict = Verdict.REGRESSED
        elif change < -threshold:
            verdict = Verdict.IMPROVED
        elif change > band and change + band > threshold:
            verdict = Verdict.INCONCLUSIVE  # above the noise, and a regression of T cannot be ruled out
    score = change / se if change is not None and se > 0 else None
    return TimeDecision(verdict, change, threshold, True, k, noise_pct=s, score=score)


def _uncalibrated(base: BaselineTiming, medians: Sequence[float], samples: Sequence[float],
                  thresholds: CaseThresholds, settings: DecisionSettings) -> TimeDecision:
    p = mann_whitney_p(base.samples_ms, samples)
    change = percent_change(base.median_ms, pooled(medians))
    threshold = thresholds.time_pct
    verdict = Verdict.UNCHANGED
    if change is not None and p < settings.alpha:
        if change > threshold:
            verdict = Verdict.REGRESSED
        elif change < -threshold:
            verdict = Verdict.IMPROVED
    return TimeDecision(verdict, change, threshold, False, len(medians), p_value=p)


def pooled(medians: Sequence[float]) -> float:
    """The current time from k process medians: one odd process (a noisy neighbour, a lucky boost) must
    not decide, so two must agree (the smaller) and three or more vote (the median)."""
    if len(medians) == 1:
        return float(medians[0])
    if len(medians) == 2:
        return float(min(medians))
    return _median(sorted(medians))


def _median(sorted_values: Sequence[float]) -> float:
    n = len(sorted_values)
    mid = n // 2
    return float(sorted_values[mid]) if n % 2 else (sorted_values[mid - 1] + sorted_values[mid]) / 2.0
