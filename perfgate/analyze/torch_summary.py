"""`perfgate analyze` on a torch.profiler trace: one pass over the events into per-name duration lists,
then numpy statistics per group (no record per event; annotation attribution is not needed here)."""

from __future__ import annotations

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
from perfgate.parse.torch_trace import LAUNCH_CATS, MEMORY_CATS, args_of, copy_kind, finite_int, load_events

SPAN_CHART_TOP = 12


def summarize_torch(path: Path, type_label: str, with_spans: bool = False) -> TimelineSummary:
    trace = load_events(path)
    kernel_d: dict[str, list[int]] = defaultdict(list)
    kernel_s: dict[str, list[int]] = defaultdict(list)
    registers: dict[str, int] = {}
    mem_d: dict[str, list[int]] = defaultdict(list)
    mem_bytes: dict[str, int] = defaultdict(int)
    api_d: dict[str, list[int]] = defaultdict(list)
    nvtx_d: dict[str, list[int]] = defaultdict(list)
    busy_starts: list[int] = []
    busy_ends: list[int] = []
    for e in trace.events:
        cat = e.get("cat")
        start = round(float(e["ts"]) * 1000)
        dur = round(float(e.get("dur", 0)) * 1000)
        name = str(e.get("name", ""))
        if cat == "kernel":
            kernel_d[name].append(dur)
            kernel_s[name].append(start)
            regs = args_of(e).get("registers per thread")
            if isinstance(regs, int) and not isinstance(regs, bool):
                registers[name] = max(regs, registers.get(name, regs))
        elif cat in MEMORY_CATS:
            kind = MEMORY_CATS[str(cat)] or copy_kind(name)
            mem_d[kind].append(dur)
            size = args_of(e).get("bytes")
            mem_bytes[kind] += finite_int(size) or 0
        elif cat in LAUNCH_CATS:
            api_d[name].append(dur)
            continue
        elif cat == "user_annotation":
            nvtx_d[name].append(dur)
            continue
        else:
            continue
        busy_starts.append(start)
        busy_ends.append(start + dur)
    stats = {n: duration_stats(np.asarray(d, dtype=np.int64)) for n, d in kernel_d.items()}
    total = sum(s.total_ns for s in stats.values()) or 1
    kernels = tuple(sorted((KernelRow(n, s, 100.0 * s.total_ns / total, registers.get(n)) for n, s in stats.items()),
                           key=lambda k: (-k.stats.total_ns, k.name)))
    spans: dict[str, tuple[IntArray, IntArray]] = {}
    if with_spans:
        for k in kernels[:SPAN_CHART_TOP]:
            s_arr = np.asarray(kernel_s[k.name], dtype=np.int64)
            spans[k.name] = (s_arr, s_arr + np.asarray(kernel_d[k.name], dtype=np.int64))
    memory = tuple(sorted((MemoryRow(kind, duration_stats(np.asarray(d, dtype=np.int64)), mem_bytes[kind])
                           for kind, d in mem_d.items()), key=lambda m: (-m.stats.total_ns, m.kind)))
    api = tuple(sorted((ApiRow(n, duration_stats(np.asarray(d, dtype=np.int64))) for n, d in api_d.items()),
                       key=lambda a: (-a.stats.total_ns, a.name)))
    nvtx = tuple(sorted((NvtxRow(n, "PushPop", duration_stats(np.asarray(d, dtype=np.int64))) for n,
                         d in nvtx_d.items()),
                        key=lambda r: (-r.stats.total_ns, r.range)))
    idle = idle_summary(np.asarray(busy_starts, dtype=np.int64), np.asarray(busy_ends, dtype=np.int64))
    return TimelineSummary(source=str(path), type=type_label, kind="torch", gpu=trace.gpu_name,
                           meta={"schemaVersion": trace.schema_version}, kernels=kernels, memory=memory, api=api,
                           nvtx=nvtx, gpu_idle=idle, spans=spans)
