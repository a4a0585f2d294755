"""A fixed plan of rounds, call for call: pytest-benchmark's `benchmark.pedantic(...)`.

`warmup_rounds` untimed rounds, then `rounds` timed ones; each round gets its arguments (the user's
setup, outside the timing), times `iterations` calls of the target, then runs the teardown (outside the
timing). Nothing else calls the target: no first call, no warm-up of our own, no calibration, no memory
pass, so a target that consumes its input (pops a queue, moves a file) sees exactly what it asked for.
Samples are per-call times (a round's time / iterations), as pytest-benchmark records them.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from perfgate.measure.host_clock import ClockNs, gc_paused
from perfgate.model import Timer

Arguments = tuple[tuple[Any, ...], Mapping[str, Any]]


@dataclass(frozen=True)
class FixedRounds:
    target: Callable[..., Any]
    arguments: Callable[[], Arguments]  # called once per round, before it (the user's setup)
    teardown: Callable[..., Any] | None = None  # called with the round's arguments after it
    rounds: int = 1
    warmup_rounds: int = 0
    iterations: int = 1
    disable_gc: bool = False


@dataclass(frozen=True)
class RoundsMeasurement:
    samples_ms: tuple[float, ...]  # per call
    result: Any  # the last timed call's return value when iterations == 1, else None


def run_rounds(
    plan: FixedRounds,
    timer: Timer,
    flush_l2: bool = True,
    first_round: contextlib.AbstractContextManager[Any] | None = None,
    read_ns: ClockNs | None = None,
) -> RoundsMeasurement:
    """Run the plan; `first_round` wraps the very first round (the autotune watch). `read_ns`: the host timer's
    clock (default time.perf_counter_ns, the wall clock)."""
    timed = _cuda_round(flush_l2) if timer is Timer.CUDA_EVENT else _host_round(read_ns or time.perf_counter_ns)
    samples: list[Elapsed] = []
    result = None
    for i in range(plan.warmup_rounds + plan.rounds):
        args, kwargs = plan.arguments()
        around = first_round if i == 0 and first_round is not None else contextlib.nullcontext()
        with around, gc_paused(plan.disable_gc):
            elapsed, result = timed(plan.target, args, kwargs, plan.iterations)
        if i >= plan.warmup_rounds:
            samples.append(elapsed)
        if plan.teardown is not None:
            plan.teardown(*args, **kwargs)
    per_call = tuple(elapsed_ms() / plan.iterations for elapsed_ms in samples)
    return RoundsMeasurement(per_call, result if plan.iterations == 1 else None)


Elapsed = Callable[[], float]  # a round's milliseconds, read after all rounds ran (CUDA: once the stream is done)
Timed = Callable[[Callable[..., Any], tuple[Any, ...], Mapping[str, Any], int], tuple[Elapsed, Any]]


def _host_round(read_ns: ClockNs) -> Timed:
    def timed(
        fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any], iterations: int
    ) -> tuple[Elapsed, Any]:
        result = None
        if iterations > 1:
            loop = range(iterations)
            t0 = read_ns()
            for _ in loop:
                fn(*args, **kwargs)
            t1 = read_ns()
        else:
            t0 = read_ns()
            result = fn(*args, **kwargs)
            t1 = read_ns()
        return (lambda: (t1 - t0) / 1e6), result

    return timed


def _cuda_round(flush_l2: bool) -> Timed:
    """CUDA events around the round's calls, the L2 flushed before them; read once the stream is done."""
    import torch

    from perfgate.measure import timer as cuda_timer

    flush = cuda_timer.flush_buffer() if flush_l2 else None

    def timed(
        fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any], iterations: int
    ) -> tuple[Elapsed, Any]:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if flush is not None:
            flush.zero_()
        result = None
        start.record()
        for _ in range(iterations):
            result = fn(*args, **kwargs)
        end.record()

        def elapsed_ms() -> float:
            torch.cuda.synchronize()
            return float(start.elapsed_time(end))

        return elapsed_ms, result

    return timed
