"""What `perfgate analyze` reports, as records: per kernel / transfer kind / API call / NVTX range the
statistics `nsys stats` prints (cuda_gpu_kern_sum, cuda_gpu_mem_time_sum, cuda_api_sum, nvtx_sum), GPU
idle time, and for ncu files the launches and their diagnosis. `as_dict()` gives the documented JSON.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from perfgate.analyze.ncu_diagnosis import Diagnosis
from perfgate.parse.invariants import OutOfRange, exact_total, within
from perfgate.parse.records import MetricTable, NcuMetric

IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class DurationStats:
    """nsys stats' definitions: mean, median (mean of the middle two), sample standard deviation."""

    count: int
    total_ns: int
    avg_ns: float
    median_ns: float
    min_ns: int
    max_ns: int
    stddev_ns: float


def duration_stats(durations: IntArray, what: str = "durations") -> DurationStats:
    """Statistics of non-negative int64 durations (readers drop negative ones): the total is exact or
    OutOfRange past int64 (numpy's sum wraps silently), and mean and median stay in [min, max] (float
    rounding of values above 2**53 could put them a few ulps outside)."""
    n = int(durations.size)
    if n == 0:
        raise ValueError("no durations")
    low, high = int(durations.min()), int(durations.max())
    if low < 0:
        raise OutOfRange(f"{what}: a negative duration ({low} ns)")
    total = exact_total(durations, what)
    return DurationStats(
        count=n,
        total_ns=total,
        avg_ns=within(total / n, low, high),
        median_ns=within(float(np.median(durations)), low, high),
        min_ns=low,
        max_ns=high,
        stddev_ns=float(durations.std(ddof=1)) if n > 1 else 0.0,
    )


def _flat(name_key: str, name: str, stats: DurationStats, **extra: Any) -> dict[str, Any]:
    return {name_key: name, **asdict(stats), **extra}


@dataclass(frozen=True)
class KernelRow:
    name: str
    stats: DurationStats
    time_pct: float
    registers_per_thread: int | None

    def as_dict(self) -> dict[str, Any]:
        return _flat(
            "name", self.name, self.stats, time_pct=self.time_pct, registers_per_thread=self.registers_per_thread
        )


@dataclass(frozen=True)
class MemoryRow:
    kind: str
    stats: DurationStats
    bytes: int

    @property
    def gbps(self) -> float | None:
        return self.bytes / self.stats.total_ns if self.stats.total_ns else None  # bytes/ns == GB/s

    def as_dict(self) -> dict[str, Any]:
        return _flat("kind", self.kind, self.stats, bytes=self.bytes, gbps=self.gbps)


@dataclass(frozen=True)
class ApiRow:
    name: str
    stats: DurationStats

    def as_dict(self) -> dict[str, Any]:
        return _flat("name", self.name, self.stats)


@dataclass(frozen=True)
class NvtxRow:
    range: str
    style: str  # PushPop | StartEnd
    stats: DurationStats

    def as_dict(self) -> dict[str, Any]:
        return _flat("range", self.range, self.stats, style=self.style)


@dataclass(frozen=True)
class Gap:
    start_ns: int
    gap_ns: int


@dataclass(frozen=True)
class IdleSummary:
    busy_ns: int
    idle_ns: int
    span_ns: int
    utilization_pct: float | None
    largest_gaps: tuple[Gap, ...]


class IdleSweep:
    """Time the GPU ran no kernel or copy between its first and last activity: activities fed in chunks
    in order of start (vectorised per chunk), so a capture of any size is swept in bounded memory."""

    def __init__(self, min_gap_ns: int = 10_000, top: int = 10) -> None:
        self.min_gap_ns, self.top = min_gap_ns, top
        self.first: int | None = None
        self.reach = 0  # the furthest end so far
        self.idle = 0
        self.seen = 0
        self.largest: list[tuple[int, int, int]] = []  # (-gap, position, start): the top gaps, first first

    def add(self, starts: IntArray, ends: IntArray) -> None:
        if starts.size == 0:
            return
        reach = np.maximum.accumulate(ends)
        if self.first is None:
            self.first = int(starts[0])
            before, s = reach[:-1], starts[1:]
        else:
            np.maximum(reach, self.reach, out=reach)
            before, s = np.concatenate(([self.reach], reach[:-1])), starts
        gaps = s - before  # timestamps are >= 0 (readers drop others): differences fit int64
        self.idle += int(np.maximum(gaps, 0).sum())
        big = np.flatnonzero(gaps >= self.min_gap_ns)
        chosen = big[np.argsort(-gaps[big], kind="stable")][: self.top]
        offset = self.seen + (1 if starts.size != s.size else 0)
        found = [(-int(gaps[i]), offset + int(i), int(before[i])) for i in chosen]
        self.largest = sorted(self.largest + found)[: self.top]
        self.reach = int(reach[-1])
        self.seen += int(starts.size)

    def summary(self) -> IdleSummary:
        if self.first is None:
            return IdleSummary(0, 0, 0, None, ())
        span = self.reach - self.first
        busy = span - self.idle
        return IdleSummary(
            busy,
            self.idle,
            span,
            within(100.0 * busy / span, 0.0, 100.0) if span else None,
            tuple(Gap(start, -neg) for neg, _, start in self.largest),
        )


def idle_summary(starts: IntArray, ends: IntArray, min_gap_ns: int = 10_000, top: int = 10) -> IdleSummary:
    """IdleSweep over activities in any order (sorted here by start)."""
    order = np.argsort(starts, kind="stable")
    sweep = IdleSweep(min_gap_ns, top)
    sweep.add(starts[order], ends[order])
    return sweep.summary()


@dataclass(frozen=True)
class TimelineSummary:
    source: str
    type: str  # nsys-rep | nsys-sqlite | torch-json
    kind: str  # nsys | torch
    gpu: str
    meta: dict[str, str]
    kernels: tuple[KernelRow, ...]
    memory: tuple[MemoryRow, ...]
    api: tuple[ApiRow, ...]
    nvtx: tuple[NvtxRow, ...]
    gpu_idle: IdleSummary
    spans: dict[str, tuple[IntArray, IntArray]] = field(default_factory=dict, compare=False)  # for charts only
    notes: tuple[str, ...] = ()  # rows the reader dropped, counted ("12 ... rows ... ignored")

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "source": self.source,
            "kind": self.kind,
            "gpu": self.gpu,
            "meta": dict(self.meta),
            "kernels": [k.as_dict() for k in self.kernels],
            "memory": [m.as_dict() for m in self.memory],
            "api": [a.as_dict() for a in self.api],
            "nvtx": [n.as_dict() for n in self.nvtx],
            "gpu_idle": asdict(self.gpu_idle),
            "notes": list(self.notes),
        }

    def as_stream(self) -> dict[str, Any]:
        return self.as_dict()  # one row per kernel, API call and range: small


@dataclass(frozen=True)
class LaunchRow:
    """One launch as read: the reader's metric table (names, units and index shared between launches,
    so 6,000 launches of 759 metrics cost their values, not 6,000 dicts of names); dicts are made only
    when the launch is written out."""

    id: int
    name: str
    nvtx: tuple[str, ...]
    table: Mapping[str, NcuMetric]

    @property
    def metrics(self) -> dict[str, float | str]:
        return {k: self.table[k].value for k in sorted(self.table)}

    @property
    def units(self) -> dict[str, str]:
        return {k: self.table[k].unit for k in sorted(self.table)}

    def as_dict(self) -> dict[str, Any]:
        if isinstance(self.table, MetricTable):
            names, values, units = self.table.columns()
        else:
            names = tuple(self.table)
            values, units = tuple(m.value for m in self.table.values()), tuple(m.unit for m in self.table.values())
        order = _name_order(names)
        return {
            "id": self.id,
            "name": self.name,
            "nvtx": list(self.nvtx),
            "metrics": {names[i]: values[i] for i in order},
            "units": {names[i]: units[i] for i in order},
        }


@functools.lru_cache(maxsize=64)
def _name_order(names: tuple[str, ...]) -> list[int]:
    """Positions of the metric names in name order (launches share their names tuple: sorted once)."""
    return sorted(range(len(names)), key=names.__getitem__)


@dataclass(frozen=True)
class NcuSummary:
    source: str
    type: str  # ncu-rep | ncu-csv
    launches: Iterable[LaunchRow]  # a tuple, or (a CSV) read from the file again each time it is iterated
    diagnosis: tuple[Diagnosis, ...]
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "source": self.source,
            "launches": [lr.as_dict() for lr in self.launches],
            "diagnosis": [d.as_dict() for d in self.diagnosis],
            "notes": list(self.notes),
        }

    def as_stream(self) -> dict[str, Any]:
        """as_dict with the launches as an iterator: a JSON writer makes one launch's dicts at a time."""
        return {
            "type": self.type,
            "source": self.source,
            "launches": (lr.as_dict() for lr in self.launches),
            "diagnosis": [d.as_dict() for d in self.diagnosis],
            "notes": list(self.notes),
        }


Document = TimelineSummary | NcuSummary
