"""The metric catalogue: unit, direction, how each metric is compared, and its default threshold.

Defaults are for kernels on a quiet GPU: counters that only change when the code does (registers,
spills, theoretical occupancy, shared memory) have a zero tolerance; DRAM bytes a small one (ECC and
replays move a few sectors); measured ratios (achieved occupancy, bandwidth, speed-of-light) 10%.
Everything is overridable in `[tool.perfgate.metrics]`, per-case overrides, or the marker.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from perfgate.model import Direction, MetricKind

LOWER, HIGHER = Direction.LOWER, Direction.HIGHER
TIMED, MEASURED, COUNTER, DERIVED = MetricKind.TIMED, MetricKind.MEASURED, MetricKind.COUNTER, MetricKind.DERIVED


@dataclass(frozen=True)
class MetricGroup:
    """A Markdown table of this run's values (report/markdown.py draws one per group, its columns the
    catalogue's metrics of the group in catalogue order, whatever profiler measured them)."""

    title: str
    per_kernel: bool  # a row per case and kernel; else a row per case (metrics of the whole case, kernel "")


KERNELS = MetricGroup("Profiler metrics per kernel", per_kernel=True)
TRANSFERS = MetricGroup("Copy-engine transfers", per_kernel=False)
GROUPS = (KERNELS, TRANSFERS)


@dataclass(frozen=True)
class MetricSpec:
    label: str
    unit: str
    direction: Direction
    kind: MetricKind
    threshold_pct: float
    floor: float = 0.0  # an absolute change below this (in the metric's unit) is noise, whatever its ratio
    group: MetricGroup | None = None  # the report table it is a column of (None: in none)
    column: str = ""  # that column's header (default: the label)

    @property
    def gated(self) -> bool:
        """False for a metric computed from another gated one: reported, never gated twice."""
        return self.kind is not MetricKind.DERIVED

    @property
    def header(self) -> str:
        return self.column or self.label


TIME_METRIC = "median_ms"
CYCLES_METRIC = "median_mcycles"  # the time in SM cycles (measure/sm_clock.py): gated for compute-bound cases
PEAK_ALLOCATED = "memory.peak_allocated_bytes"
PEAK_RESERVED = "memory.peak_reserved_bytes"
PEAK_HOST = "memory.peak_host_bytes"
SPEEDUP_METRIC = "speedup"
# the static gate's metrics (gate/static.py): from the compiled kernels, compared exactly, per kernel
STATIC_PREFIX = "kernel."
STATIC_REGISTERS = "kernel.registers_per_thread"
STATIC_SPILLS = "kernel.spill_bytes"
STATIC_OCCUPANCY = "kernel.occupancy_pct"
STATIC_SHARED = "kernel.shared_bytes"
STATIC_LAUNCHED = "kernel.launched"
NCU_WHY = "ncu.why"  # ncu's diagnosis of a regressed case's kernel (gate/why.py): words, not a value
WINDOW_MODE = "window.mode"  # a regressed case's window shows a mode the calibration missed (gate/unseen.py): words

_SPECS = {
    # timing run
    TIME_METRIC: MetricSpec("time", "ms", LOWER, TIMED, 3.0),
    CYCLES_METRIC: MetricSpec("cycles", "Mcycles", LOWER, TIMED, 3.0),
    "gbps": MetricSpec("bandwidth", "GB/s", HIGHER, DERIVED, 0.0),
    "tflops": MetricSpec("throughput", "TFLOP/s", HIGHER, DERIVED, 0.0),
    # memory per call (measure/memory.py): allocator peaks are deterministic for most kernels
    PEAK_ALLOCATED: MetricSpec("peak memory", "byte", LOWER, COUNTER, 1.0),
    PEAK_RESERVED: MetricSpec("peak reserved memory", "byte", LOWER, DERIVED, 0.0),
    # Python's allocator moves a call's peak by kilobytes between calls (free lists, caches, interning)
    PEAK_HOST: MetricSpec("peak Python memory", "byte", LOWER, COUNTER, 5.0, floor=64 * 1024),
    # speedup against a reference timed alternately in the same process (measure/interleave.py)
    SPEEDUP_METRIC: MetricSpec("speedup", "x", HIGHER, MEASURED, 5.0),
    # the compiled kernels (perfgate/compiled/), read without a profiler: compared exactly by gate/static.py
    STATIC_REGISTERS: MetricSpec("registers/thread (compiled)", "register/thread", LOWER, COUNTER, 0.0),
    STATIC_SPILLS: MetricSpec("spill bytes (compiled)", "byte", LOWER, COUNTER, 0.0),
    STATIC_OCCUPANCY: MetricSpec("theoretical occupancy (compiled)", "%", HIGHER, COUNTER, 0.0),
    STATIC_SHARED: MetricSpec("shared memory/block (compiled)", "byte/block", LOWER, COUNTER, 0.0),
    STATIC_LAUNCHED: MetricSpec("kernels launched", "", LOWER, DERIVED, 0.0),
    # Nsight Systems, per kernel name within a case (per call of the case's callable)
    "nsys.launches_per_call": MetricSpec("launches/call (nsys)", "", LOWER, COUNTER, 0.0),
    "nsys.kernel_ns_per_call": MetricSpec("GPU time/call (nsys)", "ns", LOWER, MEASURED, 10.0),
    "nsys.registers_per_thread": MetricSpec("registers/thread (nsys)", "register", LOWER, COUNTER, 0.0),
    "nsys.shared_mem_bytes": MetricSpec("shared memory/block (nsys)", "byte", LOWER, COUNTER, 0.0),
    "nsys.memcpy_bytes_per_call": MetricSpec(
        "memcpy bytes/call (nsys)", "byte", LOWER, COUNTER, 0.0, group=TRANSFERS, column="copied per call"
    ),
    "nsys.memcpy_ns_per_call": MetricSpec(
        "memcpy time/call (nsys)", "ns", LOWER, MEASURED, 10.0, group=TRANSFERS, column="copy time per call"
    ),
    "nsys.memcpy_bytes_per_second": MetricSpec(
        "memcpy bandwidth (nsys)", "byte/s", HIGHER, MEASURED, 10.0, group=TRANSFERS, column="copy bandwidth"
    ),
    "nsys.memset_bytes_per_call": MetricSpec(
        "memset bytes/call (nsys)", "byte", LOWER, COUNTER, 0.0, group=TRANSFERS, column="memset per call"
    ),
    # Nsight Compute, per kernel
    "gpu__time_duration.sum": MetricSpec("duration", "ns", LOWER, MEASURED, 10.0, group=KERNELS),
    "sm__warps_active.avg.pct_of_peak_sustained_active": MetricSpec(
        "achieved occupancy", "%", HIGHER, MEASURED, 10.0, group=KERNELS, column="achieved occ."
    ),
    "sm__maximum_warps_per_active_cycle_pct": MetricSpec(
        "theoretical occupancy", "%", HIGHER, COUNTER, 0.0, group=KERNELS, column="theoretical occ."
    ),
    "launch__registers_per_thread": MetricSpec(
        "registers/thread", "register/thread", LOWER, COUNTER, 0.0, group=KERNELS, column="registers"
    ),
    "derived__local_spilling_requests": MetricSpec(
        "local spills", "request", LOWER, COUNTER, 0.0, group=KERNELS, column="spills"
    ),
    "launch__shared_mem_per_block": MetricSpec("shared memory/block", "byte/block", LOWER, COUNTER, 0.0),
    "dram__bytes_read.sum": MetricSpec("DRAM bytes read", "byte", LOWER, COUNTER, 2.0),
    "dram__bytes_write.sum": MetricSpec("DRAM bytes written", "byte", LOWER, COUNTER, 2.0),
    "dram__bytes.sum.per_second": MetricSpec("DRAM bandwidth", "byte/s", HIGHER, MEASURED, 10.0, group=KERNELS),
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": MetricSpec(
        "DRAM % of peak", "%", HIGHER, MEASURED, 10.0, group=KERNELS
    ),
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": MetricSpec("SM speed-of-light", "%", HIGHER, MEASURED, 10.0),
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": MetricSpec(
        "memory speed-of-light", "%", HIGHER, MEASURED, 10.0
    ),
    "l1tex__t_sector_hit_rate.pct": MetricSpec("L1 hit rate", "%", HIGHER, MEASURED, 10.0),
    "lts__t_sector_hit_rate.pct": MetricSpec("L2 hit rate", "%", HIGHER, MEASURED, 10.0),
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": MetricSpec(
        "tensor pipe (mma)", "%", HIGHER, MEASURED, 10.0
    ),
    "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active": MetricSpec(
        "tensor pipe (wgmma)", "%", HIGHER, MEASURED, 10.0
    ),
    # reported, not gated: they explain, the metrics above decide
    "launch__occupancy_limit_registers": MetricSpec("block limit: registers", "block", HIGHER, DERIVED, 0.0),
    "launch__occupancy_limit_shared_mem": MetricSpec("block limit: shared memory", "block", HIGHER, DERIVED, 0.0),
    "launch__occupancy_limit_warps": MetricSpec("block limit: warps", "block", HIGHER, DERIVED, 0.0),
    "launch__occupancy_limit_blocks": MetricSpec("block limit: blocks", "block", HIGHER, DERIVED, 0.0),
    "launch__grid_size": MetricSpec("grid size", "block", HIGHER, DERIVED, 0.0),
    "launch__block_size": MetricSpec("block size", "thread", HIGHER, DERIVED, 0.0),
    "launch__waves_per_multiprocessor": MetricSpec("waves/SM", "", HIGHER, DERIVED, 0.0),
}

CATALOGUE = MappingProxyType(_SPECS)

# What `--perfgate-profile ncu` collects by default: the catalogue's ncu metrics plus the sections
# that compute the derived ones (spills, limiters) and the warp-stall breakdown for explanations.
# (SourceCounters is left out: per-instruction data makes reports ~10x larger and slower to collect.)
NCU_DEFAULT_SECTIONS = (
    "SpeedOfLight",
    "Occupancy",
    "LaunchStats",
    "MemoryWorkloadAnalysis",
    "ComputeWorkloadAnalysis",
    "WarpStateStats",
)


def columns(group: MetricGroup) -> tuple[tuple[str, MetricSpec], ...]:
    """The group's metrics, in catalogue order: its table's columns."""
    return tuple((name, spec) for name, spec in CATALOGUE.items() if spec.group == group)


def default_threshold_pct(name: str) -> float:
    """The catalogue's threshold; 10% for a metric it does not know (stored, compared only on request)."""
    spec = CATALOGUE.get(name)
    return spec.threshold_pct if spec else 10.0


def spec_for(name: str) -> MetricSpec | None:
    """The catalogue entry, or None for a metric we store but do not gate by default."""
    return CATALOGUE.get(name)


def label(name: str) -> str:
    spec = CATALOGUE.get(name)
    return spec.label if spec else name
