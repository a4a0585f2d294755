"""Which measure a case is gated on: its time, or its time in SM cycles (docs/cycles.md).

A compute-bound kernel runs a fixed number of SM cycles: its time is cycles / SM clock, and the SM clock is what
the power cap moves (a bf16 8192^3 cuBLAS GEMM on the H100 ran under the cap in 67% of NVML polls, its process
medians 1.48-1.59 ms apart). Counting it in cycles (each sample's time x the clock it ran at, measure/sm_clock.py)
takes the clock out. A memory-bound kernel waits on DRAM, whose clock does not follow the SM's: its time holds
when the SM clock drops and its cycles fall with it, so its time is the steady measure.

Which one a case is: from the work it declares against the GPU's roofline (arithmetic intensity flops /
bytes_moved at or above the ridge point peak FLOP/s / peak bytes/s is compute-bound; flops alone is taken as
compute-bound, bytes alone as memory-bound), else from ncu's speed-of-light when the run was profiled (SM
throughput at or above memory throughput), else time. `gated_measure` ("time", "cycles"; marker, override or
[tool.perfgate]) decides instead. Cycles are gated only where both the run and the calibrated baseline read the
clock; otherwise time is, and the reason says why.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from perfgate.baseline import BaselineCase
from perfgate.config.settings import Settings
from perfgate.model import CaseResult, GatedMeasure

# Spec-sheet ceilings (dense bf16 tensor TFLOP/s, DRAM GB/s) by device name, used when none are configured.
DEVICE_PEAKS = {
    "H100 80GB HBM3": (989.0, 3350.0),
    "H100 SXM": (989.0, 3350.0),
    "H100 PCIe": (756.0, 2000.0),
    "H200": (989.0, 4800.0),
    "A100-SXM4-80GB": (312.0, 2039.0),
    "A100-SXM4-40GB": (312.0, 1555.0),
    "A100 80GB PCIe": (312.0, 1935.0),
    "L40S": (362.0, 864.0),
    "RTX 4090": (165.0, 1008.0),
}
SM_SOL = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEMORY_SOL = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
NCU_DURATION = "gpu__time_duration.sum"


class Bound(str, enum.Enum):
    COMPUTE = "compute-bound"
    MEMORY = "memory-bound"
    UNKNOWN = "bottleneck unknown"


@dataclass(frozen=True)
class MeasureChoice:
    """The measure a case is gated on (TIME or CYCLES) and why, in words for the report."""

    measure: GatedMeasure
    reason: str


def device_peaks(device_name: str, settings: Settings) -> tuple[float | None, float | None, str]:
    """(TFLOP/s, GB/s, where they came from): configured, else the device's spec sheet; None where unknown."""
    if settings.peak_tflops and settings.peak_gbps:
        return settings.peak_tflops, settings.peak_gbps, "configured"
    spec = next((v for k, v in DEVICE_PEAKS.items() if k in device_name), None)
    if spec is None:
        return settings.peak_tflops, settings.peak_gbps, "configured"
    return settings.peak_tflops or spec[0], settings.peak_gbps or spec[1], "spec sheet"


def ridge_flop_per_byte(device_name: str, settings: Settings) -> tuple[float | None, str]:
    """The roofline's ridge point: peak FLOP/s over peak bytes/s (where the roofs meet)."""
    tflops, gbps, source = device_peaks(device_name, settings)
    if not tflops or not gbps:
        return None, source
    return 1e12 * tflops / (1e9 * gbps), source


def bound(res: CaseResult, device_name: str, settings: Settings) -> tuple[Bound, str]:
    """What limits the case, and how that was decided."""
    flops, nbytes = res.flops, res.bytes_moved
    if flops and nbytes:
        ridge, source = ridge_flop_per_byte(device_name, settings)
        if ridge is None:
            return Bound.UNKNOWN, f"no roofline for {device_name}: set peak_tflops and peak_gbps"
        intensity = flops / nbytes
        side = Bound.COMPUTE if intensity >= ridge else Bound.MEMORY
        sign = ">=" if side is Bound.COMPUTE else "<"
        return side, f"{intensity:.3g} FLOP/byte {sign} the ridge point {ridge:.3g} ({source})"
    if flops:
        return Bound.COMPUTE, "flops declared, no bytes_moved"
    if nbytes:
        return Bound.MEMORY, "bytes_moved declared, no flops"
    return _ncu_bound(res)


def _ncu_bound(res: CaseResult) -> tuple[Bound, str]:
    """ncu's speed-of-light of the case's longest kernel, when the run was profiled."""
    per_kernel: dict[str, dict[str, float]] = {}
    for m in res.metrics:
        if m.source == "ncu" and m.name in (SM_SOL, MEMORY_SOL, NCU_DURATION):
            per_kernel.setdefault(m.kernel, {})[m.name] = m.value
    known = [(k, v) for k, v in per_kernel.items() if SM_SOL in v and MEMORY_SOL in v]
    if not known:
        return Bound.UNKNOWN, "no flops or bytes_moved declared, not profiled with ncu"
    kernel, sol = max(known, key=lambda kv: kv[1].get(NCU_DURATION, 0.0))
    side = Bound.COMPUTE if sol[SM_SOL] >= sol[MEMORY_SOL] else Bound.MEMORY
    return side, f"ncu: SM throughput {sol[SM_SOL]:.0f}% of peak, memory {sol[MEMORY_SOL]:.0f}% ({kernel})"


def choose_measure(res: CaseResult, base: BaselineCase, device_name: str, settings: Settings) -> MeasureChoice:
    """Cycles for a compute-bound case (or one set to cycles) whose run and calibrated baseline both read the SM
    clock; time otherwise. The reason is shown beside the verdict."""
    missing = _why_no_cycles(res, base)
    wanted = res.thresholds.gated_measure
    if wanted is GatedMeasure.TIME:
        return MeasureChoice(GatedMeasure.TIME, "gated_measure = time")
    if wanted is GatedMeasure.CYCLES:
        if missing:
            return MeasureChoice(GatedMeasure.TIME, f"gated_measure = cycles, but {missing}")
        return MeasureChoice(GatedMeasure.CYCLES, "gated_measure = cycles")
    side, why = bound(res, device_name, settings)
    if side is not Bound.COMPUTE:
        return MeasureChoice(GatedMeasure.TIME, f"{side.value}: {why}")
    if missing:
        return MeasureChoice(GatedMeasure.TIME, f"compute-bound ({why}), but {missing}")
    return MeasureChoice(GatedMeasure.CYCLES, f"compute-bound: {why}")


def _why_no_cycles(res: CaseResult, base: BaselineCase) -> str:
    if res.cycles is None:
        return "no SM clock was read in this run (the host clock, or no clock probe)"
    if not base.process_mcycles:
        return "the baseline holds no cycles: recalibrate to gate them"
    return ""
