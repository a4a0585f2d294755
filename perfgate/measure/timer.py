"""Time a callable: CUDA events per call with the L2 flushed between samples, or the host clock.

The procedure follows triton.testing.do_bench (per-call events, a 256 MB buffer zeroed before each
sample to evict L2) but sizes warm-up and sample count from time budgets, so a 5 us kernel gets many
samples and a 50 ms one is not run for minutes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from perfgate.model import Timer
from perfgate.settings import MeasureOptions

L2_FLUSH_BYTES = 256 * 1024 * 1024  # larger than any Hopper/Blackwell L2 (50-126 MB)


@dataclass(frozen=True)
class Measurement:
    timer: Timer
    samples_ms: tuple[float, ...]
    warmup_calls: int


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def measure(fn: Callable[..., Any], args: tuple, kwargs: dict, options: MeasureOptions,
            timer: Timer | None = None) -> Measurement:
    """Run fn(*args, **kwargs) enough times to fill the sample budget and return per-call times."""
    chosen = timer or (Timer.CUDA_EVENT if cuda_available() else Timer.HOST)
    if chosen is Timer.CUDA_EVENT:
        return _measure_cuda(lambda: fn(*args, **kwargs), options)
    return _measure_host(lambda: fn(*args, **kwargs), options)


def sample_count(per_call_ms: float, options: MeasureOptions) -> int:
    """How many samples fit the budget, clamped to [min_samples, max_samples]."""
    if per_call_ms <= 0:
        return options.max_samples
    return int(max(options.min_samples, min(options.max_samples, options.budget_ms // per_call_ms)))


def _measure_host(call: Callable[[], Any], options: MeasureOptions) -> Measurement:
    call()  # first call pays for imports, JIT, allocation
    warmups = 0
    start = time.perf_counter()
    while (time.perf_counter() - start) * 1e3 < options.warmup_ms:
        call()
        warmups += 1
    per_call_ms = (time.perf_counter() - start) * 1e3 / warmups if warmups else _host_once(call)
    samples = []
    for _ in range(sample_count(per_call_ms, options)):
        t0 = time.perf_counter_ns()
        call()
        samples.append((time.perf_counter_ns() - t0) / 1e6)
    return Measurement(Timer.HOST, tuple(samples), warmups + 1)


def _host_once(call: Callable[[], Any]) -> float:
    t0 = time.perf_counter_ns()
    call()
    return (time.perf_counter_ns() - t0) / 1e6


def _measure_cuda(call: Callable[[], Any], options: MeasureOptions) -> Measurement:
    import torch

    call()  # compile / autotune outside the measurement
    torch.cuda.synchronize()
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device="cuda") if options.flush_l2 else None
    per_call_ms = _estimate_cuda_ms(call, flush)
    warmups = max(1, int(options.warmup_ms / per_call_ms)) if per_call_ms > 0 else 1
    for _ in range(min(warmups, 10_000)):
        call()
    n = sample_count(per_call_ms, options)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for start, end in zip(starts, ends):
        if flush is not None:
            flush.zero_()
        start.record()
        call()
        end.record()
    torch.cuda.synchronize()
    samples = tuple(s.elapsed_time(e) for s, e in zip(starts, ends))
    return Measurement(Timer.CUDA_EVENT, samples, warmups + 1)


def _estimate_cuda_ms(call: Callable[[], Any], flush: Any) -> float:
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    reps = 5
    start.record()
    for _ in range(reps):
        if flush is not None:
            flush.zero_()
        call()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps
