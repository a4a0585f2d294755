"""The records that flow between layers: measure -> stats -> store -> compare -> report.

Frozen dataclasses with units in field names; enums for closed sets. `None` means "not measured",
never 0.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Direction(str, enum.Enum):
    """Which way is better for a metric."""

    LOWER = "lower_is_better"
    HIGHER = "higher_is_better"


class MetricKind(str, enum.Enum):
    """How a metric is compared.

    TIMED: many samples per case -> significance test + threshold.
    MEASURED: one profiler reading that wobbles run to run (achieved occupancy, bandwidth) -> tolerance.
    COUNTER: near-deterministic (registers, spills, DRAM bytes, theoretical occupancy) -> tight tolerance.
    DERIVED: computed from another gated metric (GB/s from time); reported, never gated twice.
    """

    TIMED = "timed"
    MEASURED = "measured"
    COUNTER = "counter"
    DERIVED = "derived"


class Verdict(str, enum.Enum):
    REGRESSED = "regressed"
    IMPROVED = "improved"
    UNCHANGED = "unchanged"
    NEW = "new"
    MISSING = "missing"
    NOT_COMPARABLE = "not comparable"
    PROFILE_FAILED = "profile failed"


class Timer(str, enum.Enum):
    CUDA_EVENT = "cuda_event"
    HOST = "host"


@dataclass(frozen=True)
class TimingStats:
    """Summary of one case's timed samples (all in milliseconds)."""

    timer: Timer
    n_samples: int
    median_ms: float
    mean_ms: float
    stdev_ms: float
    min_ms: float
    max_ms: float
    q1_ms: float
    q3_ms: float
    gbps: float | None = None
    tflops: float | None = None

    @property
    def iqr_ms(self) -> float:
        return self.q3_ms - self.q1_ms

    @property
    def cv_pct(self) -> float:
        return 100.0 * self.stdev_ms / self.mean_ms if self.mean_ms else 0.0


@dataclass(frozen=True)
class Metric:
    """One value of one metric for one case (and, for profiler metrics, one kernel)."""

    name: str
    value: float
    unit: str
    source: str = "timing"  # timing | nsys | ncu
    kernel: str = ""  # "" = the whole case


@dataclass(frozen=True)
class CaseResult:
    """Everything measured for one perf case in one run."""

    case_id: str
    timing: TimingStats
    samples_ms: tuple[float, ...]
    metrics: tuple[Metric, ...] = ()
    bytes_moved: int | None = None
    flops: int | None = None
    profile_errors: tuple[str, ...] = ()

    def with_metrics(self, extra: tuple[Metric, ...], errors: tuple[str, ...] = ()) -> "CaseResult":
        from dataclasses import replace

        return replace(self, metrics=self.metrics + extra, profile_errors=self.profile_errors + errors)


@dataclass(frozen=True)
class Environment:
    """What the numbers were measured on. `comparability_key` decides if two runs may be compared."""

    device_kind: str  # "cuda" or "host"
    device_name: str
    device_uuid: str = ""
    compute_capability: str = ""
    driver_version: str = ""
    cuda_version: str = ""
    torch_version: str = ""
    triton_version: str = ""
    python_version: str = ""
    perfgate_version: str = ""
    hostname: str = ""
    platform: str = ""

    def comparability_key(self) -> tuple[str, str, str]:
        """Runs on another device model (or another timer) are not comparable."""
        return (self.device_kind, self.device_name, self.compute_capability)

    def drift_from(self, other: "Environment") -> dict[str, tuple[str, str]]:
        """Fields that differ (comparable, but worth showing next to a verdict)."""
        names = ("driver_version", "cuda_version", "torch_version", "triton_version", "python_version")
        return {n: (getattr(other, n), getattr(self, n)) for n in names if getattr(other, n) != getattr(self, n)}


@dataclass(frozen=True)
class RunInfo:
    started_at: str  # ISO 8601 UTC
    finished_at: str
    git_commit: str = ""
    git_branch: str = ""
    git_dirty: bool = False
    hostname: str = ""
    argv: str = ""
    profile_settings: str = ""  # e.g. ncu clock/cache control, recorded with results


@dataclass(frozen=True)
class Run:
    info: RunInfo
    environment: Environment
    results: tuple[CaseResult, ...]
    run_id: int | None = None


@dataclass(frozen=True)
class Threshold:
    """How much worse a metric may get before it counts, and the significance level for TIMED."""

    pct: float
    alpha: float = 0.01


@dataclass(frozen=True)
class Comparison:
    case_id: str
    metric: str
    unit: str
    direction: Direction
    verdict: Verdict
    kernel: str = ""
    baseline: float | None = None
    current: float | None = None
    change_pct: float | None = None
    ci_low_pct: float | None = None
    ci_high_pct: float | None = None
    p_value: float | None = None
    threshold_pct: float | None = None
    note: str = ""


@dataclass(frozen=True)
class GateResult:
    comparisons: tuple[Comparison, ...]
    current_env: Environment | None = None
    baseline_env: Environment | None = None
    # per regressed case: the profiler comparisons of its kernels, moved ones first (the "why")
    explanations: dict[str, tuple["Comparison", ...]] = field(default_factory=dict)
    fail_on: frozenset[Verdict] = frozenset({Verdict.REGRESSED})

    @property
    def failed(self) -> bool:
        return any(c.verdict in self.fail_on for c in self.comparisons)

    def by_verdict(self, verdict: Verdict) -> tuple[Comparison, ...]:
        return tuple(c for c in self.comparisons if c.verdict is verdict)
