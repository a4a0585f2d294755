"""`perfgate analyze` on a torch.profiler trace: one streamed pass over the events into per-name arrays of
int64 durations (8 bytes per event, no dict kept), then numpy statistics per group (annotation
attribution is not needed here). Events with a broken ts/dur or size are dropped and counted
(parse/torch_trace.py); sums past int64 refuse the file."""

from __future__ import annotations

from array import array
from collections import defaultdict
from pathlib import Path

import numpy as np

from perfgate.analyze.summary import (
    ApiRow,
    IntArray,
    KernelRow,
    MemoryRow,
    NvtxRow,
    TimelineSummary,
    duration_stats,
    idle_summary,
)
from perfgate.errors import ReportFileError
from perfgate.parse.invariants import IMPOSSIBLE_TRANSFER, OutOfRange, exact_total, int64_total, plausible_transfer
from perfgate.parse.torch_trace import (
    LAUNCH_CATS,
    MEMORY_CATS,
    TraceStream,
    args_of,
    copy_kind,
    count,
    memory_bytes,
    name_of,
    span_ns,
)

SPAN_CHART_TOP = 12
_BAD_SIZE = "with a negative or non-integer size"


def _ints() -> array[int]:
    return array("q")


def summarize_torch(path: Path, type_label: str, with_spans: bool = False) -> TimelineSummary:
    trace = TraceStream(Path(path))
    kernel_d: dict[str, array[int]] = defaultdict(_ints)
    kernel_s: dict[str, array[int]] = defaultdict(_ints)
    registers: dict[str, int] = {}
    mem_d: dict[str, array[int]] = defaultdict(_ints)
    mem_bytes: dict[str, int] = defaultdict(int)
    api_d: dict[str, array[int]] = defaultdict(_ints)
    nvtx_d: dict[str, array[int]] = defaultdict(_ints)
    busy_starts, busy_ends = _ints(), _ints()
    try:
        for e in trace.events():
            cat = e["cat"]
            start, end = span_ns(e) or (0, 0)  # events() hands over only events with a valid span
            name = name_of(e)
            if cat == "kernel":
                kernel_d[name].append(end - start)
                kernel_s[name].append(start)
                regs = count(args_of(e).get("registers per thread"))
                if regs is not None:
                    registers[name] = max(regs, registers.get(name, regs))
            elif cat in MEMORY_CATS:
                size = memory_bytes(e)
                if size is None or not plausible_transfer(size, end - start):
                    trace.dropped.add(f"{cat} trace events {_BAD_SIZE if size is None else IMPOSSIBLE_TRANSFER}")
                    continue
                kind = MEMORY_CATS[cat] or copy_kind(name)
                mem_d[kind].append(end - start)
                mem_bytes[kind] = int64_total(mem_bytes[kind] + size, "transfer sizes")
            elif cat in LAUNCH_CATS:
                api_d[name].append(end - start)
                continue
            else:
                nvtx_d[name].append(end - start)
                continue
            busy_starts.append(start)
            busy_ends.append(end)
        return _summary(
            trace,
            type_label,
            with_spans,
            kernel_d,
            kernel_s,
            registers,
            mem_d,
            mem_bytes,
            api_d,
            nvtx_d,
            _array(busy_starts),
            _array(busy_ends),
        )
    except OutOfRange as err:
        raise ReportFileError(trace.path, str(err)) from err


def _array(values: array[int]) -> IntArray:
    return np.frombuffer(values, dtype=np.int64) if len(values) else np.zeros(0, np.int64)


def _summary(
    trace: TraceStream,
    type_label: str,
    with_spans: bool,
    kernel_d: dict[str, array[int]],
    kernel_s: dict[str, array[int]],
    registers: dict[str, int],
    mem_d: dict[str, array[int]],
    mem_bytes: dict[str, int],
    api_d: dict[str, array[int]],
    nvtx_d: dict[str, array[int]],
    busy_starts: IntArray,
    busy_ends: IntArray,
) -> TimelineSummary:
    stats = {n: duration_stats(_array(d), "kernel durations") for n, d in kernel_d.items()}
    total = exact_total(np.array([s.total_ns for s in stats.values()], dtype=np.int64), "kernel durations")
    kernels = tuple(
        sorted(
            (KernelRow(n, s, 100.0 * s.total_ns / total if total else 0.0, registers.get(n)) for n, s in stats.items()),
            key=lambda k: (-k.stats.total_ns, k.name),
        )
    )
    spans: dict[str, tuple[IntArray, IntArray]] = {}
    if with_spans:
        for k in kernels[:SPAN_CHART_TOP]:
            s_arr = _array(kernel_s[k.name])
            spans[k.name] = (s_arr, s_arr + _array(kernel_d[k.name]))
    memory = tuple(
        sorted(
            (
                MemoryRow(kind, duration_stats(_array(d), "transfer durations"), mem_bytes[kind])
                for kind, d in mem_d.items()
            ),
            key=lambda m: (-m.stats.total_ns, m.kind),
        )
    )
    api = tuple(
        sorted(
            (ApiRow(n, duration_stats(_array(d), "runtime call durations")) for n, d in api_d.items()),
            key=lambda a: (-a.stats.total_ns, a.name),
        )
    )
    nvtx = tuple(
        sorted(
            (NvtxRow(n, "PushPop", duration_stats(_array(d), "annotation durations")) for n, d in nvtx_d.items()),
            key=lambda r: (-r.stats.total_ns, r.range),
        )
    )
    return TimelineSummary(
        source=str(trace.path),
        type=type_label,
        kind="torch",
        gpu=trace.gpu_name,
        meta={"schemaVersion": trace.schema_version},
        kernels=kernels,
        memory=memory,
        api=api,
        nvtx=nvtx,
        gpu_idle=idle_summary(busy_starts, busy_ends),
        spans=spans,
        notes=trace.notes,
    )
