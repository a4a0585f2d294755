"""Peak memory of one call, measured in its own pass after the timing (so it never disturbs it).

CUDA: the caching allocator's peak during the call above what was allocated before it (the call's
temporaries and outputs), and the allocator's reserved pool at that peak. Host: the peak of Python
allocations during the call (tracemalloc). Both are deterministic for most kernels, hence a small
default threshold (metrics.py).
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

from perfgate.metrics import PEAK_ALLOCATED, PEAK_HOST, PEAK_RESERVED
from perfgate.model import Metric, Timer


def peak_memory(call: Callable[[], Any], timer: Timer) -> tuple[Metric, ...]:
    if timer is Timer.CUDA_EVENT:
        return _cuda_peak(call)
    return _host_peak(call)


def _cuda_peak(call: Callable[[], Any]) -> tuple[Metric, ...]:
    import torch

    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    result = call()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - before
    reserved = torch.cuda.max_memory_reserved()
    del result
    return (
        Metric(PEAK_ALLOCATED, float(max(peak, 0)), "byte", "memory"),
        Metric(PEAK_RESERVED, float(reserved), "byte", "memory"),
    )


HOST_CALLS = 3  # the smallest of a few calls: the first one may fill caches a later one reuses


def _host_peak(call: Callable[[], Any]) -> tuple[Metric, ...]:
    already = tracemalloc.is_tracing()
    if not already:
        tracemalloc.start()
    peaks = []
    try:
        for _ in range(HOST_CALLS):
            tracemalloc.reset_peak()
            base, _ = tracemalloc.get_traced_memory()
            result = call()
            _, peak = tracemalloc.get_traced_memory()
            del result
            peaks.append(max(peak - base, 0))
    finally:
        if not already:
            tracemalloc.stop()
    return (Metric(PEAK_HOST, float(min(peaks)), "byte", "memory"),)
