"""What the parsers produce: a timeline (nsys, torch trace) or a list of ncu launches."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


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


@dataclass(frozen=True)
class NcuMetric:
    value: float | str
    unit: str


@dataclass(frozen=True)
class NcuLaunch:
    """One profiled kernel launch; metric values are in base units (ns, byte, byte/s, hz, %)."""

    launch_id: int
    name: str
    metrics: dict[str, NcuMetric]
    nvtx_ranges: tuple[str, ...] = ()  # push/pop ranges open at launch, outermost first

    def value(self, name: str) -> float | None:
        m = self.metrics.get(name)
        return float(m.value) if m is not None and not isinstance(m.value, str) else None
