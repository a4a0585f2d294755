"""Per-kernel diagnosis from Nsight Compute metrics: speed-of-light, occupancy and its limiter, memory
behaviour, tensor pipes, warp stalls, a bottleneck class and recommendations computed from the numbers."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from perfgate.parse.invariants import OutOfRange
from perfgate.parse.records import NcuLaunch

SOL_BUSY_PCT = 60.0
# ncu's sampled counters read a little above 100 % on real kernels (issue-slot use at 104.4 % in the
# recorded full.ncu-rep): the diagnosis takes percentages up to 100 + this, and refuses what is beyond
PCT_OVERSHOOT = 5.0  # a unit above this share of its peak is "the" bottleneck (NVIDIA's SOL guidance)
STALL = re.compile(r"^smsp__average_warps_issue_stalled_(.+)_per_issue_active\.ratio$")
LIMITERS = ("registers", "shared_mem", "warps", "blocks", "barriers")
STALL_ADVICE = {
    "long_scoreboard": "warps wait on global/local memory loads: keep more loads in flight (wider vector loads, "
    "more independent work per thread, software pipelining)",
    "barrier": "warps wait at __syncthreads/tl barriers: unbalanced work between warps of a block",
    "short_scoreboard": "warps wait on shared memory or special-function results: bank conflicts or MUFU pressure",
    "mio_throttle": "the shared-memory/MIO queue is full: fewer, wider shared-memory accesses",
    "lg_throttle": "the load/store queue is full: use wider (128-bit) accesses instead of many narrow ones",
    "math_pipe_throttle": "a math pipe is saturated: the kernel is at that pipe's throughput",
    "wait": "fixed-latency dependencies: more independent instructions (ILP) between dependent ones",
    "not_selected": "warps are ready but not picked: plenty of parallelism, issue-bound",
    "drain": "warps wait for memory stores to drain at exit",
    "membar": "memory barriers/fences stall warps",
    "dispatch_stall": "the dispatcher stalls: pipeline conflicts",
    "no_instruction": "instruction cache misses or branch targets: code too large or divergent",
    "branch_resolving": "branch resolution: divergent control flow",
    "sleeping": "warps sleep (nanosleep/yield)",
    "tex_throttle": "the texture pipe is full",
    "imc_miss": "constant cache misses",
    "selected": "warps issuing (not a stall)",
}


@dataclass(frozen=True)
class Diagnosis:
    name: str
    launch_id: int
    nvtx: tuple[str, ...]
    duration_ns: float | None
    sm_sol_pct: float | None
    memory_sol_pct: float | None
    dram_pct: float | None
    dram_bytes: float | None
    dram_bandwidth_bps: float | None
    achieved_occupancy_pct: float | None
    theoretical_occupancy_pct: float | None
    occupancy_limiter: str | None
    registers_per_thread: float | None
    shared_mem_per_block_bytes: float | None
    block_size: float | None
    grid_size: float | None
    waves_per_sm: float | None
    l1_hit_pct: float | None
    l2_hit_pct: float | None
    tensor_pipe_pct: float | None
    spill_requests: float | None
    top_stalls: tuple[tuple[str, float], ...]
    pipes: tuple[tuple[str, float], ...]  # instruction pipes by utilisation, busiest first
    bottleneck: str  # memory-bound | compute-bound | latency-bound | unknown
    reasons: tuple[str, ...] = field(default_factory=tuple)
    recommendations: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def diagnose(launch: NcuLaunch) -> Diagnosis:
    v = launch.value
    limits = {name: v(f"launch__occupancy_limit_{name}") for name in LIMITERS}
    known = {k: x for k, x in limits.items() if x is not None}
    limiter = min(known, key=lambda k: known[k]) if known else None
    stalls = sorted(
        (
            (m.group(1), launch.value(name) or 0.0)
            for name in launch.metrics
            if (m := STALL.match(name)) and m.group(1) != "selected"
        ),
        key=lambda s: -s[1],
    )
    dram = [x for x in (v("dram__bytes_read.sum"), v("dram__bytes_write.sum")) if x is not None]
    tensor = [
        x
        for x in (
            v("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"),
            v("sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active"),
        )
        if x is not None
    ]
    d = Diagnosis(
        name=launch.name,
        launch_id=launch.launch_id,
        nvtx=launch.nvtx_ranges,
        duration_ns=v("gpu__time_duration.sum"),
        sm_sol_pct=v("sm__throughput.avg.pct_of_peak_sustained_elapsed"),
        memory_sol_pct=v("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"),
        dram_pct=v("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"),
        dram_bytes=sum(dram) if dram else None,
        dram_bandwidth_bps=v("dram__bytes.sum.per_second"),
        achieved_occupancy_pct=v("sm__warps_active.avg.pct_of_peak_sustained_active"),
        theoretical_occupancy_pct=v("sm__maximum_warps_per_active_cycle_pct"),
        occupancy_limiter=limiter,
        registers_per_thread=v("launch__registers_per_thread"),
        shared_mem_per_block_bytes=v("launch__shared_mem_per_block"),
        block_size=v("launch__block_size"),
        grid_size=v("launch__grid_size"),
        waves_per_sm=v("launch__waves_per_multiprocessor"),
        l1_hit_pct=v("l1tex__t_sector_hit_rate.pct"),
        l2_hit_pct=v("lts__t_sector_hit_rate.pct"),
        tensor_pipe_pct=max(tensor) if tensor else None,
        spill_requests=v("derived__local_spilling_requests"),
        top_stalls=tuple(stalls[:3]),
        pipes=_pipes(launch),
        bottleneck="unknown",
    )
    _check(d)
    bottleneck, reasons = classify(d)
    return replace(d, bottleneck=bottleneck, reasons=tuple(reasons), recommendations=tuple(recommend(d, bottleneck)))


MAX_GRID = (2**31 - 1) * 65535 * 65535  # CUDA's largest grid: x up to 2**31-1 blocks, y and z up to 65535


def _check(d: Diagnosis) -> None:
    """What the diagnosis reasons with must be physical: percentages in [0, 100 + PCT_OVERSHOOT], every
    other quantity >= 0; OutOfRange (the reader names the file) otherwise, never a verdict from it."""
    values = {f.name: getattr(d, f.name) for f in fields(d)}
    bad = [
        (k, v)
        for k, v in values.items()
        if isinstance(v, float) and (not 0 <= v <= 100 + PCT_OVERSHOOT if k.endswith("_pct") else v < 0)
    ]
    bad += [(f"pipe {name}", pct) for name, pct in d.pipes if not 0 <= pct <= 100 + PCT_OVERSHOOT]
    # a launch lasts: 0 ns is no measurement; CUDA blocks hold 1..1024 threads, grids at least one block
    bad += [("duration_ns", d.duration_ns)] if d.duration_ns == 0 else []
    bad += [("block_size", d.block_size)] if d.block_size is not None and not 1 <= d.block_size <= 1024 else []
    bad += [("grid_size", d.grid_size)] if d.grid_size is not None and not 1 <= d.grid_size <= MAX_GRID else []
    bad += [(f"stall {name}", cycles) for name, cycles in d.top_stalls if cycles < 0]
    if bad:
        field, value = bad[0]
        raise OutOfRange(
            f"launch {d.launch_id} ({d.name[:60]}): {field} = {value:g} is outside what ncu can "
            "measure (the file is damaged)"
        )


PIPES = ("alu", "fma", "fmaheavy", "xu", "lsu", "fp64", "tensor_op_hmma", "tensor_op_gmma", "uniform", "adu", "cbu")
PIPE_ADVICE = {
    "alu": "integer, logic and conversion instructions",
    "fma": "fp32 multiply-adds",
    "fmaheavy": "fp32 multiply-adds and conversions",
    "xu": "special functions (exp, erf, rsqrt, conversions on the XU)",
    "lsu": "load/store instructions",
    "fp64": "fp64 arithmetic",
    "tensor_op_hmma": "tensor-core mma",
    "tensor_op_gmma": "tensor-core wgmma",
}


def _pipes(launch: NcuLaunch) -> tuple[tuple[str, float], ...]:
    found = []
    for pipe in PIPES:
        for window in ("active", "elapsed"):
            value = launch.value(f"sm__inst_executed_pipe_{pipe}.avg.pct_of_peak_sustained_{window}")
            if value is not None:
                found.append((pipe, value))
                break
    return tuple(sorted(found, key=lambda p: -p[1]))


def classify(d: Diagnosis) -> tuple[str, list[str]]:
    if d.sm_sol_pct is None or d.memory_sol_pct is None:
        return "unknown", ["speed-of-light metrics missing (profile with the SpeedOfLight section)"]
    top = max(d.sm_sol_pct, d.memory_sol_pct)
    if top >= SOL_BUSY_PCT:
        if d.memory_sol_pct >= d.sm_sol_pct:
            return "memory-bound", [f"memory throughput {d.memory_sol_pct:.0f}% of peak vs SM {d.sm_sol_pct:.0f}%"]
        return "compute-bound", [f"SM throughput {d.sm_sol_pct:.0f}% of peak vs memory {d.memory_sol_pct:.0f}%"]
    return "latency-bound", [
        f"neither unit is busy: SM {d.sm_sol_pct:.0f}%, memory {d.memory_sol_pct:.0f}% of peak "
        f"(below {SOL_BUSY_PCT:.0f}%)"
    ]


def recommend(d: Diagnosis, bottleneck: str) -> list[str]:
    recs = _memory_advice(d) if bottleneck == "memory-bound" else []
    if bottleneck == "compute-bound":
        recs.append(_compute_advice(d))
    if d.waves_per_sm is not None and d.waves_per_sm < 1:
        recs.append(
            f"grid of {_int(d.grid_size)} blocks fills {d.waves_per_sm:.2f} waves: too little parallelism for "
            "the SMs; use smaller blocks or split the work (e.g. split-K)"
        )
    recs += _occupancy_advice(d, bottleneck)
    if d.spill_requests:
        recs.append(
            f"{_int(d.spill_requests)} local-memory spill requests: register pressure; smaller tiles or "
            "fewer live values"
        )
    if bottleneck == "latency-bound" and d.top_stalls:
        reason, cycles = d.top_stalls[0]
        recs.append(f"top stall {reason} ({cycles:.1f} cycles/issue): {STALL_ADVICE.get(reason, 'see the stall docs')}")
    return recs


def _memory_advice(d: Diagnosis) -> list[str]:
    if d.dram_pct is None:
        return []
    if d.dram_pct >= 80:
        moved = f" ({d.dram_bytes / 1e6:.1f} MB moved)" if d.dram_bytes else ""
        return [
            f"DRAM at {d.dram_pct:.0f}% of peak{moved}: at the bandwidth roof; only moving fewer bytes "
            "helps (fuse with neighbouring ops, narrower dtypes)"
        ]
    if d.dram_pct >= 0.85 * (d.memory_sol_pct or 0):
        return [
            f"DRAM is the busiest memory unit at {d.dram_pct:.0f}% of peak, short of the roof: keep more "
            f"bytes in flight (wider loads, more blocks per SM); a {_us(d.duration_ns)} kernel also pays "
            "launch and tail time"
        ]
    return [
        f"memory pipes at {d.memory_sol_pct:.0f}% but DRAM only {d.dram_pct:.0f}%: the limit is "
        f"L1/L2 traffic (L1 hit {_pct(d.l1_hit_pct)}, L2 hit {_pct(d.l2_hit_pct)}); improve reuse "
        "or coalescing"
    ]


def _compute_advice(d: Diagnosis) -> str:
    if d.tensor_pipe_pct is not None and d.tensor_pipe_pct >= 50:
        return (
            f"tensor pipes {d.tensor_pipe_pct:.0f}% busy, SM at {d.sm_sol_pct:.0f}%: near the compute roof; "
            "what is left is in tile shape and pipelining (stages, warp specialisation), not occupancy"
        )
    if d.pipes:
        busiest = ", ".join(f"{name.upper()} {pct:.0f}%" for name, pct in d.pipes[:3])
        top = d.pipes[0][0]
        return (
            f"SM at {d.sm_sol_pct:.0f}% of peak; busiest instruction pipes: {busiest}: the kernel is bound "
            f"by {PIPE_ADVICE.get(top, top)}; cut instructions per element (cheaper math, fewer conversions) "
            "or move the work to a less loaded pipe"
        )
    return f"SM at {d.sm_sol_pct:.0f}% of peak: reduce instructions per result"


def _occupancy_advice(d: Diagnosis, bottleneck: str) -> list[str]:
    if d.achieved_occupancy_pct is None or d.theoretical_occupancy_pct is None:
        return []
    if d.theoretical_occupancy_pct < 50 and d.occupancy_limiter and bottleneck == "latency-bound":
        return [
            f"theoretical occupancy {d.theoretical_occupancy_pct:.0f}% limited by {d.occupancy_limiter}"
            f" ({_int(d.registers_per_thread)} registers/thread, {_int(d.shared_mem_per_block_bytes)} B "
            "shared/block); reduce it if latency is the bottleneck"
        ]
    if d.achieved_occupancy_pct < 0.7 * d.theoretical_occupancy_pct:
        return [
            f"achieved occupancy {d.achieved_occupancy_pct:.0f}% vs theoretical "
            f"{d.theoretical_occupancy_pct:.0f}%: imbalance or tail effect between blocks"
        ]
    return []


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0f}%"


def _us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e3:.1f} us"


def _int(x: float | None) -> str:
    return "-" if x is None else f"{int(x):,}"
