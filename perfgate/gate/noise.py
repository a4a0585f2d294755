"""A case's between-process noise, per metric: the baseline's calibration processes plus the process values of
recent passing runs on the tracked branch (the noise window, read from the history).

Six calibration processes estimate a spread poorly and a frozen estimate never learns; every passing run
on main is another draw of the same unchanged code, so the window keeps the estimate current and its
degrees of freedom high. No process is left out while the reference is small: with six processes, two
in a second mode look "wild" to any robust rule, the noise collapses, and that mode then fails at gate
time (measured on the H100: a held-out attention case at 0.14% noise while unchanged processes spread
-2.3..+0.1%). With 20 or more processes, at most one in 20 may be left out, and only a process that stands
apart from all the others (farther from its nearest neighbour than the others spread in all): a mode
has neighbours, an isolated wild process (a 12 us add measured at 23 us once in 28 processes) has none.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from perfgate.model import NoiseEstimate, Timer

DEFAULT_NOISE_FLOOR_PCT = {Timer.CUDA_EVENT: 0.1, Timer.HOST: 0.5, Timer.PYTEST_BENCHMARK: 0.5}
MIN_REFERENCE_PROCESSES = 3  # fewer cannot estimate a spread: the case is uncalibrated
EXCLUSION_MIN_PROCESSES = 20  # below this no process is ever left out
EXCLUSION_SHARE = 20  # at most one process in this many may be left out
EXTREMES_KEPT = 8  # reference processes kept per side for the rank bound (gate/decision.py)


def noise_floor(timer: Timer, floor_pct: float | None) -> float:
    return DEFAULT_NOISE_FLOOR_PCT[timer] if floor_pct is None else floor_pct


def estimate_noise(calibration: Sequence[float], window: Sequence[float], floor_pct: float) -> NoiseEstimate | None:
    """The relative spread of calibration and window process values together; None for fewer than three."""
    values = [float(v) for v in (*calibration, *window)]
    if len(values) < MIN_REFERENCE_PROCESSES:
        return None
    kept = without_isolated(values)
    mean = math.fsum(kept) / len(kept)
    centre = math.fsum(calibration) / len(calibration) if calibration else mean
    if mean <= 0 or centre <= 0:
        return None
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in kept) / (len(kept) - 1))
    deviations = sorted(100.0 * (v - centre) / centre for v in kept)
    return NoiseEstimate(
        max(100.0 * sd / mean, floor_pct),
        len(kept) - 1,
        len(window),
        len(values) - len(kept),
        upper_pct=tuple(round(d, 6) for d in deviations[::-1][:EXTREMES_KEPT]),
        lower_pct=tuple(round(d, 6) for d in deviations[:EXTREMES_KEPT]),
    )


def without_isolated(values: Sequence[float], min_processes: int = EXCLUSION_MIN_PROCESSES) -> list[float]:
    """`values` without the processes that stand apart from all others (module docstring); none below
    `min_processes`, at most one in EXCLUSION_SHARE (one, when asked about fewer than that)."""
    kept = sorted(values)
    if len(kept) < max(min_processes, MIN_REFERENCE_PROCESSES + 1):
        return kept
    for _ in range(max(1, len(values) // EXCLUSION_SHARE)):
        low_gap, high_gap = kept[1] - kept[0], kept[-1] - kept[-2]
        if high_gap >= low_gap and high_gap > kept[-2] - kept[0]:
            kept.pop()
        elif low_gap > high_gap and low_gap > kept[-1] - kept[1]:
            kept.pop(0)
        else:
            break
    return kept
