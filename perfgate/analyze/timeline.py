"""Timeline summaries with the same definitions as `nsys stats` (cuda_gpu_kern_sum, cuda_gpu_mem_time_sum,
cuda_api_sum, nvtx_sum): totals, mean, median (mean of the middle two), min, max, sample stdev."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from perfgate.parse.records import Timeline


def _group(items: Iterable[Any], key: Callable[[Any], str]) -> dict[str, list[Any]]:
    groups: dict[str, list[Any]] = defaultdict(list)
    for it in items:
        groups[key(it)].append(it)
    return groups


def _stats(durations: Sequence[int]) -> dict[str, float | int]:
    return {"count": len(durations), "total_ns": int(sum(durations)), "avg_ns": statistics.fmean(durations),
            "median_ns": float(statistics.median(durations)), "min_ns": int(min(durations)),
            "max_ns": int(max(durations)), "stddev_ns": statistics.stdev(durations) if len(durations) > 1 else 0.0}


def kernel_summary(t: Timeline) -> list[dict[str, Any]]:
    """Per kernel name, largest total first, with its share of all kernel time."""
    total = sum(k.duration_ns for k in t.kernels) or 1
    rows = []
    for name, ks in _group(t.kernels, lambda k: k.name).items():
        row = {"name": name, **_stats([k.duration_ns for k in ks])}
        row["time_pct"] = 100.0 * row["total_ns"] / total
        regs = {k.registers_per_thread for k in ks if k.registers_per_thread is not None}
        row["registers_per_thread"] = max(regs) if regs else None
        rows.append(row)
    return sorted(rows, key=lambda r: (-r["total_ns"], r["name"]))


def memory_summary(t: Timeline) -> list[dict[str, Any]]:
    rows = []
    for kind, ops in _group(t.memory_ops, lambda m: m.kind).items():
        row = {"kind": kind, **_stats([m.duration_ns for m in ops]), "bytes": int(sum(m.bytes for m in ops))}
        row["gbps"] = row["bytes"] / row["total_ns"] if row["total_ns"] else None  # bytes/ns == GB/s
        rows.append(row)
    return sorted(rows, key=lambda r: (-r["total_ns"], r["kind"]))


def api_summary(t: Timeline) -> list[dict[str, Any]]:
    rows = [{"name": n, **_stats([c.duration_ns for c in cs])} for n, cs in _group(t.api_calls, lambda c: c.name).items()]
    return sorted(rows, key=lambda r: (-r["total_ns"], r["name"]))


def nvtx_summary(t: Timeline) -> list[dict[str, Any]]:
    rows = [{"range": name, "style": rs[0].style, **_stats([r.duration_ns for r in rs])}
            for name, rs in _group(t.nvtx_ranges, lambda r: r.text).items()]
    return sorted(rows, key=lambda r: (-r["total_ns"], r["range"]))


def idle_gaps(t: Timeline, min_gap_ns: int = 10_000) -> dict[str, Any]:
    """Time the GPU ran no kernel or copy between the first and last GPU activity, and the largest gaps."""
    spans = sorted([(k.start_ns, k.end_ns) for k in t.kernels] + [(m.start_ns, m.end_ns) for m in t.memory_ops])
    if not spans:
        return {"busy_ns": 0, "idle_ns": 0, "span_ns": 0, "utilization_pct": None, "largest_gaps": []}
    gaps, busy, cur_start, cur_end = [], 0, spans[0][0], spans[0][1]
    for start, end in spans[1:]:
        if start > cur_end:
            busy += cur_end - cur_start
            if start - cur_end >= min_gap_ns:
                gaps.append({"start_ns": cur_end, "gap_ns": start - cur_end})
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    busy += cur_end - cur_start
    span = spans[-1][1] - spans[0][0] if spans else 0
    span = max(span, cur_end - spans[0][0])
    return {"busy_ns": busy, "idle_ns": span - busy, "span_ns": span,
            "utilization_pct": 100.0 * busy / span if span else None,
            "largest_gaps": sorted(gaps, key=lambda g: -g["gap_ns"])[:10]}


def summarize_timeline(t: Timeline) -> dict[str, Any]:
    return {"source": str(t.source), "kind": t.kind, "gpu": t.gpu_name, "meta": dict(t.meta),
            "kernels": kernel_summary(t), "memory": memory_summary(t), "api": api_summary(t),
            "nvtx": nvtx_summary(t), "gpu_idle": idle_gaps(t)}
