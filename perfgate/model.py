"""The records that flow between layers: measure -> stats -> store -> compare -> report.

Frozen dataclasses with units in field names; enums for closed sets. `None` means "not measured",
never 0. What the gate says (Direction, Verdict, Comparison, Finding, GateResult, ...) is perfgate/verdicts.py's,
a run's facts (Environment, RunKind, RunInfo, UnmeasuredTest, ...) perfgate/runs.py's; both are re-exported
here: every `from perfgate.model import X` works.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Any

from perfgate.compiled.records import CompiledCase
from perfgate.runs import AB_KINDS, Environment, RunInfo, RunKind, TestOutcome, UnmeasuredTest
from perfgate.verdicts import (
    STRICT_KINDS,
    AllowedMissing,
    CommonShift,
    Comparison,
    Direction,
    Finding,
    FindingKind,
    GateResult,
    Verdict,
)

# the gate's records (verdicts.py) and a run's (runs.py), re-exported: importers keep `from perfgate.model import X`
__all__ = [
    "AB_KINDS",
    "STRICT_KINDS",
    "AllowedMissing",
    "CommonShift",
    "Comparison",
    "Direction",
    "Environment",
    "Finding",
    "FindingKind",
    "GateResult",
    "RunInfo",
    "RunKind",
    "TestOutcome",
    "UnmeasuredTest",
    "Verdict",
]


class MetricKind(str, enum.Enum):
    """How a metric is compared.

    TIMED: many samples per case -> the decision rule on between-process noise (gate/decision.py).
    MEASURED: one reading that wobbles run to run (achieved occupancy, bandwidth, speedup) -> tolerance.
    COUNTER: near-deterministic (registers, spills, DRAM bytes, peak memory) -> tight tolerance.
    DERIVED: computed from another gated metric (GB/s from time); reported, never gated twice.
    """

    TIMED = "timed"
    MEASURED = "measured"
    COUNTER = "counter"
    DERIVED = "derived"


class Timer(str, enum.Enum):
    """What took a case's samples. Cases timed by different timers are never compared."""

    CUDA_EVENT = "cuda_event"
    HOST = "host"  # perfgate's host clock: wall time, calibrated loops of calls (measure/host_clock.py)
    HOST_THREAD_CPU = "host_thread_cpu"  # the same loops on the measuring thread's CPU time (time.thread_time_ns)
    HOST_PROCESS_CPU = "host_process_cpu"  # ... on the process's CPU time, every thread (time.process_time_ns)
    PYTEST_BENCHMARK = "pytest_benchmark"  # imported from pytest-benchmark's JSON: its own calibration and rounds

    @property
    def on_host(self) -> bool:
        """Perfgate's own host timers (wall or CPU time): the machine around a case is part of what they read."""
        return self in (Timer.HOST, Timer.HOST_THREAD_CPU, Timer.HOST_PROCESS_CPU)


class HostTimer(str, enum.Enum):
    """Which host clock times a host case (`host_timer`): the wall clock, or CPU time (measure/host_clock.py)."""

    WALL = "wall"
    THREAD_CPU = "thread_cpu"
    PROCESS_CPU = "process_cpu"

    @property
    def timer(self) -> Timer:
        return {
            HostTimer.WALL: Timer.HOST,
            HostTimer.THREAD_CPU: Timer.HOST_THREAD_CPU,
            HostTimer.PROCESS_CPU: Timer.HOST_PROCESS_CPU,
        }[self]


class GatedMeasure(str, enum.Enum):
    """Which of a case's measures is gated (`gated_measure`; gate/bottleneck.py): its time, its time in SM cycles
    (time x the SM clock each sample ran at), or whichever its bottleneck makes stable."""

    AUTO = "auto"  # cycles for a compute-bound case, time otherwise (declared work against the roofline, or ncu)
    TIME = "time"
    CYCLES = "cycles"


class AbProcess(str, enum.Enum):
    """A/B mode: where the base and head sides run (perfgate/ab/host/)."""

    AUTO = "auto"  # shared unless a tree holds native code
    SHARED = "shared"  # one process, each tree's modules imported side by side
    SEPARATE = "separate"  # a process per tree: any code (CUDA extensions, C++)


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


@dataclass(frozen=True)
class Metric:
    """One value of one metric for one case (and, for profiler metrics, one kernel)."""

    name: str
    value: float
    unit: str
    source: str = "timing"  # timing | nsys | ncu | memory | speedup
    kernel: str = ""  # "" = the whole case; for speedup: the reference's name


@dataclass(frozen=True)
class GpuState:
    """What NVML read while a case was sampled (read only: perfgate never changes GPU settings).

    `throttle_reasons` is the bitwise OR of every NVML clocks-event reason seen; `throttled_fraction`
    the share of polls with a performance-limiting one (power cap, thermal, power brake)."""

    polls: int
    sm_clock_mhz: float | None = None  # median of the polls
    sm_clock_min_mhz: float | None = None
    mem_clock_mhz: float | None = None
    temperature_max_c: float | None = None
    power_median_w: float | None = None
    power_limit_w: float | None = None
    throttle_reasons: int = 0
    throttled_fraction: float = 0.0
    clocks_locked: bool = False  # the user's own runner pinned clocks (applications/locked clocks)
    cooldown_ms: float = 0.0  # waited before sampling, for the power state to settle
    excluded_samples: int = 0  # timing samples dropped because they were taken while throttled


@dataclass(frozen=True)
class CycleStats:
    """A case's samples in SM cycles: each sample's time times the mean SM clock over that very sample, read by a
    clock probe around it (measure/sm_clock.py). A compute-bound kernel's cycles do not move with the clock the
    power cap sets; its time does."""

    median_mcycles: float  # the median over samples of time x clock, in millions of cycles
    clock_median_mhz: float  # the SM clock the samples ran at (median, lowest, highest)
    clock_min_mhz: float
    clock_max_mhz: float
    probed_samples: int  # samples with a clock reading (a probe that missed leaves its sample out)


@dataclass(frozen=True)
class HostState:
    """The machine around a case while it was sampled: on the host clock it is part of what is measured, so a
    change of it (load, CPU frequency, stolen time) is named beside a verdict (gate/findings.py)."""

    load_avg_1m: float  # the 1-minute load average at the end of the case
    cpus: int  # CPUs this process may run on
    threads: int  # threads alive in the measuring process
    cpu_mhz: float | None = None  # mean current frequency of those CPUs (None: not readable here)
    steal_pct: float | None = None  # share of CPU time the hypervisor took during the case (None: not Linux)
    # the measuring thread's CPU time over the wall time of its samples (%): well under 100 when it was preempted
    # (a host case on the wall clock then reads the waits too; host_timer = "thread_cpu" does not)
    cpu_share_pct: float | None = None


@dataclass(frozen=True)
class Speedup:
    """Reference and candidate timed alternately on the same inputs: ratio = reference / candidate."""

    reference: str
    reference_samples_ms: tuple[float, ...]
    median: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class NoiseEstimate:
    """Between-process noise of one metric of one case, resolved when the case was measured (the
    baseline's calibration processes plus the history's noise window; gate/noise.py)."""

    noise_pct: float  # relative standard deviation of one process value (%), floored
    df: int  # degrees of freedom of the estimate
    window_runs: int = 0  # reference processes that came from the history window
    excluded: int = 0  # processes left out as isolated outliers
    # the reference processes furthest above / below the calibration's centre (%, most extreme first): no
    # process of unchanged code that far out makes a failure, whatever the noise's shape (gate/decision.py)
    upper_pct: tuple[float, ...] = ()
    lower_pct: tuple[float, ...] = ()
    processes: int = 0  # reference processes behind the extremes (0: written before it was kept; df + 1)
    # the window's own processes among them, as they entered the reference (most extreme first): the rank bound
    # over these alone holds when the calibration did not see the machine as the gate does (a mode it missed)
    window_upper_pct: tuple[float, ...] = ()
    window_lower_pct: tuple[float, ...] = ()


@dataclass(frozen=True)
class CaseThresholds:
    """The thresholds that applied to one case, resolved once when it was measured and stored with it,
    so re-gating a stored run (`perfgate compare`) reaches the plugin's verdicts."""

    time_pct: float = 3.0  # the time threshold for an uncalibrated baseline
    time_pct_explicit: bool = False  # set by an override or the marker: it also floors a calibrated case
    min_effect_pct: float = 1.0  # the smallest change a calibrated case calls, however quiet it is
    metrics: tuple[tuple[str, float], ...] = ()  # explicit metric thresholds; the catalogue's otherwise
    min_speedup: float | None = None
    false_alarm_pct: float = 1.0  # the run's false-alarm budget, divided over its gated tests
    time_noise: NoiseEstimate | None = None  # None: from the baseline's calibration alone
    speedup_noise: NoiseEstimate | None = None
    gated_measure: GatedMeasure = GatedMeasure.AUTO  # time or SM cycles (gate/bottleneck.py)
    cycles_noise: NoiseEstimate | None = None

    def metric_pct(self, name: str) -> float | None:
        """Explicit threshold for a metric, or None (the catalogue decides)."""
        return dict(self.metrics).get(name)


class CodeRole(str, enum.Enum):
    """What a piece of a case's code is (A/B mode's provenance, perfgate/ab/provenance.py)."""

    MEASURED = "measured"  # the callable measured (its innermost function, through wrappers)
    REFERENCE = "reference"  # the reference callable
    MODULE = "module"  # a module of the project imported by the side, first seen at this case
    TEST = "test"  # the test module that measured the case (baseline mode: gate/untouched.py)


@dataclass(frozen=True)
class CodeSource:
    """Where one piece of the code a case ran came from: the file, and which checkout holds it."""

    role: CodeRole
    name: str  # a module's dotted name; a callable's "module:qualname"
    path: str  # relative to the checkout holding it; absolute outside every checkout; "" for built-in code
    tree: str = ""  # "base", "head" or "checkout" (the one perfgate ran in); "" outside them
    loader: str = ""  # the loader, or the import hook that served it (and where it pointed)


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
    profile_notes: tuple[str, ...] = ()  # not failures: "ncu: no kernel to profile (copy-engine work)"
    thresholds: CaseThresholds = CaseThresholds()
    gpu_state: GpuState | None = None
    host_state: HostState | None = None
    autotune: tuple[tuple[str, str], ...] = ()  # (Triton kernel, the config its autotuner chose)
    speedup: Speedup | None = None
    confirmation_medians_ms: tuple[float, ...] = ()  # medians of fresh processes that re-measured it
    confirmation_speedups: tuple[float, ...] = ()  # their speedups against the reference, when it has one
    confirmation_memory: tuple[float, ...] = ()  # their peak allocated bytes per call, when memory is measured
    nodeid: str = ""  # the pytest test that measured it
    location: tuple[str, int] | None = None  # (test file, 1-based line) for CI annotations
    device_uuid: str = ""  # the GPU that measured it (one per xdist worker)
    calls_per_sample: int = 1  # calls timed together per sample (host clock loop, pedantic iterations)
    group: str = ""  # pytest-benchmark's `benchmark.group` / marker group
    extra_info: tuple[tuple[str, Any], ...] = ()  # pytest-benchmark's `benchmark.extra_info` (JSON values)
    params: tuple[tuple[str, Any], ...] = ()  # the test's parameters (pytest-benchmark's `params`; JSON values)
    compiled: CompiledCase | None = None  # the kernels one call launched, as compiled (perfgate/compiled/)
    phases_s: tuple[tuple[str, float], ...] = ()  # where measuring it went (measure/phases.py); not stored
    code: tuple[CodeSource, ...] = ()  # A/B mode: where the code it measured came from (ab/provenance.py)
    cycles: CycleStats | None = None  # its samples in SM cycles (None: no clock probe, e.g. the host clock)
    confirmation_mcycles: tuple[float, ...] = ()  # the confirmation processes' median cycles (Mcycles)

    def with_metrics(
        self, extra: tuple[Metric, ...], errors: tuple[str, ...] = (), notes: tuple[str, ...] = ()
    ) -> CaseResult:
        return replace(
            self,
            metrics=self.metrics + extra,
            profile_errors=self.profile_errors + errors,
            profile_notes=self.profile_notes + notes,
        )

    @property
    def process_medians_ms(self) -> tuple[float, ...]:
        """This run's median first, then the confirmation processes'."""
        return (self.timing.median_ms, *self.confirmation_medians_ms)

    @property
    def time_ms(self) -> float:
        """The case's time in this run, the one number every output shows ("current"): the mean of its
        processes' medians (this process, then any confirmation process), as the baseline's time is the
        mean of its calibration processes' (docs/decision-rule.md)."""
        values = self.process_medians_ms
        return sum(values) / len(values)

    @property
    def process_mcycles(self) -> tuple[float, ...]:
        """This run's median cycles first, then the confirmation processes' (empty without a clock probe)."""
        return (self.cycles.median_mcycles, *self.confirmation_mcycles) if self.cycles is not None else ()

    @property
    def process_speedups(self) -> tuple[float, ...]:
        """This run's speedup first, then the confirmation processes' (empty without a reference)."""
        return (self.speedup.median, *self.confirmation_speedups) if self.speedup is not None else ()


@dataclass(frozen=True)
class Run:
    info: RunInfo
    environment: Environment
    results: tuple[CaseResult, ...]
    run_id: int | None = None
