"""The records that flow between layers: measure -> stats -> store -> compare -> report.

Frozen dataclasses with units in field names; enums for closed sets. `None` means "not measured",
never 0.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field, replace
from typing import Any

from perfgate.compiled.records import CompiledCase


class Direction(str, enum.Enum):
    """Which way is better for a metric."""

    LOWER = "lower_is_better"
    HIGHER = "higher_is_better"


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


class Verdict(str, enum.Enum):
    REGRESSED = "regressed"
    IMPROVED = "improved"
    UNCHANGED = "unchanged"
    INCONCLUSIVE = "inconclusive"  # above the noise band, below what the case can call a regression
    BELOW_TARGET = "below target"  # speedup against the reference below min_speedup
    NEW = "new"
    MISSING = "missing"
    NOT_COMPARABLE = "not comparable"
    PROFILE_FAILED = "profile failed"


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


class TestOutcome(str, enum.Enum):
    """How a collected perf test ended when it measured nothing (strict mode reads these)."""

    __test__ = False  # not a pytest test class, whatever its name says

    SKIPPED = "skipped"
    FAILED = "failed"
    ERROR = "error"


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
    # the host CPU (measure/machine.py), for host-timed runs what device_name is made from; "" when not
    # recorded (perfgate <= 0.2.0)
    cpu_brand: str = ""
    cpu_model: str = ""  # "family 6 model 143", "implementer 0x41 part 0xd0c"
    cpu_cores: str = ""  # logical cores, as text like every environment field
    cpu_caches: str = ""  # "L2 2 MiB, L3 32 MiB"
    os_release: str = ""  # "Linux 6.8.0"

    def comparability_key(self) -> tuple[str, str, str]:
        """Runs on another device model (or another timer) are not comparable."""
        return (self.device_kind, self.device_name, self.compute_capability)

    def comparable_with(self, other: Environment) -> bool:
        """Same device model and timer; a host baseline of perfgate <= 0.2.0, keyed by the bare brand string,
        stays comparable with today's name for that brand (which may add the CPU's model id)."""
        if self.comparability_key() == other.comparability_key():
            return True
        if self.device_kind != "host" or other.device_kind != "host":
            return False
        old, new = (self, other) if not self.cpu_model else (other, self)
        return not old.cpu_model and not old.cpu_brand and bool(new.cpu_brand) and old.device_name == new.cpu_brand


@dataclass(frozen=True)
class UnmeasuredTest:
    """A collected perf test that ended without measuring (skipped, failed, errored)."""

    nodeid: str
    outcome: TestOutcome
    reason: str = ""


class RunKind(str, enum.Enum):
    """Why a run was made (stored with it: the noise of a case is read from gate runs only; an A/B run's
    two sides stay out of trends, change points and the noise window unless asked for)."""

    GATE = "gate"  # pytest --perfgate
    CALIBRATION = "calibration"  # one of perfgate calibrate's fresh processes
    CONFIRMATION = "confirmation"  # a fresh process re-measuring suspects (not stored today)
    IMPORT = "import"  # perfgate import-benchmark
    AB_BASE = "ab-base"  # A/B mode: the base commit's side (an older commit, measured beside the head)
    AB_HEAD = "ab-head"  # A/B mode: the head's side, gated against the base (its verdicts are stored)


AB_KINDS = (RunKind.AB_BASE, RunKind.AB_HEAD)


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
    run_uid: str = ""  # stable identity across machines: merging histories twice adds nothing
    unmeasured: tuple[UnmeasuredTest, ...] = ()
    kind: RunKind | None = RunKind.GATE  # None: stored before run kinds were recorded
    ab_pair: str = ""  # A/B mode: the identity both sides of one comparison share ("" for any other run)
    ab_anchor: bool = False  # A/B mode against the baseline's calibration commit (perfgate ab --anchor)


@dataclass(frozen=True)
class Run:
    info: RunInfo
    environment: Environment
    results: tuple[CaseResult, ...]
    run_id: int | None = None


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
    threshold_pct: float | None = None  # what each process must exceed (T)
    noise_pct: float | None = None  # between-process noise (calibrated cases)
    score: float | None = None  # change in units of the noise's standard error
    processes: int = 1  # process values behind `current` (1 + confirmation runs)
    note: str = ""
    detects_pct: float | None = None  # the change caught with 80% power ("detects >= X%")
    gated: bool = True  # False: reported only (a case with a reference is gated on its speedup)
    suspect: bool = False  # beyond the threshold on fewer processes than a verdict needs: measure again
    stages: int = 0  # processes a failure of this metric needs (0: not a between-process decision)
    # a smaller absolute change (in `unit`) is noise whatever its percent (peak memory: 64 KiB; a percentage:
    # 1 point); None: no such floor. Shown beside the threshold, so "+28.6% unchanged" explains itself.
    min_change: float | None = None


class FindingKind(str, enum.Enum):
    """Why a green gate might not mean "measured, compared, fine"; strict mode fails on STRICT_KINDS."""

    NO_CASES = "no perf case measured"
    NO_BASELINE = "no baseline"
    TEST_SKIPPED = "test skipped"
    TEST_ERRORED = "test errored"
    NOT_COMPARABLE = "not comparable"
    PROFILE_FAILED = "profile failed"
    HOST_CLOCK = "host clock against a CUDA baseline"
    INCONCLUSIVE = "inconclusive"
    THROTTLED = "throttled"
    STALE_BASELINE = "baseline may be stale"
    AUTOTUNE_CHANGED = "autotune choice changed"
    UNCALIBRATED = "uncalibrated baseline"
    HOST_DRIFT = "host state changed since calibration"
    CHANGE_POINT = "step change in the history"
    CODE_UNCHANGED = "regressed, its code unchanged"  # no file the case's code came from changed since its reference
    COMMON_SHIFT = "common-mode shift"  # most cases moved together: environment, machine or shared code
    INTERMITTENT_SHIFT = "intermittent shared state"  # a common shift that comes and goes between runs
    NOT_MEASURED = "baseline case not measured"  # not collected, deselected, renamed, or measured under another name
    ALLOWED_MISSING = "baseline case allowed to be missing"  # [tool.perfgate] allow_missing, with its reason
    BEYOND_CEILING = "beyond the ceiling"  # a process slower than ceiling_pct, whatever the noise says
    BASELINE_CHANGED = "baseline changed since the base ref"
    BASELINE_CHANGE_STATED = "baseline change stated"  # changed, and the pull request says it is intended
    BASELINE_UNVERIFIED = "baseline not checked against the base ref"
    SELECTION_CHANGED = "test selection changed since the base ref"  # A/B: the head's pytest selection options


STRICT_KINDS = frozenset(
    {
        FindingKind.NO_CASES,
        FindingKind.NO_BASELINE,
        FindingKind.TEST_SKIPPED,
        FindingKind.TEST_ERRORED,
        FindingKind.NOT_COMPARABLE,
        FindingKind.PROFILE_FAILED,
        FindingKind.HOST_CLOCK,
        FindingKind.NOT_MEASURED,
        FindingKind.BEYOND_CEILING,
        FindingKind.BASELINE_CHANGED,
        FindingKind.BASELINE_UNVERIFIED,
        FindingKind.COMMON_SHIFT,
        FindingKind.SELECTION_CHANGED,
    }
)


@dataclass(frozen=True)
class CommonShift:
    """Most of a run's cases moved together against their calibration (gate/common.py)."""

    shift_pct: float  # the median case's change (%), the amount every centre is moved by
    moved: int  # cases whose change has the shift's sign
    cases: int  # cases that took part
    spread_pct: float  # the median distance of a case's change from the shift (%)
    changed: tuple[str, ...] = ()  # "driver 550.54 -> 555.42", per changed environment field
    # False: declared only at the looser level a changed fingerprint allows (gate/common.py SIGN_P_CHANGED): the
    # centres move, the finding is a note
    sure: bool = True

    @property
    def variance_share(self) -> float:
        """The error of the shift in units of one case's noise, squared: var(median of m) ~ pi / 2 * s^2 / m."""
        return math.pi / 2.0 / self.cases


@dataclass(frozen=True)
class AllowedMissing:
    """Baseline cases a strict gate may miss (`[tool.perfgate] allow_missing`): a shell pattern on case ids
    and the reason, which every report shows."""

    pattern: str
    reason: str


@dataclass(frozen=True)
class Finding:
    kind: FindingKind
    message: str  # one line, safe to publish
    case_id: str = ""

    @property
    def fails_strict(self) -> bool:
        return self.kind in STRICT_KINDS


@dataclass(frozen=True)
class GateResult:
    comparisons: tuple[Comparison, ...]
    current_env: Environment | None = None
    baseline_env: Environment | None = None
    # per regressed case: the profiler comparisons of its kernels, moved ones first (the "why")
    explanations: dict[str, tuple[Comparison, ...]] = field(default_factory=dict)
    fail_on: frozenset[Verdict] = frozenset({Verdict.REGRESSED, Verdict.BELOW_TARGET})
    findings: tuple[Finding, ...] = ()
    strict: bool = False
    calibrated: bool = False
    common_shift: CommonShift | None = None  # most cases moved together; each was judged against it

    @property
    def failed(self) -> bool:
        return bool(self.failure_reasons)

    @property
    def failure_reasons(self) -> tuple[str, ...]:
        """One line per reason the gate fails: verdicts first, then strict-mode findings."""
        reasons = [
            f"{c.case_id}: {c.metric} {c.verdict.value}"
            for c in self.comparisons
            if c.verdict in self.fail_on and c.gated
        ]
        if self.strict:
            reasons += [f"strict: {f.message}" for f in self.findings if f.fails_strict]
        return tuple(reasons)

    def by_verdict(self, verdict: Verdict) -> tuple[Comparison, ...]:
        return tuple(c for c in self.comparisons if c.verdict is verdict)
