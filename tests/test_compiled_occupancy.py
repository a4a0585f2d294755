"""Theoretical occupancy as CUDA's calculator computes it, checked against what Nsight Compute reported on an
H100 and against the calculation's own invariants."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfgate.compiled.occupancy import LIMITS, arch_of, limits_for, pct_text, theoretical, why
from perfgate.compiled.records import Limiter

H100 = LIMITS["sm_90"]


def test_a_small_triton_kernel_matches_the_limits_ncu_reported_on_an_h100():
    # /work/shared/fixtures/h100/full_raw.csv, add_kernel: 128 threads, 26 registers, no shared memory ->
    # launch__occupancy_limit_registers 16, _shared_mem 32, _warps 16, _blocks 32; theoretical occupancy 100 %
    occ = theoretical(H100, registers_per_thread=26, threads_per_block=128, static_shared=0, dynamic_shared=0)
    assert (occ.by_registers, occ.by_shared_memory, occ.by_warps, occ.by_blocks) == (16, 32, 16, 32)
    assert occ.blocks_per_sm == 16
    assert occ.pct == 100.0


def test_the_triton_matmul_at_202_registers_is_one_block_of_8_warps():
    # docs/kernels.md: ncu on the H100 read 202 registers/thread and 12.5 % theoretical occupancy (8 warps)
    occ = theoretical(H100, 202, 256, 0, 49152)
    assert (occ.blocks_per_sm, occ.pct, occ.limiter) == (1, 12.5, Limiter.REGISTERS)


def test_eight_more_registers_cost_a_block_of_256_threads():
    before = theoretical(H100, 64, 256, 0, 0)
    after = theoretical(H100, 72, 256, 0, 0)
    assert (before.pct, after.pct) == (50.0, 37.5)
    assert why(after, 256) == "the register file limits it to 3 blocks of 256 threads per SM"
    assert pct_text(after.pct) == "37.5 %"


def test_shared_memory_limits_a_kernel_that_asks_for_much_of_it():
    occ = theoretical(H100, 32, 128, 0, 100 * 1024)
    # 100 KiB + the driver's 1 KiB per block: two fit in 228 KiB
    assert (occ.blocks_per_sm, occ.limiter) == (2, Limiter.SHARED_MEMORY)
    assert why(occ, 128, 103424).startswith("shared memory (103,424 bytes per block) limits it to 2 blocks")


def test_warp_slots_limit_a_lean_kernel_with_large_blocks():
    occ = theoretical(H100, 16, 1024, 0, 0)
    assert (occ.blocks_per_sm, occ.limiter, occ.pct) == (2, Limiter.WARPS, 100.0)


def test_at_full_occupancy_the_warp_slots_are_the_limit_even_where_registers_allow_no_more():
    # the RMSNorm kernel on the H100: 28 registers, 512 threads: registers and warp slots both allow 4 blocks
    occ = theoretical(H100, 28, 512, 128, 0)
    assert (occ.blocks_per_sm, occ.pct, occ.by_registers, occ.limiter) == (4, 100.0, 4, Limiter.WARPS)
    assert why(occ, 512) == "the SM's 64 warp slots limit it to 4 blocks of 512 threads"


def test_tiny_blocks_are_limited_by_the_block_slots_not_by_a_resource_capped_at_them():
    # the same kernel de-tuned to 32 threads a block: every resource allows more than the 32 block slots
    occ = theoretical(H100, 28, 32, 128, 0)
    assert (occ.blocks_per_sm, occ.pct, occ.limiter) == (32, 50.0, Limiter.BLOCKS)
    assert why(occ, 32) == "the SM's 32 block slots limit it to 32 blocks of 32 threads"


def test_a_block_that_cannot_be_resident_has_no_occupancy():
    assert theoretical(H100, 255, 1024, 0, 0).blocks_per_sm == 0  # 255 x 1024 registers > the register file
    assert theoretical(H100, 32, 128, 0, 300 * 1024).blocks_per_sm == 0  # more shared memory than a block may have


@pytest.mark.parametrize("threads", [0, -32, 1025])
def test_a_block_no_gpu_runs_is_refused(threads):
    with pytest.raises(ValueError, match="cannot run"):
        theoretical(H100, 32, threads, 0, 0)


def test_architectures_are_named_from_compute_capabilities():
    assert arch_of("9.0") == "sm_90" and arch_of("8.6") == "sm_86" and arch_of("x") == ""
    assert limits_for("sm_90a") is H100
    assert limits_for("sm_110") is None
    # the A100 has fewer shared memory and the same register file: the same kernel fits the same warps
    assert theoretical(LIMITS["sm_80"], 64, 256, 0, 0).pct == 50.0


@given(
    arch=st.sampled_from(sorted(LIMITS)),
    registers=st.integers(0, 255),
    threads=st.integers(1, 1024),
    static=st.integers(0, 48 * 1024),
    dynamic=st.integers(0, 200 * 1024),
)
def test_occupancy_is_the_least_limit_and_never_rises_with_more_registers(arch, registers, threads, static, dynamic):
    limits = LIMITS[arch]
    occ = theoretical(limits, registers, threads, static, dynamic)
    assert occ.blocks_per_sm == min(occ.by_registers, occ.by_shared_memory, occ.by_warps, occ.by_blocks)
    assert occ.active_warps <= limits.max_warps_per_sm
    assert 0.0 <= occ.pct <= 100.0
    more = theoretical(limits, min(255, registers + 8), threads, static, dynamic)
    assert more.blocks_per_sm <= occ.blocks_per_sm
    bigger = theoretical(limits, registers, threads, static, dynamic + 4096)
    assert bigger.blocks_per_sm <= occ.blocks_per_sm
