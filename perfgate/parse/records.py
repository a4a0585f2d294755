"""What the parsers produce: a timeline (nsys, torch trace) or a list of ncu launches."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple


@dataclass(frozen=True)
class KernelLaunch:
    name: str
    start_ns: int
    end_ns: int
    grid: tuple[int, int, int] = (0, 0, 0)
    block: tuple[int, int, int] = (0, 0, 0)
    registers_per_thread: int | None = None
    shared_mem_bytes: int | None = None  # static + dynamic, per block
    stream: int | None = None
    device: int | None = None
    nvtx_range: str = ""  # innermost push/pop range enclosing the launch call ("" = none)
    nvtx_stack: tuple[str, ...] = ()  # every enclosing push/pop range, outermost first

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass(frozen=True)
class MemoryOp:
    kind: str  # "Host-to-Device", "Device-to-Host", "Device-to-Device", "Peer-to-Peer", "memset", ...
    bytes: int
    start_ns: int
    end_ns: int
    nvtx_range: str = ""

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass(frozen=True)
class ApiCall:
    name: str
    start_ns: int
    end_ns: int

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass(frozen=True)
class NvtxRange:
    text: str
    start_ns: int
    end_ns: int
    style: str  # "PushPop" | "StartEnd"

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass(frozen=True)
class Timeline:
    source: Path
    kind: str  # "nsys" | "torch"
    kernels: tuple[KernelLaunch, ...]
    memory_ops: tuple[MemoryOp, ...] = ()
    api_calls: tuple[ApiCall, ...] = ()
    nvtx_ranges: tuple[NvtxRange, ...] = ()
    gpu_name: str = ""
    meta: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # rows the reader left out, counted ("3 ... rows ... ignored")


class NcuMetric(NamedTuple):
    """A NamedTuple, not a frozen dataclass: a report holds ~500 per launch, and a frozen dataclass's
    __init__ made building them a quarter of the read of a 450-launch report."""

    value: float | str
    unit: str


class MetricTable(Mapping[str, NcuMetric]):
    """A launch's metrics as read, in columns: names, values, units, and an index by name. An NcuMetric
    is made only for what is looked at (a report has ~500 metrics per launch and readers look at a few
    dozen), and launches that share their metric names share the names and the index."""

    __slots__ = ("_index", "_names", "_units", "_values")

    def __init__(
        self,
        names: tuple[str, ...],
        values: tuple[float | str, ...],
        units: tuple[str, ...],
        index: Mapping[str, int] | None = None,
    ) -> None:
        self._names, self._values, self._units = names, values, units
        self._index = index if index is not None else {n: i for i, n in enumerate(names)}

    def __getitem__(self, name: str) -> NcuMetric:
        i = self._index[name]
        return NcuMetric(self._values[i], self._units[i])

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __repr__(self) -> str:
        return f"MetricTable({len(self._names)} metrics)"

    def columns(self) -> tuple[tuple[str, ...], tuple[float | str, ...], tuple[str, ...]]:
        """(names, values, units), without making an NcuMetric per metric."""
        return self._names, self._values, self._units


@dataclass(frozen=True)
class NcuLaunch:
    """One profiled kernel launch; metric values are in base units (ns, byte, byte/s, hz, %)."""

    launch_id: int
    name: str
    metrics: Mapping[str, NcuMetric]
    nvtx_ranges: tuple[str, ...] = ()  # push/pop ranges open at launch, outermost first

    def value(self, name: str) -> float | None:
        m = self.metrics.get(name)
        return float(m.value) if m is not None and not isinstance(m.value, str) else None
