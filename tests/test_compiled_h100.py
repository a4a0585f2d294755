"""The H100's recordings (lab/gpu/kernels_session.py, NVIDIA H100 80GB HBM3, driver 580.159.04, torch 2.11.0,
Triton 3.6.0): the suite's compiled facts, the driver's own figures for the same kernels, torch 2.11's trace of
the CUDA extension's launch, and the A/B head's records. tests/data/compiled/h100_*."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfgate.compiled import codec
from perfgate.compiled.cache import CodeReader
from perfgate.compiled.cubin import ToolMissing, find_cuobjdump
from perfgate.compiled.modules import ObservedLaunch, launches_in_trace
from perfgate.compiled.occupancy import LIMITS, theoretical
from perfgate.compiled.record import KernelRecorder, Watched
from perfgate.compiled.records import KernelSource
from perfgate.compiled.same_code import same_code
from tests.test_compiled_cache import sm_90a_module

DATA = Path(__file__).parent / "data" / "compiled"
H100 = LIMITS["sm_90"]
RMS = (
    "void perfgate_kernels::rms_norm_kernel<__nv_bfloat16, 8>"
    "(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, long long, float)"
)


def suite(name: str = "h100_suite_compiled.json") -> dict[str, codec.CompiledCase]:
    raw = json.loads((DATA / name).read_text())
    return {case: codec.from_dict(record, case) for case, record in raw.items()}


def crosscheck() -> list[dict]:
    return json.loads((DATA / "h100_crosscheck.json").read_text())


def test_every_kernel_of_the_suite_reads_back_with_its_facts():
    records = suite()
    assert len(records) == 10 and {r.arch for r in records.values()} == {"sm_90"}
    triton = [k for r in records.values() for k in r.kernels if k.source is KernelSource.TRITON]
    assert len(triton) == 8 and all(k.sass_sha and k.registers_per_thread and k.block for k in triton)
    matmul = records["kernels/tests/test_perf.py::test_matmul"].kernels[0]
    assert (matmul.registers_per_thread, matmul.dynamic_shared_bytes, matmul.num_warps) == (216, 196608, 8)


def test_each_recorded_occupancy_is_what_the_calculation_gives_for_its_facts():
    for case, record in suite().items():
        for k in record.kernels:
            if k.occupancy is None:
                continue
            assert k.registers_per_thread is not None and k.threads_per_block is not None
            occ = theoretical(
                H100,
                k.registers_per_thread,
                k.threads_per_block,
                k.static_shared_bytes or 0,
                k.dynamic_shared_bytes or 0,
            )
            assert (occ.blocks_per_sm, occ.pct) == (k.occupancy.blocks_per_sm, k.occupancy.pct), case


@pytest.mark.parametrize("row", crosscheck(), ids=lambda r: f"{r['case']}-{r['kernel']}")
def test_the_occupancy_matches_the_cuda_occupancy_api_for_every_kernel_the_h100_checked(row):
    ours, driver = codec.from_dict({"kernels": [row["perfgate"]]}).kernels[0], row["driver"]
    assert ours.registers_per_thread == driver["num_regs"]
    assert ours.static_shared_bytes == driver["shared_size_bytes"]
    assert ours.stack_bytes_per_thread == driver["local_size_bytes"]
    assert ours.threads_per_block is not None and ours.registers_per_thread is not None
    occ = theoretical(H100, ours.registers_per_thread, ours.threads_per_block, 0, ours.dynamic_shared_bytes or 0)
    # cuOccupancyMaxActiveBlocksPerMultiprocessor(function, block size, dynamic shared memory)
    assert occ.blocks_per_sm == driver["occupancy_blocks"]


def test_the_cross_checked_kernels_are_the_suites_to_the_sass():
    """The cross-check (its own process, its own calls) read the same code as the gate did."""
    recorded = {(k.name, k.sass_sha, k.registers_per_thread) for r in suite().values() for k in r.kernels}
    checked = {(r["kernel"], r["perfgate"]["sass_sha"], r["driver"]["num_regs"]) for r in crosscheck()}
    assert len(checked) == 7 and checked <= recorded


def test_the_sass_hash_is_stable_across_processes_and_checkouts_and_moves_with_the_code():
    """The A/B run's head (another worktree, other processes) against the warm gate's records: every kernel the
    head did not touch has the same SASS hash, the softmax it changed has another."""
    warm, head = suite(), suite("h100_ab_head_compiled.json")
    for case in warm:
        result = same_code(warm[case], head[case])
        if "softmax" in case:
            assert not result.same and "its SASS differs" in result.why, case
        elif "rms_norm" in case:  # recorded before the sm_90a fix: no kernels, never "same code"
            assert not result.same and "no kernel launch was seen" in result.why
        else:
            assert result.same, (case, result.why)


def test_torch_2_11s_trace_gives_the_cuda_extensions_launch():
    (launch,) = launches_in_trace(DATA / "h100_rms_norm_torch_trace.json")
    assert launch == ObservedLaunch(RMS, (16384, 1, 1), (512, 1, 1), 28, 128)


def test_the_extension_built_for_sm_90a_is_recorded_on_the_h100_with_its_launch_and_occupancy(tmp_path):
    """What the H100 lost: its extension carried sm_90a code only, and only sm_90 was looked for."""
    try:
        tool = find_cuobjdump()
    except ToolMissing:
        pytest.skip("no cuobjdump (the CUDA toolkit or Triton ships one)")
    reader = CodeReader(tool, None)
    recorder = KernelRecorder(
        arch="sm_90",
        reader=reader,
        _read=reader.cubin,
        observe_launches=lambda call: launches_in_trace(DATA / "h100_rms_norm_torch_trace.json"),
    )
    case = recorder.compiled(Watched((), (), (sm_90a_module(tmp_path),), "x", "s"), call=lambda: None)
    assert case.notes == ()
    (k,) = case.kernels
    assert (k.name, k.source, k.registers_per_thread, k.static_shared_bytes) == (RMS, KernelSource.CUDA_MODULE, 28, 128)
    assert (k.block, k.grid, k.dynamic_shared_bytes, k.sass_sha != "") == ((512, 1, 1), (16384, 1, 1), 0, True)
    assert k.occupancy is not None and (k.occupancy.blocks_per_sm, k.occupancy.pct) == (4, 100.0)
