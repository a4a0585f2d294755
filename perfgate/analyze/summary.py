"""What `perfgate analyze` reports, as records: per kernel / transfer kind / API call / NVTX range the
statistics `nsys stats` prints (cuda_gpu_kern_sum, cuda_gpu_mem_time_sum, cuda_api_sum, nvtx_sum), GPU
idle time, and for ncu files the launches and their diagnosis. `as_dict()` gives the documented JSON.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from perfgate.analyze.ncu_diagnosis import Diagnosis

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


def duration_stats(durations: IntArray) -> DurationStats:
    n = int(durations.size)
    if n == 0:
        raise ValueError("no durations")
    return DurationStats(count=n, total_ns=int(durations.sum()), avg_ns=float(durations.mean()),
                         median_ns=float(np.median(durations)), min_ns=int(durations.min()),
                         max_ns=int(durations.max()), stddev_ns=float(durations.std(ddof=1)) if n > 1 else 0.0)


def _flat(name_key: str, name: str, stats: DurationStats, **extra: Any) -> dict[str, Any]:
    return {name_key: name, **asdict(stats), **extra}


@dataclass(frozen=True)
class KernelRow:
    name: str
    stats: DurationStats
    time_pct: float
    registers_per_thread: int | None

    def as_dict(self) -> dict[str, Any]:
        return _flat("name", self.name, self.stats, time_pct=self.time_pct,
                     registers_per_thread=self.registers_per_thread)


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


def idle_summary(starts: IntArray, ends: IntArray, min_gap_ns: int = 10_000, top: int = 10) -> IdleSummary:
    """Time the GPU ran no kernel or copy between its first and last activity (vectorised union)."""
    if starts.size == 0:
        return IdleSummary(0, 0, 0, None, ())
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    reach = np.maximum.accumulate(e)  # the furthest end so far
    gaps = s[1:] - reach[:-1]
    idle = int(gaps[gaps > 0].sum())
    span = int(reach[-1] - s[0])
    big = np.flatnonzero(gaps >= min_gap_ns)
    chosen = big[np.argsort(-gaps[big], kind="stable")][:top]
    largest = tuple(Gap(int(reach[i]), int(gaps[i])) for i in chosen)
    return IdleSummary(span - idle, idle, span, 100.0 * (span - idle) / span if span else None, largest)


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

    def as_dict(self) -> dict[str, Any]:
        return {"type": self.type, "source": self.source, "kind": self.kind, "gpu": self.gpu, "meta": dict(self.meta),
                "kernels": [k.as_dict() for k in self.kernels], "memory": [m.as_dict() for m in self.memory],
                "api": [a.as_dict() for a in self.api], "nvtx": [n.as_dict() for n in self.nvtx],
                "gpu_idle": asdict(self.gpu_idle)}


@dataclass(frozen=True)
class LaunchRow:
    id: int
    name: str
    nvtx: tuple[str, ...]
    metrics: dict[str, float | str]
    units: dict[str, str]

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "nvtx": list(self.nvtx), "metrics": dict(self.metrics),
                "units": dict(self.units)}


@dataclass(frozen=True)
class NcuSummary:
    source: str
    type: str  # ncu-rep | ncu-csv
    launches: tuple[LaunchRow, ...]
    diagnosis: tuple[Diagnosis, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"type": self.type, "source": self.source, "launches": [lr.as_dict() for lr in self.launches],
                "diagnosis": [d.as_dict() for d in self.diagnosis]}


Document = TimelineSummary | NcuSummary
