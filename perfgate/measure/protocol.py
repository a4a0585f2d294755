"""The power-state protocol: every case is sampled from the same state, whatever ran before it.

Measured on the H100 (lab/gpu/power_protocol_experiment.py, docs/accuracy.md "Protocol"): under
sustained tensor-core load the GPU reaches its software power cap (NVML reason 0x4) within 0.25 s and
runs 7-30% slower; after the load stops, the SM clock returns within 0.2 s but the cap is still reported
for ~0.6 s while the power average falls. Five fresh processes with a random 0-2 s of load before each
case spread their medians by 6.9% (cuBLAS matmul), 5.3% (flash attention), 3.9% (softmax) with no
protocol; 1.0% / 0.8% / 0.2% when each case first ran for 2 s (steady capped state, but 3% slower);
1.9% / 1.6% / 0.9% waiting until the cap cleared; 0.46% / 0.91% / 0.80% waiting until it cleared and
then 300 ms more. That last one is the protocol: short cases are then sampled in the boost state, the
state a GPU is in when a CI job starts, in baseline and current runs alike.

A GPU that is cool (no limiting reason, power low) is not kept waiting.
"""

from __future__ import annotations

from perfgate.measure import clock
from perfgate.measure.gpu_state import NvmlDevice

SETTLE_S = 0.3  # after the cap clears: the power average is still falling (measured, see above)
HOT_POWER_FRACTION = 0.35  # above this share of the power limit the GPU has just been busy
POLL_S = 0.01


def cool_down(device: NvmlDevice | None, max_ms: float) -> float:
    """Wait, at most `max_ms`, until no performance-limiting reason is reported, then settle if the GPU
    was hot. Returns the milliseconds waited (0 without NVML or when the GPU is already cool)."""
    if device is None or max_ms <= 0:
        return 0.0
    clk = clock.current()
    start = clk.perf_counter_ns() / 1e9
    deadline = start + max_ms / 1e3
    first = device.read()
    hot = first.limited or (
        first.power_w is not None
        and device.power_limit_w is not None
        and first.power_w > HOT_POWER_FRACTION * device.power_limit_w
    )
    reading = first
    while reading.limited and clk.perf_counter_ns() / 1e9 < deadline:
        clk.sleep(POLL_S)
        reading = device.read()
    if hot:
        clk.sleep(max(0.0, min(SETTLE_S, deadline - clk.perf_counter_ns() / 1e9)))
    return (clk.perf_counter_ns() / 1e9 - start) * 1e3
