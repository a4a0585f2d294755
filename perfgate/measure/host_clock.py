"""The host clock, sized for short calls: each sample times a loop of calls long enough that reading the
clock costs under 1% of it, and records the per-call time (timeit and pytest-benchmark calibrate the
same way). With one call per sample, a 300 ns call carried ~0.5 us of clock and wrapper overhead and
read 2-3x too slow.

The timed loop calls `fn(*args, **kwargs)` itself, as pytest-benchmark's runner does: a wrapper
closure would add its own frame (~50 ns) to every call. Several callables keep their own loop counts
and are still interleaved sample by sample.
"""

from __future__ import annotations

import functools
import gc
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from perfgate.measure.sm_clock import ClockProbe

ClockNs = Callable[[], int]

MIN_SAMPLE_NS = 10_000  # a sample lasts at least 10 us ...
OVERHEAD_FACTOR = 100  # ... and 100x what the two clock reads around it cost: < 1% of every call
MAX_LOOPS = 1_000_000
ESTIMATE_FRACTION = 0.1  # a loop this share of the target long is long enough to extrapolate from
CALIBRATION_REPEATS = 3  # the fastest of a few timings: an interrupt in one must not shrink the loop
MIN_WARMUP_CALLS = 3
OVERHEAD_READS = 64


@dataclass(frozen=True)
class Invocation:
    """`fn(*args, **kwargs)`; calling it makes one call (first calls, checks, the memory pass)."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __call__(self) -> Any:
        return self.fn(*self.args, **self.kwargs)


@dataclass(frozen=True)
class HostClock:
    """A nanosecond clock and what one sample's pair of reads costs on it."""

    read_ns: ClockNs
    overhead_ns: int
    resolution_ns: int = 1

    @property
    def target_sample_ns(self) -> int:
        return max(MIN_SAMPLE_NS, OVERHEAD_FACTOR * max(self.overhead_ns, self.resolution_ns))


def clock_of(read_ns: ClockNs, resolution_ns: int = 1) -> HostClock:
    """The cost of two back-to-back reads (the fastest of a few): the fixed error a sample carries."""
    best = min(-read_ns() + read_ns() for _ in range(OVERHEAD_READS))
    return HostClock(read_ns, max(best, 0), max(resolution_ns, 1))


@functools.cache
def perf_counter_clock() -> HostClock:
    """time.perf_counter_ns, measured once per process."""
    resolution_ns = math.ceil(time.get_clock_info("perf_counter").resolution * 1e9)
    return clock_of(time.perf_counter_ns, resolution_ns)


# CPU time (host_timer = "thread_cpu" / "process_cpu"): what the call ran, not what it waited. The wall clock
# read a 2 ms call as 11-30 ms on a loaded 2-core host where thread_time read 2.05-2.43 ms (issue 31). It cannot
# see time spent off the CPU by design: I/O, sleeps, locks held by others, work on other threads (the thread
# clock; the process clock adds the other threads' CPU time, including perfgate's own poller's). On Linux both
# are clock_gettime(CLOCK_*_CPUTIME_ID): a system call, not the vDSO (~0.2-0.5 us a read; host_clock sizes the
# loop from what a read costs) and nanosecond accounting from the scheduler.
CPU_CLOCKS = {"thread_time": time.thread_time_ns, "process_time": time.process_time_ns}


@functools.cache
def cpu_time_clock(name: Literal["thread_time", "process_time"]) -> HostClock:
    """time.thread_time_ns or time.process_time_ns (by `time.get_clock_info` name), measured once per process."""
    resolution_ns = math.ceil(time.get_clock_info(name).resolution * 1e9)
    return clock_of(CPU_CLOCKS[name], resolution_ns)


@dataclass(frozen=True)
class HostSamples:
    samples_ms: tuple[tuple[float, ...], ...]  # per call, one tuple per callable, interleaved order
    calls_per_sample: tuple[int, ...]
    warmup_calls: int
    clocks_mhz: tuple[tuple[float | None, ...], ...] = ()  # with a clock probe: the clock over each sample


def time_loop(inv: Invocation, loops: int, read_ns: ClockNs) -> int:
    """Nanoseconds for `loops` calls, the clock read once before and once after."""
    fn, args, kwargs, rounds = inv.fn, inv.args, inv.kwargs, range(loops)
    t0 = read_ns()
    for _ in rounds:
        fn(*args, **kwargs)
    return read_ns() - t0


def calibrate_loops(inv: Invocation, clock: HostClock, fastest_call_ns: float = 0.0) -> tuple[int, float]:
    """(calls per sample, ns per call): one call when a single call already lasts the target sample
    (`fastest_call_ns`, seen in the warm-up); else grow the loop tenfold until it lasts a tenth of the
    target, extrapolate, and re-time until a loop lasts the whole target."""
    target, loops = clock.target_sample_ns, 1
    if fastest_call_ns >= target:
        return 1, fastest_call_ns
    previous = (0, -1)  # (loops, ns) of the last timing
    while True:
        elapsed = min(time_loop(inv, loops, clock.read_ns) for _ in range(CALIBRATION_REPEATS))
        if loops > previous[0] and elapsed <= previous[1]:
            # more calls took no longer: this clock does not see the calls (a test's stand-in clock that
            # moves only when told), so a longer loop would only cost time
            return previous[0], previous[1] / previous[0]
        if elapsed >= target or loops >= MAX_LOOPS:
            return loops, elapsed / loops
        previous = (loops, elapsed)
        if elapsed >= ESTIMATE_FRACTION * target:
            loops = min(MAX_LOOPS, max(loops + 1, math.ceil(target * loops / elapsed)))
        else:
            loops = min(MAX_LOOPS, loops * 10)


@contextmanager
def gc_paused(pause: bool) -> Iterator[None]:
    """pytest-benchmark's --benchmark-disable-gc: no collection inside the timed region."""
    was_enabled = gc.isenabled()
    if pause:
        gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def warm_up(invocations: Sequence[Invocation], warmup_ms: float, read_ns: ClockNs) -> tuple[int, list[float]]:
    """Call each in turn for `warmup_ms` (at least MIN_WARMUP_CALLS rounds): the rounds made and each
    callable's fastest single call (ns)."""
    rounds, start = 0, read_ns()
    fastest = [math.inf] * len(invocations)
    while rounds < MIN_WARMUP_CALLS or (read_ns() - start) / 1e6 < warmup_ms:
        for i, inv in enumerate(invocations):
            fastest[i] = min(fastest[i], time_loop(inv, 1, read_ns))
        rounds += 1
    return rounds, fastest


def sample_host(
    invocations: Sequence[Invocation],
    n_of: Callable[[float], int],
    warmup_ms: float,
    clock: HostClock,
    probe: ClockProbe | None = None,
) -> HostSamples:
    """Warm up, size each callable's loop, then `n_of(ms per round)` interleaved samples of per-call ms; with a
    probe (a test's stand-in SM clock: the host has none), stamps around each sample's loop."""
    warmups, fastest = warm_up(invocations, warmup_ms, clock.read_ns)
    sized = [calibrate_loops(inv, clock, ns) for inv, ns in zip(invocations, fastest)]
    loops = tuple(n for n, _ in sized)
    n = n_of(sum(n * per_call_ns for n, per_call_ns in sized) / 1e6)
    samples: list[list[float]] = [[] for _ in invocations]
    if probe is not None:
        probe.begin(2 * n * len(invocations))
    for r in range(n):
        for i, inv in enumerate(invocations):
            if probe is not None:
                probe.stamp(2 * (r * len(invocations) + i))
            samples[i].append(time_loop(inv, loops[i], clock.read_ns) / loops[i] / 1e6)
            if probe is not None:
                probe.stamp(2 * (r * len(invocations) + i) + 1)
    clocks = (
        tuple(
            tuple(probe.mhz(2 * (r * len(invocations) + i), 2 * (r * len(invocations) + i) + 1) for r in range(n))
            for i in range(len(invocations))
        )
        if probe is not None
        else ()
    )
    return HostSamples(tuple(tuple(s) for s in samples), loops, warmups, clocks)
