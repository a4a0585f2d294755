"""The SM clock each sample ran at, read next to the sample, so a compute-bound case can be counted in cycles.

A compute-bound kernel's time is its cycles over the SM clock, and the clock is what the power cap moves: on
the H100 a bf16 8192^3 GEMM ran under the software power cap in 67% of NVML polls and its process medians
spread 1.48-1.59 ms. NVML's clock polls (every 5 ms) are too coarse to say which clock one 200 us sample ran
at (on the H200 they read 1980 MHz throughout while the cap held), and a spin before and after the whole
measurement made the spread larger, not smaller (docs/cycles.md).

The probe is NVBench's (nvbench/detail/timestamps_kernel.cu): a kernel of one block per SM whose block on SM 0
writes the device-wide %globaltimer (ns) and SM 0's own %clock64 (cycles). Two stamps, one right before a
sample's start event and one right after its end event, give the mean SM clock over exactly that sample:
delta clock64 / delta globaltimer. No calibration and no CUDA events are involved: a ratio of two hardware
counters read by the same SM. A stamp whose blocks all missed SM 0 stays 0 and leaves its sample without a
clock (such samples are left out of the cycles, never guessed).

Tests install a stand-in (`install`) whose frequency they set: a slowdown that only lowers the clock is then
invisible in cycles, a real one shows in both (tests/test_cycles.py).
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from perfgate.model import CycleStats, Timer

MIN_MHZ, MAX_MHZ = 1.0, 10_000.0  # a reading outside these is not a clock (a counter that wrapped, a bad stamp)
MIN_PROBED_SHARE = 0.5  # fewer samples with a clock than this share: no cycles for the case


class ClockProbe(Protocol):
    """Stamps around samples; the mean SM clock between two of them."""

    def begin(self, stamps: int) -> None:
        """Room for this many stamps (one chunk of samples; earlier stamps are forgotten)."""

    def stamp(self, index: int) -> None:
        """Stamp `index` now (on a GPU: enqueued on the current stream, after the work before it)."""

    def mhz(self, first: int, second: int) -> float | None:
        """The mean SM clock between two stamps of this chunk, once its work has finished; None when unknown."""


ProbeFactory = Callable[[Timer], "ClockProbe | None"]
_installed: list[ProbeFactory | None] = [None]  # one slot: a test's stand-in
_unavailable: list[str] = []  # why the GPU probe could not run in this process (said once per case, in its notes)


def install(factory: ProbeFactory | None) -> ProbeFactory | None:
    """Make `factory` the source of clock probes (None: the real one); returns the one it replaces."""
    previous, _installed[0] = _installed[0], factory
    return previous


def probe_for(timer: Timer) -> ClockProbe | None:
    """A probe for a case timed by `timer`: a test's stand-in when installed, the SM 0 timestamp kernel on CUDA,
    else None (the host clock has no SM clock)."""
    factory = _installed[0]
    if factory is not None:
        return factory(timer)
    if timer is not Timer.CUDA_EVENT:
        return None
    return SmTimestamps.create()


def unavailable() -> str:
    """Why this process has no SM clock probe on CUDA ("" when it has one, or never tried)."""
    return _unavailable[0] if _unavailable else ""


def clock_mhz(cycles: int, ns: int) -> float | None:
    """Cycles over nanoseconds as MHz; None for a span that is not one (no time, or an impossible clock)."""
    if ns <= 0 or cycles <= 0:
        return None
    mhz = 1e3 * cycles / ns
    return mhz if MIN_MHZ <= mhz <= MAX_MHZ else None


class SmTimestamps:
    """NVBench's timestamp kernel in Triton: per stamp, (globaltimer ns, clock64 cycles) read on SM 0."""

    def __init__(self, kernel: Any, sms: int) -> None:
        import torch

        self._kernel = kernel
        self._grid = (sms,)
        self._buffer = torch.zeros(2, dtype=torch.int64, device="cuda")
        self._host: list[int] | None = None

    @classmethod
    def create(cls) -> SmTimestamps | None:
        """The probe, compiled and tried once; None where it cannot run (no Triton, not an NVIDIA GPU)."""
        try:
            import torch

            sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
            probe = cls(_stamp_kernel(), sms)
            probe.begin(2)
            probe.stamp(0)
            probe.stamp(1)
            torch.cuda.synchronize()
            probe.mhz(0, 1)
        except Exception as err:  # noqa: BLE001 - no Triton, no PTX (ROCm), a refusing driver: no cycles, no failure
            _unavailable[:] = [f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[:200]]
            return None
        return probe

    def begin(self, stamps: int) -> None:
        import torch

        if self._buffer.numel() < 2 * stamps:
            self._buffer = torch.zeros(2 * stamps, dtype=torch.int64, device="cuda")
        else:
            self._buffer.zero_()
        self._host = None

    def stamp(self, index: int) -> None:
        self._kernel[self._grid](self._buffer, index, num_warps=1)

    def mhz(self, first: int, second: int) -> float | None:
        if self._host is None:
            self._host = [int(v) for v in self._buffer.tolist()]
        ns0, cycles0 = self._host[2 * first], self._host[2 * first + 1]
        ns1, cycles1 = self._host[2 * second], self._host[2 * second + 1]
        if 0 in (ns0, cycles0, ns1, cycles1):  # no block of that stamp ran on SM 0
            return None
        return clock_mhz(cycles1 - cycles0, ns1 - ns0)


@functools.cache
def _stamp_kernel() -> Any:
    """Built on first use (importing Triton at import time would cost every host-only suite seconds)."""
    import triton
    import triton.language as tl

    @triton.jit(do_not_specialize=["index"])  # one kernel for every index
    def stamp(out_ptr, index):  # type: ignore[no-untyped-def]  # Triton reads annotations
        sm = tl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r", [], dtype=tl.int32, is_pure=True, pack=1)
        ns = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)
        cycles = tl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)
        if sm == 0:
            tl.store(out_ptr + 2 * index, ns)
            tl.store(out_ptr + 2 * index + 1, cycles)

    return stamp


def cycle_stats(samples_ms: Sequence[float], clocks_mhz: Sequence[float | None]) -> CycleStats | None:
    """The samples in cycles (time x the clock each ran at); None when fewer than half had a clock reading."""
    pairs = [(t, f) for t, f in zip(samples_ms, clocks_mhz) if f is not None]
    if not pairs or len(pairs) < MIN_PROBED_SHARE * len(samples_ms):
        return None
    clocks = [f for _, f in pairs]
    return CycleStats(
        median_mcycles=float(statistics.median(t * f / 1e3 for t, f in pairs)),  # ms x MHz = 1e3 cycles
        clock_median_mhz=float(statistics.median(clocks)),
        clock_min_mhz=min(clocks),
        clock_max_mhz=max(clocks),
        probed_samples=len(pairs),
    )
