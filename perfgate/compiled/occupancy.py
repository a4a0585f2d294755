"""Theoretical occupancy: how many blocks of a kernel fit on one SM at once, and what stops more.

The calculation is CUDA's own (cuda_occupancy.h, cudaOccMaxActiveBlocksPerMultiprocessor, CUDA 13.0), ported
for the default launch state: no partitioned global caching, the default cache config and shared-memory
carveout (the largest shared memory an SM offers), the dynamic shared memory opted in (the kernel did launch).
Per resource, the blocks it allows:

- registers: a warp's registers are `registers per thread x 32` rounded up to the allocation unit (256); each
  of the SM's 4 sub-partitions holds `65536 / 4 / that` warps; a block needs `ceil(threads / 32)` warps;
- shared memory: `static + dynamic + the driver's reserved 1 KB (sm_80 on)`, rounded up to 128 bytes (256
  before sm_80), out of the SM's shared memory;
- warps: the SM's warp slots (`max threads per SM / 32`) over the block's warps;
- blocks: the SM's block slots.

The least of them, and of the SM's block slots, is the blocks per SM; `blocks x warps per block / max warps` the
occupancy. The limiter named is what binds (`_limiter`): the block slots when every resource allows more, the
warp slots at full occupancy. ncu reports the
same four limits (launch__occupancy_limit_*, capped at the block slots, as here); tests/test_compiled_occupancy.py
checks them against a recorded H100 report, and lab/gpu/kernels_session.py against the CUDA occupancy API.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from perfgate.compiled.records import Limiter, Occupancy

WARP = 32
MAX_THREADS_PER_BLOCK = 1024
REGISTER_UNIT = 256  # registers allocated to a warp at a time
SUB_PARTITIONS = 4  # register file quarters (every architecture since Volta)
MAX_REGISTERS_PER_THREAD = 256  # the occupancy calculator's limit (ptxas allocates at most 255)


@dataclass(frozen=True)
class SmLimits:
    """One GPU architecture's per-SM resources (CUDA programming guide, "Technical Specifications per
    Compute Capability"; cuda_occupancy.h for the granularities)."""

    arch: str
    max_threads_per_sm: int
    max_blocks_per_sm: int
    shared_per_sm_bytes: int  # the largest carveout
    shared_per_block_optin_bytes: int
    registers_per_sm: int = 65536
    registers_per_block: int = 65536
    reserved_shared_per_block_bytes: int = 1024  # taken by the driver from every block (sm_80 on)
    shared_unit_bytes: int = 128

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // WARP


KIB = 1024
_LIMITS = (
    SmLimits("sm_70", 2048, 32, 96 * KIB, 96 * KIB, reserved_shared_per_block_bytes=0, shared_unit_bytes=256),
    SmLimits("sm_75", 1024, 16, 64 * KIB, 64 * KIB, reserved_shared_per_block_bytes=0, shared_unit_bytes=256),
    SmLimits("sm_80", 2048, 32, 164 * KIB, 163 * KIB),
    SmLimits("sm_86", 1536, 16, 100 * KIB, 99 * KIB),
    SmLimits("sm_87", 2048, 16, 164 * KIB, 163 * KIB),
    SmLimits("sm_89", 1536, 24, 100 * KIB, 99 * KIB),
    SmLimits("sm_90", 2048, 32, 228 * KIB, 227 * KIB),
    SmLimits("sm_100", 2048, 32, 228 * KIB, 227 * KIB),
    SmLimits("sm_120", 1536, 24, 100 * KIB, 99 * KIB),
)
LIMITS = MappingProxyType({limits.arch: limits for limits in _LIMITS})


def arch_of(compute_capability: str) -> str:
    """ "9.0" -> "sm_90"; "" for what is not a compute capability."""
    major, _, minor = compute_capability.partition(".")
    return f"sm_{major}{minor or '0'}" if major.isdigit() and (minor or "0").isdigit() else ""


def limits_for(arch: str) -> SmLimits | None:
    """The architecture's limits (sm_90a reads as sm_90); None for one perfgate does not know."""
    return LIMITS.get(arch.rstrip("af"))


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def by_registers(limits: SmLimits, registers_per_thread: int, warps_per_block: int) -> int:
    per_warp = _round_up(registers_per_thread * WARP, REGISTER_UNIT)
    per_block = per_warp * warps_per_block
    assumed = per_warp * _round_up(warps_per_block, SUB_PARTITIONS)  # the hardware's own check
    if registers_per_thread > MAX_REGISTERS_PER_THREAD or max(per_block, assumed) > limits.registers_per_block:
        return 0
    if per_warp == 0:
        return limits.max_blocks_per_sm
    warps_per_sub_partition = limits.registers_per_sm // SUB_PARTITIONS // per_warp
    return warps_per_sub_partition * SUB_PARTITIONS // warps_per_block


def shared_per_block(limits: SmLimits, static_bytes: int, dynamic_bytes: int) -> int:
    """What one block takes out of the SM's shared memory: the kernel's, the driver's reserve, rounded up."""
    used = static_bytes + dynamic_bytes + limits.reserved_shared_per_block_bytes
    return _round_up(used, limits.shared_unit_bytes)


def by_shared_memory(limits: SmLimits, static_bytes: int, dynamic_bytes: int) -> int:
    allocated = shared_per_block(limits, static_bytes, dynamic_bytes)
    if allocated > limits.shared_per_block_optin_bytes + limits.reserved_shared_per_block_bytes:
        return 0
    if allocated == 0:  # no shared memory and no reserve (before sm_80): not a limit
        return limits.max_blocks_per_sm
    return limits.shared_per_sm_bytes // allocated


def theoretical(
    limits: SmLimits, registers_per_thread: int, threads_per_block: int, static_shared: int, dynamic_shared: int
) -> Occupancy:
    """The occupancy of one launch; ValueError for a block no GPU runs (0 or more than 1024 threads)."""
    if not 0 < threads_per_block <= MAX_THREADS_PER_BLOCK:
        raise ValueError(f"a block of {threads_per_block} threads cannot run (1 to {MAX_THREADS_PER_BLOCK})")
    if min(registers_per_thread, static_shared, dynamic_shared) < 0:
        raise ValueError("registers and shared memory must be >= 0")
    warps = -(-threads_per_block // WARP)
    cap = limits.max_blocks_per_sm
    allowed = {
        Limiter.REGISTERS: by_registers(limits, registers_per_thread, warps),
        Limiter.SHARED_MEMORY: by_shared_memory(limits, static_shared, dynamic_shared),
        Limiter.WARPS: limits.max_warps_per_sm // warps,
    }
    blocks = min(cap, *allowed.values())
    found = {k: min(cap, v) for k, v in allowed.items()} | {Limiter.BLOCKS: cap}  # capped, as ncu shows them
    return Occupancy(
        blocks_per_sm=blocks,
        warps_per_block=warps,
        max_warps_per_sm=limits.max_warps_per_sm,
        limiter=_limiter(allowed, blocks, warps, limits),
        by_registers=found[Limiter.REGISTERS],
        by_shared_memory=found[Limiter.SHARED_MEMORY],
        by_warps=found[Limiter.WARPS],
        by_blocks=found[Limiter.BLOCKS],
    )


def _limiter(allowed: dict[Limiter, int], blocks: int, warps: int, limits: SmLimits) -> Limiter:
    """What bounds the blocks: at full occupancy the warp slots (nothing else could give more); otherwise the first
    resource, in the order registers, shared memory, warps (the order code moves them), that allows no more
    than `blocks` before the cap; the block slots when every resource would allow more."""
    if blocks * warps == limits.max_warps_per_sm:
        return Limiter.WARPS
    return next((k for k, v in allowed.items() if v == blocks), Limiter.BLOCKS)


def pct_text(value: float) -> str:
    """50 -> "50 %", 37.5 -> "37.5 %", 12.5 -> "12.5 %" (occupancy moves in steps of 1/64)."""
    return f"{value:.4g} %"


def why(occ: Occupancy, threads_per_block: int, shared_bytes: int | None = None) -> str:
    """What limits the occupancy, in words: "the register file limits it to 3 blocks of 256 threads per SM"."""
    blocks = f"{occ.blocks_per_sm} block{'s' if occ.blocks_per_sm != 1 else ''} of {threads_per_block} threads"
    if occ.limiter is Limiter.REGISTERS:
        return f"the register file limits it to {blocks} per SM"
    if occ.limiter is Limiter.SHARED_MEMORY:
        each = f" ({shared_bytes:,} bytes per block)" if shared_bytes is not None else ""
        return f"shared memory{each} limits it to {blocks} per SM"
    if occ.limiter is Limiter.WARPS:
        return f"the SM's {occ.max_warps_per_sm} warp slots limit it to {blocks}"
    return f"the SM's {occ.by_blocks} block slots limit it to {blocks}"
