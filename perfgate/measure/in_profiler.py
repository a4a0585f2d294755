"""Inside a profiling child: run one case's callable so the profiler sees exactly its launches."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

NVTX_PREFIX = "perfgate:"
WARMUP_CALLS = 3
PROFILE_CALLS = 3  # calls inside the NVTX range under nsys: per-call metrics are totals / this


def run_under_profiler(tool: str, case_id: str, fn: Callable[..., Any], args: tuple[Any, ...],
                       kwargs: dict[str, Any], calls: int) -> float:
    """Warm up outside any range (compilation, autotuning), then one NVTX range per case.

    nsys: `calls` calls in the range (per-call metrics divide by it). ncu: one call between
    cudaProfilerStart/Stop, so ncu (started with --profile-from-start off) profiles one launch per
    kernel per case, not every warm-up or sample. Returns the host time of one profiled call (ms), for
    the fixture's return value: profiled timings are not measurements anyone should gate on.
    """
    import time

    import torch

    for _ in range(WARMUP_CALLS):
        fn(*args, **kwargs)
    torch.cuda.synchronize()
    label = NVTX_PREFIX + case_id
    if tool == "ncu":
        torch.cuda.profiler.start()
    n = 1 if tool == "ncu" else calls
    torch.cuda.nvtx.range_push(label)
    t0 = time.perf_counter_ns()
    for _ in range(n):
        fn(*args, **kwargs)
    torch.cuda.synchronize()  # the GPU work ends inside the range
    elapsed_ms = (time.perf_counter_ns() - t0) / 1e6 / n
    torch.cuda.nvtx.range_pop()
    if tool == "ncu":
        torch.cuda.profiler.stop()
    return elapsed_ms
