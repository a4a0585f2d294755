"""A committed baseline's records: its cases (calibration process medians, samples or their quantile
summary, metrics), the updates that wrote it, and the file itself (perfgate/baseline/__init__.py says what
the file holds and why; baseline/read.py validates it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from perfgate.compiled.records import CompiledCase
from perfgate.model import Environment, GpuState, HostState, Metric, Timer

FORMAT = "perfgate-baseline"
VERSION = 2
READABLE_VERSIONS = (1, 2)
MAX_UPDATES_KEPT = 20
MIN_CALIBRATION_PROCESSES = 3  # fewer process medians cannot estimate a spread
SAMPLE_SUMMARY_POINTS = 33  # quantiles at 0, 1/32, ..., 1: minimum, quartiles, median and maximum exact
MAX_SAMPLE_COUNT = 1_000_000  # max_samples allows no more
MAX_MCYCLES = 1e12  # MAX_TIME_MS at 10 GHz: no measured sample holds more cycles
_ENV_FIELDS = tuple(Environment.__dataclass_fields__)


@dataclass(frozen=True)
class BaselineCase:
    case_id: str
    timer: Timer
    median_ms: float
    samples_ms: tuple[float, ...]
    metrics: tuple[Metric, ...] = ()
    process_medians_ms: tuple[float, ...] = ()  # one per calibration process (calibrated cases)
    noise_pct: float | None = None  # between-process noise, written for review (recomputed when gating)
    threshold_pct: float | None = None  # what the case can detect, written for review
    autotune: tuple[tuple[str, str], ...] = ()
    gpu_state: GpuState | None = None
    process_speedups: tuple[float, ...] = ()  # one per calibration process, for cases with a reference
    speedup_noise_pct: float | None = None
    speedup_threshold_pct: float | None = None
    # the calibration process that ran the Triton autotuner (kept for review, not for the decision: a process
    # that autotuned is not like a gate process, whose autotuners are pinned)
    autotune_process_median_ms: float | None = None
    autotune_process_speedup: float | None = None
    host_state: HostState | None = None  # the machine while the representative process measured it
    sample_points_ms: tuple[float, ...] = ()  # the quantile summary `samples_ms` was expanded from, as read
    compiled: CompiledCase | None = None  # its compiled kernels, for the static gate (gate/static.py)
    # one per calibration process: its median in SM cycles (time x the clock each sample ran at), when every
    # process read the clock (measure/sm_clock.py); what a compute-bound case is gated on (gate/bottleneck.py)
    process_mcycles: tuple[float, ...] = ()
    mcycles_noise_pct: float | None = None
    mcycles_threshold_pct: float | None = None
    # "" when perfgate measured it; else the file it was imported from (a pytest-benchmark saved run:
    # baseline/imported.py), shown as such until perfgate measures the case into the baseline
    imported_from: str = ""

    @property
    def calibrated(self) -> bool:
        return len(self.process_medians_ms) >= MIN_CALIBRATION_PROCESSES

    def time_values(self) -> tuple[float, ...]:
        """The calibration's process medians (an uncalibrated case: its one median)."""
        return self.process_medians_ms or (self.median_ms,)

    @property
    def time_ms(self) -> float:
        """The baseline's time for this case, the one number every output shows and the gate compares with:
        the mean of its calibration processes' medians (the decision rule's centre M, docs/decision-rule.md)."""
        values = self.time_values()
        return sum(values) / len(values)

    def speedup_values(self) -> tuple[float, ...]:
        """The calibration's process speedups as reciprocals (lower is better, like time); () without one."""
        return tuple(1.0 / s for s in self.process_speedups)

    def cycle_values(self) -> tuple[float, ...]:
        """The calibration's process medians in SM cycles (Mcycles); () when it read no clock."""
        return self.process_mcycles


@dataclass(frozen=True)
class Update:
    at: str
    by: str
    commit: str
    reason: str
    cases: int
    calibrated_runs: int = 0  # > 0: written by `perfgate calibrate` from this many processes
    dirty: bool = False  # the tree had uncommitted changes: `commit` is not exactly the code measured


@dataclass(frozen=True)
class Baseline:
    path: Path
    environment: Environment
    cases: dict[str, BaselineCase]
    updates: tuple[Update, ...] = ()

    @property
    def calibrated(self) -> bool:
        return bool(self.cases) and all(c.calibrated for c in self.cases.values())


def summary_points(samples_ms: Sequence[float]) -> tuple[float, ...]:
    """SAMPLE_SUMMARY_POINTS quantiles of the samples, at equally spaced probabilities from 0 to 1."""
    import numpy as np

    probs = np.linspace(0.0, 1.0, SAMPLE_SUMMARY_POINTS)
    return tuple(float(v) for v in np.quantile(np.asarray(samples_ms, np.float64), probs))


def expand_quantiles(points: Sequence[float], count: int) -> tuple[float, ...]:
    """`count` samples whose quantiles at the points' probabilities are the points (sorted; linear between)."""
    import numpy as np

    knots = np.linspace(0.0, 1.0, len(points))
    return tuple(float(v) for v in np.interp(np.linspace(0.0, 1.0, count), knots, np.asarray(points, np.float64)))
