"""Time callables: CUDA events per call with the L2 flushed before each sample, or the host clock
(calibrated loops of calls, host_clock.py).

The procedure follows triton.testing.do_bench (per-call events, a 256 MB buffer zeroed before each sample
to evict L2) but sizes warm-up and sample count from time budgets, so a 5 us kernel gets many samples and
a 50 ms one is not run for minutes. On a GPU, each case first waits for the power state to settle
(protocol.py), NVML is polled while it is sampled, and samples taken under a power or thermal cap are
dropped when enough remain.

Several callables may be timed together, interleaved sample by sample (reference, candidate, reference,
...), each with the same flush and warm-up: the ratio of their times then cancels the clock and the
power state.

With a clock probe (measure/sm_clock.py), each sample is stamped right before its start and right after its
end, outside its events: the mean SM clock over that sample, kept beside its time (cycles = time x clock).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from perfgate.config.settings import MeasureOptions
from perfgate.measure import clock, gpu_state
from perfgate.measure.host_clock import (
    HostClock,
    Invocation,
    clock_of,
    cpu_time_clock,
    perf_counter_clock,
    sample_host,
)
from perfgate.measure.protocol import cool_down
from perfgate.measure.sm_clock import ClockProbe
from perfgate.model import GpuState, Timer

L2_FLUSH_BYTES = 256 * 1024 * 1024  # larger than any Hopper/Blackwell L2 (50-126 MB)
CHUNK_MS = 20.0  # samples are synchronised in chunks this long, so NVML polls can be matched to them
MIN_WARMUP_CALLS = 3
COLD_FACTOR = 3.0  # a leading sample this many times the median is warm-up that had not finished
MAX_COLD_FRACTION = 0.05

Call = Callable[[], Any]


@dataclass(frozen=True)
class Measurement:
    timer: Timer
    samples_ms: tuple[tuple[float, ...], ...]  # one tuple per callable, same length, interleaved order
    gpu_state: GpuState | None = None
    calls_per_sample: tuple[int, ...] = ()  # host clock: the calibrated loop of each callable (CUDA: 1 each)
    # CUDA: times the caching allocator went to the device (cudaMalloc, cudaFree, a retry after freeing its
    # cache) while the samples were timed: a host stall inside the events (None: not known)
    device_allocations: int | None = None
    # with a clock probe: the mean SM clock (MHz) over each sample, aligned with samples_ms (None: no reading)
    clocks_mhz: tuple[tuple[float | None, ...], ...] = ()


def cuda_available() -> bool:
    """CUDA through torch. Without an NVIDIA driver on the machine torch is not imported at all: a
    host-timed suite should not pay two seconds of `import torch` to learn that."""
    import sys

    if "torch" not in sys.modules and not _nvidia_driver_present():
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def _nvidia_driver_present() -> bool:
    import ctypes.util
    import os

    return os.path.exists("/dev/nvidiactl") or ctypes.util.find_library("cuda") is not None


def sample_count(per_call_ms: float, options: MeasureOptions) -> int:
    """How many samples fit the budget, clamped to [min_samples, max_samples]."""
    if per_call_ms <= 0:
        return options.max_samples
    return int(max(options.min_samples, min(options.max_samples, options.budget_ms // per_call_ms)))


def measure_calls(
    calls: Sequence[Call],
    options: MeasureOptions,
    timer: Timer,
    device: gpu_state.NvmlDevice | None = None,
    per_round_ms: float | None = None,
    host_clock: HostClock | None = None,
    probe: ClockProbe | None = None,
) -> Measurement:
    """Sample already-compiled callables (their first call has been made by the caller). On the host clock
    each sample is a calibrated loop of calls (host_clock.py), read through measure/clock.py (a test's
    clock, or the `time` function of the host timer: wall or CPU time); `host_clock` replaces it outright.
    `per_round_ms`: one round's time when already known (A/B mode's rounds), instead of timing a few rounds
    first (CUDA). `probe`: stamp each sample to record the SM clock it ran at (sm_clock.py)."""
    if timer is Timer.CUDA_EVENT:
        return _measure_cuda(calls, options, device, per_round_ms, probe)
    invocations = [c if isinstance(c, Invocation) else Invocation(c) for c in calls]
    reader = host_clock or host_clock_for(timer)
    m = sample_host(invocations, lambda round_ms: sample_count(round_ms, options), options.warmup_ms, reader, probe)
    kept = _kept_rounds([list(s) for s in m.samples_ms], range(len(m.samples_ms[0]) if m.samples_ms else 0))
    return Measurement(
        timer,
        _select([list(s) for s in m.samples_ms], kept),
        calls_per_sample=m.calls_per_sample,
        clocks_mhz=_select([list(c) for c in m.clocks_mhz], kept) if m.clocks_mhz else (),
    )


def host_clock_for(timer: Timer) -> HostClock:
    """The clock a host timer reads: the test's clock when one is installed (measure/clock.py), else the `time`
    module's own function (wall: perf_counter_ns; CPU: thread_time_ns / process_time_ns)."""
    current = clock.current()
    if timer is Timer.HOST_THREAD_CPU:
        return cpu_time_clock("thread_time") if current is clock.SYSTEM else clock_of(current.thread_time_ns)
    if timer is Timer.HOST_PROCESS_CPU:
        return cpu_time_clock("process_time") if current is clock.SYSTEM else clock_of(current.process_time_ns)
    return perf_counter_clock() if current is clock.SYSTEM else clock_of(current.perf_counter_ns)


def _measure_cuda(
    calls: Sequence[Call],
    options: MeasureOptions,
    device: gpu_state.NvmlDevice | None,
    known_round_ms: float | None = None,
    probe: ClockProbe | None = None,
) -> Measurement:
    flush = flush_buffer() if options.flush_l2 else None
    waited_ms = cool_down(device, options.cooldown_max_ms)
    sampler = gpu_state.Sampler(device) if device is not None else None
    if sampler is not None:
        sampler.__enter__()
    try:
        per_round_ms = known_round_ms if known_round_ms else _estimate_cuda_ms(calls, flush)
        warmups = max(MIN_WARMUP_CALLS, int(options.warmup_ms / per_round_ms) if per_round_ms > 0 else 1)
        for _ in range(min(warmups, 10_000)):
            for call in calls:
                call()
        n = sample_count(per_round_ms, options)
        allocations = device_allocations()
        samples, clocks, chunks = _cuda_chunks(calls, flush, n, per_round_ms, probe)
        after = device_allocations()
        during = after - allocations if after is not None and allocations is not None else None
    finally:
        if sampler is not None:
            sampler.__exit__(None, None, None)
    state = None
    kept: range | list[int] = range(len(samples[0]) if samples else 0)
    if sampler is not None and device is not None:
        kept, excluded = _unthrottled(len(kept), chunks, sampler.readings, options)
        state = gpu_state.summarize_state(sampler.readings, device, waited_ms, excluded)
    kept = _kept_rounds(samples, kept)
    return Measurement(
        Timer.CUDA_EVENT,
        _select(samples, kept),
        state,
        device_allocations=during,
        clocks_mhz=_select(clocks, kept) if probe is not None else (),
    )


ALLOCATOR_DEVICE_CALLS = ("num_device_alloc", "num_device_free", "num_alloc_retries", "num_ooms")


def device_allocations() -> int | None:
    """How often the CUDA caching allocator has gone to the device so far (torch.cuda.memory_stats);
    None when this torch does not count it."""
    import torch

    stats = torch.cuda.memory_stats()
    counts = [stats.get(key) for key in ALLOCATOR_DEVICE_CALLS]
    return sum(int(c) for c in counts if c is not None) if any(c is not None for c in counts) else None


def flush_buffer() -> Any:
    """The buffer zeroed before every sample to evict L2 (allocated once per case, outside the timing)."""
    import torch

    return torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device="cuda")


def _estimate_cuda_ms(calls: Sequence[Call], flush: Any) -> float:
    """Per-round time of the calls alone (events around each call, the flush outside them)."""
    import torch

    reps = 5
    pairs = _event_pairs(len(calls), reps)
    _record_rounds(calls, pairs, flush)
    torch.cuda.synchronize()
    return sum(float(s.elapsed_time(e)) for rp in pairs for s, e in rp) / reps


def _event_pairs(n_calls: int, rounds: int) -> list[list[tuple[Any, Any]]]:
    """(start, end) CUDA events per round and call, made before timing starts."""
    import torch

    return [
        [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n_calls)]
        for _ in range(rounds)
    ]


def _record_rounds(
    calls: Sequence[Call], rounds: list[list[tuple[Any, Any]]], flush: Any, probe: ClockProbe | None = None
) -> None:
    """One round: each call in turn (interleaved), the L2 flush outside its events; with a probe, stamps 2i and
    2i + 1 right before and right after the i-th call's events."""
    stamp = 0
    for pairs in rounds:
        for call, (start, end) in zip(calls, pairs):
            if flush is not None:
                flush.zero_()
            if probe is not None:
                probe.stamp(stamp)
            start.record()
            call()
            end.record()
            if probe is not None:
                probe.stamp(stamp + 1)
            stamp += 2


Chunk = tuple[int, int, float, float]  # (first round, end round, t_start s, t_end s)


def _cuda_chunks(
    calls: Sequence[Call], flush: Any, n: int, per_round_ms: float, probe: ClockProbe | None = None
) -> tuple[list[list[float]], list[list[float | None]], list[Chunk]]:
    """n interleaved rounds, synchronised every ~CHUNK_MS: per call its samples and (with a probe) the mean SM
    clock over each, and the chunks."""
    import torch

    per_chunk = max(1, int(CHUNK_MS / per_round_ms)) if per_round_ms > 0 else n
    now_ns = clock.current().perf_counter_ns
    samples: list[list[float]] = [[] for _ in calls]
    clocks: list[list[float | None]] = [[] for _ in calls]
    chunks = []
    done = 0
    while done < n:
        size = min(per_chunk, n - done)
        events = _event_pairs(len(calls), size)
        if probe is not None:
            probe.begin(2 * size * len(calls))
        t0 = now_ns() / 1e9
        _record_rounds(calls, events, flush, probe)
        torch.cuda.synchronize()
        chunks.append((done, done + size, t0, now_ns() / 1e9))
        for r, pairs in enumerate(events):
            for i, (start, end) in enumerate(pairs):
                samples[i].append(float(start.elapsed_time(end)))
                if probe is not None:
                    stamp = 2 * (r * len(calls) + i)
                    clocks[i].append(probe.mhz(stamp, stamp + 1))
        done += size
    return samples, clocks, chunks


def _unthrottled(
    n: int, chunks: list[Chunk], readings: list[gpu_state.Reading], options: MeasureOptions
) -> tuple[range | list[int], int]:
    """The rounds to keep, without those of chunks NVML saw under a power/thermal cap (NVBench drops samples
    below 75% of the default clock), unless fewer than min_samples would remain: then all are kept, and the
    case is flagged as throttled instead. Returns (kept rounds, rounds dropped)."""
    margin = gpu_state.POLL_INTERVAL_S  # the poll nearest a short chunk may fall just outside it
    bad = {
        i
        for first, end, t0, t1 in chunks
        if gpu_state.limited_between(readings, t0 - margin, t1 + margin)
        for i in range(first, end)
    }
    if not options.exclude_throttled or not bad or n - len(bad) < options.min_samples:
        return range(n), 0
    return [i for i in range(n) if i not in bad], len(bad)


def _kept_rounds(samples: list[list[float]], rounds: range | list[int]) -> list[int]:
    """`rounds` without the leading ones far above the median: a warm-up that had not finished (a lazily
    loaded module, a first-touch page fault); at most 5% of them, so no compile or first-call time is
    recorded."""
    import statistics

    kept = list(rounds)
    if not samples or len(kept) < 20:
        return kept
    limit = int(len(kept) * MAX_COLD_FRACTION)
    medians = [statistics.median(s[i] for i in kept) for s in samples]
    cold = 0
    while cold < limit and any(s[kept[cold]] > COLD_FACTOR * m > 0 for s, m in zip(samples, medians)):
        cold += 1
    return kept[cold:]


def _select(series: Sequence[Sequence[Any]], rounds: Sequence[int]) -> tuple[tuple[Any, ...], ...]:
    return tuple(tuple(s[i] for i in rounds) for s in series)
