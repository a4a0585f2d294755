"""Inside a profiling child: run one case's callable so the profiler sees exactly its launches."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

NVTX_PREFIX = "perfgate:"
WARMUP_CALLS = 3
PROFILE_CALLS = 3  # calls inside the NVTX range under nsys: per-call metrics are totals / this


@dataclass(frozen=True)
class ChildRange:
    """What a profiling child wraps around one case, as its profiler (measure/profilers.py) needs it."""

    calls: int  # calls of the case's callable inside its NVTX range (per-call metrics divide by it)
    profiler_api: bool = False  # cudaProfilerStart/Stop around the range: for a tool started with capture off


def run_under_profiler(
    child: ChildRange, case_id: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> float:
    """Warm up outside any range (compilation, autotuning), then one NVTX range per case holding
    `child.calls` calls, between cudaProfilerStart/Stop when `child.profiler_api` (so ncu, started with
    --profile-from-start off, profiles one launch per kernel per case, not every warm-up or sample).
    Returns the host time of one profiled call (ms), for the fixture's return value: profiled timings are
    not measurements anyone should gate on.
    """
    import time

    import torch

    for _ in range(WARMUP_CALLS):
        fn(*args, **kwargs)
    torch.cuda.synchronize()
    label = NVTX_PREFIX + case_id
    if child.profiler_api:
        torch.cuda.profiler.start()
    torch.cuda.nvtx.range_push(label)
    t0 = time.perf_counter_ns()
    for _ in range(child.calls):
        fn(*args, **kwargs)
    torch.cuda.synchronize()  # the GPU work ends inside the range
    elapsed_ms = (time.perf_counter_ns() - t0) / 1e6 / child.calls
    torch.cuda.nvtx.range_pop()
    if child.profiler_api:
        torch.cuda.profiler.stop()
    return elapsed_ms
