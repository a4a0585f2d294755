"""Bottleneck classes and recommendations on the recorded H100 report: derived from each kernel's numbers."""

import pytest

pytest.importorskip("ncu_report")

from perfgate.analyze.ncu_diagnosis import diagnose  # noqa: E402
from perfgate.parse.ncu_report_file import read_ncu_report  # noqa: E402
from perfgate.parse.records import NcuLaunch, NcuMetric  # noqa: E402


@pytest.fixture
def diagnoses(ncu_rep):
    from perfgate.report.format import kernel_label

    return {kernel_label(d.name, 80): d for d in map(diagnose, read_ncu_report(ncu_rep))}


def test_streaming_kernel_is_memory_bound_at_the_roof(diagnoses):
    add = diagnoses["_add_kernel"]
    assert add.bottleneck == "memory-bound"
    assert add.dram_pct == pytest.approx(90.8, abs=0.5)
    assert any(r.startswith(f"DRAM at {add.dram_pct:.0f}% of peak") for r in add.recommendations)


def test_matmul_is_compute_bound_with_tensor_pipes_busy(diagnoses):
    mm = diagnoses["_matmul_kernel"]
    assert mm.bottleneck == "compute-bound"
    assert mm.registers_per_thread == 202 and mm.occupancy_limiter == "registers"
    assert any(f"tensor pipes {mm.tensor_pipe_pct:.0f}% busy" in r for r in mm.recommendations)


def test_torch_softmax_is_latency_bound_and_names_its_top_stall(diagnoses):
    sm = diagnoses["cunn_SoftMaxForwardReg"]
    assert sm.bottleneck == "latency-bound"
    reason, cycles = sm.top_stalls[0]
    assert any(r.startswith(f"top stall {reason} ({cycles:.1f} cycles/issue)") for r in sm.recommendations)


def test_register_limited_occupancy_and_spills_are_called_out():
    metrics = {
        "sm__throughput.avg.pct_of_peak_sustained_elapsed": 20.0,
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": 25.0,
        "sm__warps_active.avg.pct_of_peak_sustained_active": 11.0,
        "sm__maximum_warps_per_active_cycle_pct": 12.5,
        "launch__occupancy_limit_registers": 1.0,
        "launch__occupancy_limit_warps": 8.0,
        "launch__registers_per_thread": 255.0,
        "derived__local_spilling_requests": 4096.0,
        "launch__waves_per_multiprocessor": 0.5,
        "launch__grid_size": 66.0,
    }
    d = diagnose(NcuLaunch(0, "k", {k: NcuMetric(v, "") for k, v in metrics.items()}))
    assert d.bottleneck == "latency-bound"
    text = " ".join(d.recommendations)
    assert "theoretical occupancy 12% limited by registers (255 registers/thread" in text
    assert "4,096 local-memory spill requests" in text
    assert "grid of 66 blocks fills 0.50 waves" in text


def test_missing_speed_of_light_is_unknown_not_guessed():
    d = diagnose(NcuLaunch(0, "k", {"launch__registers_per_thread": NcuMetric(32.0, "")}))
    assert d.bottleneck == "unknown" and "SpeedOfLight" in d.reasons[0]
