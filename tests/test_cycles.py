"""Clock-normalised time: each sample's time x the SM clock it ran at (measure/sm_clock.py), gated for compute-bound
cases (gate/bottleneck.py). Without a GPU: a stand-in SM whose frequency the test sets (tests/manual_clock.py's
FakeSm) on the manual clock, so a slowdown that only lowers the clock is told apart from a real one exactly."""

import os
import subprocess
import sys
from dataclasses import replace

import pytest

from perfgate.baseline import load_baseline, parse_baseline
from perfgate.baseline.write import calibrated_baseline, render_baseline
from perfgate.codec import case_from_dict, case_to_dict
from perfgate.config.settings import MeasureOptions, Settings
from perfgate.gate.bottleneck import Bound, bound, choose_measure, ridge_flop_per_byte
from perfgate.gate.compare import compare_run
from perfgate.gate.confirm import confirmed
from perfgate.gate.window import WindowValues, with_noise
from perfgate.measure import clock, sm_clock
from perfgate.measure.case import CaseSpec, measure_case
from perfgate.metrics import CYCLES_METRIC, TIME_METRIC
from perfgate.model import CaseThresholds, CycleStats, GatedMeasure, GateResult, Metric, Run, RunInfo, Timer, Verdict
from perfgate.store import open_store
from perfgate.store.verdicts import verdicts_of
from perfgate.store.window import recent_passing_gate_medians
from tests.helpers import (
    ENV,
    MANUAL_CLOCK_CONFTEST,
    baseline_of,
    calibrated,
    case,
    gate_json,
    noisy,
    perf_project,
    results_json,
)
from tests.manual_clock import FakeSm, ManualClock

OPTIONS = MeasureOptions(warmup_ms=1, min_samples=20, max_samples=40, budget_ms=60, memory=False)
SETTINGS = Settings()


@pytest.fixture
def manual():
    fake = ManualClock()
    previous = clock.install(fake)
    yield fake
    clock.install(previous)


def measured(manual, mhz, work, schedule=()):
    """One case measured with a stand-in SM clock probe at `mhz` (the host path: the GPU's is tested on the GPU)."""
    sm = FakeSm(manual, mhz, schedule)
    previous = sm_clock.install(sm.probe)
    try:
        return measure_case(CaseSpec("t::gemm", lambda: work(sm), options=OPTIONS, timer=Timer.HOST))
    finally:
        sm_clock.install(previous)


def test_a_slowdown_that_only_lowers_the_clock_is_invisible_in_cycles(manual):
    fast = measured(manual, 1980.0, lambda sm: sm.compute(2.0))
    capped = measured(manual, 1500.0, lambda sm: sm.compute(2.0))
    # (the manual clock keeps whole nanoseconds: a 1 ms call is exact to 1e-6)
    assert capped.timing.median_ms / fast.timing.median_ms == pytest.approx(1980 / 1500, rel=1e-5)
    assert capped.cycles.median_mcycles == pytest.approx(fast.cycles.median_mcycles, rel=1e-5)
    assert fast.cycles.median_mcycles == pytest.approx(2.0, rel=1e-5)
    assert capped.cycles.clock_median_mhz == pytest.approx(1500.0)


def test_a_real_slowdown_shows_in_time_and_in_cycles(manual):
    before = measured(manual, 1980.0, lambda sm: sm.compute(2.0))
    after = measured(manual, 1980.0, lambda sm: sm.compute(2.1))
    assert after.timing.median_ms / before.timing.median_ms == pytest.approx(1.05, rel=1e-5)
    assert after.cycles.median_mcycles / before.cycles.median_mcycles == pytest.approx(1.05, rel=1e-5)


def test_a_power_cap_landing_mid_measurement_moves_the_time_not_the_cycles(manual):
    steady = measured(manual, 1980.0, lambda sm: sm.compute(2.0))
    capped = measured(manual, 1980.0, lambda sm: sm.compute(2.0), schedule=((0.01, 1200.0),))
    assert capped.timing.median_ms > 1.5 * steady.timing.median_ms  # most samples ran capped
    assert capped.cycles.clock_min_mhz == pytest.approx(1200.0) and capped.cycles.clock_max_mhz == pytest.approx(1980.0)
    # the sample the cap landed in ran at a mean of both clocks: its cycles still count right
    assert capped.cycles.median_mcycles == pytest.approx(steady.cycles.median_mcycles, rel=1e-5)


def test_a_memory_bound_wait_keeps_its_time_and_its_cycles_follow_the_clock(manual):
    fast = measured(manual, 1980.0, lambda sm: sm.wait(1.0))
    capped = measured(manual, 1500.0, lambda sm: sm.wait(1.0))
    assert capped.timing.median_ms == pytest.approx(fast.timing.median_ms, rel=1e-5)
    assert capped.cycles.median_mcycles / fast.cycles.median_mcycles == pytest.approx(1500 / 1980, rel=1e-5)


def test_samples_without_a_clock_reading_are_left_out_and_too_few_give_no_cycles():
    stats = sm_clock.cycle_stats([1.0, 2.0, 1.0, 9.0], [1000.0, None, 1000.0, 1000.0])
    assert stats.probed_samples == 3 and stats.median_mcycles == pytest.approx(1.0)
    assert sm_clock.cycle_stats([1.0, 1.0, 1.0], [1000.0, None, None]) is None
    assert sm_clock.clock_mhz(1980, 1000) == pytest.approx(1980.0)
    assert sm_clock.clock_mhz(5, 0) is None and sm_clock.clock_mhz(10**9, 1) is None  # no span, no clock


def test_the_host_clock_reads_no_sm_clock_without_a_stand_in():
    assert sm_clock.probe_for(Timer.HOST) is None


# --- which measure is gated ---------------------------------------------------------------------------


def with_cycles(res, mcycles, mhz=1980.0):
    return replace(res, cycles=CycleStats(mcycles, mhz, mhz, mhz, res.timing.n_samples))


def gate_case(tmp_path, time_factor, cycles_factor, **work):
    """A calibrated baseline of one case at 1.0 ms / 2.0 Mcycles (six processes ~0.2% apart in both), and a run
    whose time and cycles moved by the given factors; the comparisons of the case's time and cycles."""
    base_res = with_cycles(case("t.py::gemm", noisy(1.0), **work), 2.0)
    base = calibrated(baseline_of(Run(RunInfo("", ""), ENV, (base_res,)), tmp_path), {"t.py::gemm": []})
    spread = (0.997, 1.0, 1.003, 0.999, 1.001, 1.0)
    cases = {"t.py::gemm": replace(base.cases["t.py::gemm"], process_medians_ms=tuple(1.0 * f for f in spread))}
    cases["t.py::gemm"] = replace(cases["t.py::gemm"], process_mcycles=tuple(2.0 * f for f in spread))
    base = replace(base, cases=cases)
    res = with_cycles(case("t.py::gemm", noisy(1.0 * time_factor, seed=1), **work), 2.0 * cycles_factor)
    gate = compare_run([res], base, ENV, replace(SETTINGS, confirm_runs=0))
    return {c.metric: c for c in gate.comparisons if c.metric in (TIME_METRIC, CYCLES_METRIC)}, gate


def test_a_compute_bound_case_slowed_only_by_the_clock_passes_on_its_cycles(tmp_path):
    rows, gate = gate_case(tmp_path, 1.25, 1.001, flops=2 * 8192**3)
    assert rows[CYCLES_METRIC].gated and rows[CYCLES_METRIC].verdict is Verdict.UNCHANGED
    assert rows[CYCLES_METRIC].unit == "Mcycles" and "compute-bound: flops declared" in rows[CYCLES_METRIC].note
    assert not rows[TIME_METRIC].gated and "cycles are: compute-bound" in rows[TIME_METRIC].note
    assert rows[TIME_METRIC].verdict is Verdict.REGRESSED and not gate.failed  # shown, not failing


def test_a_compute_bound_case_that_runs_more_cycles_fails_on_them(tmp_path):
    rows, gate = gate_case(tmp_path, 1.25, 1.25, flops=2 * 8192**3)
    assert rows[CYCLES_METRIC].verdict is Verdict.REGRESSED and gate.failed
    assert gate.failure_reasons == ("t.py::gemm: median_mcycles regressed",)


def test_a_memory_bound_case_is_gated_on_its_time(tmp_path):
    rows, gate = gate_case(tmp_path, 1.25, 1.001, bytes_moved=1 << 30)
    assert rows[TIME_METRIC].gated and rows[TIME_METRIC].verdict is Verdict.REGRESSED and gate.failed
    assert not rows[CYCLES_METRIC].gated and "memory-bound: bytes_moved declared" in rows[CYCLES_METRIC].note
    assert "memory-bound" in rows[TIME_METRIC].note  # the gated row says why it is the one


def test_gated_measure_time_overrides_the_roofline(tmp_path):
    work = {"flops": 2 * 8192**3, "thresholds": CaseThresholds(gated_measure=GatedMeasure.TIME)}
    rows, gate = gate_case(tmp_path, 1.25, 1.001, **work)
    assert rows[TIME_METRIC].gated and gate.failed and "gated_measure = time" in rows[CYCLES_METRIC].note


def test_a_baseline_without_cycles_gates_time_and_says_to_recalibrate(tmp_path):
    res = with_cycles(case("t.py::gemm", noisy(1.0), flops=10**12), 2.0)
    base = calibrated(baseline_of(Run(RunInfo("", ""), ENV, (res,)), tmp_path), {"t.py::gemm": [1.0, 1.001, 0.999]})
    gate = compare_run([res], base, ENV, SETTINGS)
    time_row = next(c for c in gate.comparisons if c.metric == TIME_METRIC)
    assert time_row.gated and "the baseline holds no cycles: recalibrate" in time_row.note
    assert not any(c.metric == CYCLES_METRIC for c in gate.comparisons)


def test_the_roofline_places_declared_work_on_either_side_of_the_ridge():
    ridge, source = ridge_flop_per_byte("NVIDIA H100 80GB HBM3", SETTINGS)
    assert ridge == pytest.approx(989e12 / 3350e9) and source == "spec sheet"
    gemm = case("g", [1.0, 1.0], flops=2 * 8192**3, bytes_moved=3 * 8192 * 8192 * 2)
    add = case("a", [1.0, 1.0], flops=1 << 20, bytes_moved=3 * 4 << 20)
    assert bound(gemm, "NVIDIA H100 80GB HBM3", SETTINGS)[0] is Bound.COMPUTE
    side, why = bound(add, "NVIDIA H100 80GB HBM3", SETTINGS)
    assert side is Bound.MEMORY and "< the ridge point 295" in why
    assert bound(gemm, "Some GPU", SETTINGS)[0] is Bound.UNKNOWN  # no spec sheet, no configured peaks
    configured = replace(SETTINGS, peak_tflops=100.0, peak_gbps=1000.0)
    assert ridge_flop_per_byte("Some GPU", configured)[0] == pytest.approx(100.0)
    assert (
        bound(gemm, "Some GPU", configured)[0] is Bound.COMPUTE
        and bound(add, "Some GPU", configured)[0] is Bound.MEMORY
    )


def test_without_declared_work_ncu_decides_where_it_profiled():
    sol = (
        Metric("sm__throughput.avg.pct_of_peak_sustained_elapsed", 81.0, "%", "ncu", "gemm_kernel"),
        Metric("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 35.0, "%", "ncu", "gemm_kernel"),
    )
    side, why = bound(case("g", [1.0, 1.0], metrics=sol), "NVIDIA H100 80GB HBM3", SETTINGS)
    assert side is Bound.COMPUTE and "ncu: SM throughput 81% of peak, memory 35% (gemm_kernel)" == why
    assert bound(case("g", [1.0, 1.0]), "NVIDIA H100 80GB HBM3", SETTINGS)[0] is Bound.UNKNOWN


def test_cycles_missing_from_the_run_gate_time_with_the_reason(tmp_path):
    base_res = with_cycles(case("g", [1.0, 1.0], flops=10**12), 2.0)
    base = replace(
        baseline_of(Run(RunInfo("", ""), ENV, (base_res,)), tmp_path).cases["g"], process_mcycles=(2.0, 2.0, 2.0)
    )
    choice = choose_measure(case("g", [1.0, 1.0], flops=10**12), base, ENV.device_name, SETTINGS)
    assert choice.measure is GatedMeasure.TIME and "no SM clock was read" in choice.reason


# --- carried everywhere a time is: calibration, confirmation, the noise window, the history, the JSON ---------


def test_calibration_keeps_every_process_cycles_and_the_file_reads_them_back(tmp_path):
    runs = [
        Run(RunInfo("", ""), ENV, (with_cycles(case("g", noisy(1.0, seed=i), flops=10**12), 2.0 + 0.001 * i),))
        for i in range(4)
    ]
    base = calibrated_baseline(None, runs, tmp_path / "b.json", "t", "r", SETTINGS)
    assert base.cases["g"].process_mcycles == (2.0, 2.001, 2.002, 2.003)
    text = render_baseline(base)
    assert '"process_mcycles": [2.0, 2.001, 2.002, 2.003]' in text and '"mcycles_noise_pct"' in text
    (tmp_path / "b.json").write_text(text)
    assert load_baseline(tmp_path / "b.json").cases["g"].process_mcycles == (2.0, 2.001, 2.002, 2.003)


def test_a_baseline_with_impossible_cycles_is_refused(tmp_path):
    import json

    from perfgate.errors import BaselineError

    doc = json.loads(render_baseline(baseline_of(Run(RunInfo("", ""), ENV, (case("g", [1.0, 1.0]),)), tmp_path)))
    doc["cases"]["g"]["process_mcycles"] = [2.0, -1.0, 2.0]
    with pytest.raises(BaselineError, match="process_mcycles"):
        parse_baseline(tmp_path / "b.json", doc)


def test_confirmation_processes_add_their_cycles_and_the_noise_window_its_own(tmp_path):
    first = with_cycles(case("g", noisy(1.0), flops=10**12), 2.0)
    again = confirmed(first, with_cycles(case("g", noisy(1.0, seed=3)), 2.01))
    assert again.process_mcycles == (2.0, 2.01)
    runs = [Run(RunInfo("", ""), ENV, (with_cycles(case("g", noisy(1.0, seed=i)), 2.0 + 0.01 * i),)) for i in range(3)]
    base = calibrated_baseline(None, runs, tmp_path / "b.json", "t", "r", SETTINGS)
    (noisy_first,) = with_noise([first], base, SETTINGS, {"g": WindowValues(mcycles=(2.05, 1.95, 2.0))})
    noise = noisy_first.thresholds.cycles_noise
    assert noise.processes == 6 and noise.window_runs == 3  # three calibration processes and three from the window


def test_the_history_stores_cycles_and_the_noise_window_reads_them(tmp_path):
    res = replace(with_cycles(case("g", noisy(1.0)), 2.5), confirmation_mcycles=(2.51,))
    run = Run(RunInfo("2026-11-21T00:00:00+00:00", "2026-11-21T00:01:00+00:00", git_branch="main"), ENV, (res,))
    plain = Run(run.info, ENV, (case("h", noisy(1.0)),))
    passed = verdicts_of(GateResult(comparisons=()))
    with open_store(tmp_path / "h.db") as store:
        run_id = store.save_run(run, passed)
        store.save_run(plain, passed)
        back = store.load_run(run_id).results[0]
        window = recent_passing_gate_medians(store, ENV.comparability_key(), "main", 5, ["g", "h"])
    assert back.cycles == res.cycles and back.confirmation_mcycles == (2.51,)
    assert window["g"][0].median_mcycles == 2.5 and window["h"][0].median_mcycles is None


def test_a_result_crossing_a_process_keeps_its_cycles_and_impossible_ones_are_refused():
    from perfgate.codec import CodecError

    res = replace(with_cycles(case("g", noisy(1.0)), 2.5), confirmation_mcycles=(2.4,))
    assert case_from_dict(case_to_dict(res)) == res
    bad = case_to_dict(res)
    bad["cycles"]["clock_min_mhz"] = 5000.0
    with pytest.raises(CodecError, match="clocks must be in order"):
        case_from_dict(bad)


# --- end to end: calibrate at varying clocks, then gate at a lower clock and with more cycles -------------------

SM_CONFTEST = (
    MANUAL_CLOCK_CONFTEST.split("\nfrom perfgate.measure import clock")[0]
    + '''

import os
from pathlib import Path

import pytest

from perfgate.measure import clock, sm_clock

_replaced = []
_sm = []


def pytest_configure(config):
    """Each process (the gate's, calibration's, confirmation's) runs the SM at the next clock of $SM_MHZ."""
    counter = Path(str(config.rootpath)) / "processes.txt"
    n = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(n + 1))
    clocks = [float(v) for v in os.environ["SM_MHZ"].split(",")]
    manual = ManualClock(tick_ns=1000)
    _replaced.append((clock.install(manual), sm_clock.install(None)))
    _sm.append(FakeSm(manual, clocks[n % len(clocks)]))
    sm_clock.install(_sm[-1].probe)


def pytest_unconfigure(config):
    old_clock, old_probe = _replaced.pop()
    clock.install(old_clock)
    sm_clock.install(old_probe)


@pytest.fixture
def sm():
    return _sm[-1]
'''
)
SM_TESTS = """
import os


def test_gemm(perfgate, sm):
    perfgate.measure(sm.compute, (float(os.environ.get("MCYCLES", "2.0")),), flops=2 * 8192**3)


def test_copy(perfgate, sm):
    perfgate.measure(sm.wait, (1.0,), bytes_moved=1 << 30)
"""
SM_PYPROJECT = """
[tool.pytest.ini_options]
addopts = "-p no:cacheprovider"

[tool.perfgate]
warmup_ms = 2
min_samples = 10
max_samples = 30
budget_ms = 40
confirm_runs = 0
memory = false
"""


@pytest.fixture
def sm_project(pytester, monkeypatch):
    perf_project(pytester, monkeypatch, SM_TESTS, SM_PYPROJECT, clear=("MCYCLES",), SM_MHZ="1980,1850,1700,1980")
    pytester.makeconftest(SM_CONFTEST)
    monkeypatch.chdir(pytester.path)
    return pytester


def test_calibrated_at_varying_clocks_a_lower_clock_passes_and_more_cycles_fail(sm_project, monkeypatch, capsys):
    from perfgate.cli import main

    assert main(["calibrate", "--runs", "4", "--reason", "cycles", "--", "test_perf.py"]) == 0
    capsys.readouterr()
    monkeypatch.setenv("SM_MHZ", "1400")  # 19-29% below every calibration process: time alone would call it
    gate = gate_json(sm_project, "test_perf.py")
    assert gate.ret == 0, gate.stdout.str()
    gate.stdout.fnmatch_lines(
        [
            "*gated in SM cycles*: 1 case(s): *test_gemm: gated: compute-bound: flops declared, no bytes_moved",
            "perfgate: gate passed: 2 case(s): 2 unchanged",  # counted by what is gated: the cycles
        ]
    )
    rows = {(c["case_id"].split("::")[-1], c["metric"]): c for c in results_json(sm_project)["comparisons"]}
    gemm_cycles, gemm_time = rows["test_gemm", CYCLES_METRIC], rows["test_gemm", TIME_METRIC]
    assert gemm_cycles["gated"] and gemm_cycles["unit"] == "Mcycles" and gemm_cycles["verdict"] == "unchanged"
    assert "compute-bound: flops declared" in gemm_cycles["note"] and "SM clock 1400 MHz" in gemm_cycles["note"]
    assert not gemm_time["gated"] and gemm_time["change_pct"] > 15
    assert rows["test_copy", TIME_METRIC]["gated"] and rows["test_copy", TIME_METRIC]["verdict"] == "unchanged"
    assert not rows["test_copy", CYCLES_METRIC]["gated"] and rows["test_copy", CYCLES_METRIC]["change_pct"] < -15

    monkeypatch.setenv("SM_MHZ", "1980")
    monkeypatch.setenv("MCYCLES", "2.3")  # the kernel itself runs 15% more cycles
    gate = gate_json(sm_project, "test_perf.py")
    assert gate.ret == 1
    rows = {(c["case_id"].split("::")[-1], c["metric"]): c for c in results_json(sm_project)["comparisons"]}
    assert rows["test_gemm", CYCLES_METRIC]["verdict"] == "regressed"
    gate.stdout.fnmatch_lines(["*test_gemm*cycles*Mcycles*REGRESSED*"])


_COMPILE_PROBE = """
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import triton
from perfgate.measure import sm_clock
source = ASTSource(fn=sm_clock._stamp_kernel(), signature={"out_ptr": "*i64", "index": "i32"}, constexprs={})
print(triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 1}).asm["ptx"])
"""


@pytest.mark.slow  # a fresh interpreter compiling through Triton's backend: seconds
def test_the_sm_clock_probe_compiles_for_hopper_and_reads_both_counters_on_sm_0():
    """No GPU here: Triton compiles the probe for sm_90 anyway (the interpreter has no inline assembly). In a
    process of its own: Triton imported once under TRITON_INTERPRET (the kernel tests) keeps its interpreted
    functions for the life of the process, and its compiler then refuses them."""
    pytest.importorskip("triton")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-c", _COMPILE_PROBE], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    ptx = proc.stdout
    reads = [
        line.split()[0] + " " + line.split()[-1]
        for line in ptx.splitlines()
        if "%globaltimer" in line or "%clock64" in line
    ]
    assert reads == ["mov.u64 %globaltimer;", "mov.u64 %clock64;"]  # one after the other, in that order
    assert "%smid" in ptx and ptx.count("st.global.b64") == 2


def test_the_probe_reads_the_mean_clock_between_two_stamps_and_none_where_sm_0_was_missed():
    probe = object.__new__(sm_clock.SmTimestamps)
    # (globaltimer ns, clock64 cycles) per stamp: 1 ms at 1755 MHz, then a stamp no block wrote (zeros)
    probe._host = [5_000_000, 9_000_000, 6_000_000, 9_000_000 + 1_755_000, 0, 0]
    assert probe.mhz(0, 1) == pytest.approx(1755.0)
    assert probe.mhz(1, 2) is None and probe.mhz(0, 2) is None


def test_baseline_show_lists_each_case_cycles_beside_its_time(tmp_path, capsys):
    from perfgate.baseline.write import write_baseline
    from perfgate.cli import main

    runs = [
        Run(RunInfo("", ""), ENV, (with_cycles(case("g", noisy(1.0, seed=i), flops=10**12), 2.0 + 0.002 * i),))
        for i in range(3)
    ]
    write_baseline(calibrated_baseline(None, runs, tmp_path / "b.json", "t", "r", SETTINGS))
    assert main(["baseline", "show", str(tmp_path / "b.json")]) == 0
    out = capsys.readouterr().out
    assert "cycles" in out.splitlines()[2] and "2.002 Mcycles" in out


def test_a_driver_update_that_moves_every_kernel_cycles_is_one_common_shift_and_reanchors(tmp_path):
    from perfgate.baseline import Update
    from perfgate.baseline.reanchor import reanchored

    spread = (0.997, 1.0, 1.003, 0.999, 1.001, 1.0)
    ids = [f"t.py::gemm{i}" for i in range(8)]
    base_results = tuple(with_cycles(case(cid, noisy(1.0), flops=10**12), 2.0) for cid in ids)
    base = baseline_of(Run(RunInfo("", ""), ENV, base_results), tmp_path)
    cases = {
        cid: replace(c, process_medians_ms=tuple(spread), process_mcycles=tuple(2.0 * f for f in spread))
        for cid, c in base.cases.items()
    }
    base = replace(base, cases=cases)
    # every kernel runs 4% more cycles (a new driver); the clock is the same
    run = [with_cycles(case(cid, noisy(1.04, seed=i), flops=10**12), 2.08) for i, cid in enumerate(ids)]
    gate = compare_run(run, base, ENV, replace(SETTINGS, confirm_runs=0))
    assert gate.common_shift is not None and gate.common_shift.shift_pct == pytest.approx(4.0, abs=0.5)
    rows = [c for c in gate.comparisons if c.metric == CYCLES_METRIC]
    assert all(c.gated and c.verdict is Verdict.UNCHANGED for c in rows) and not gate.failed
    assert "common-mode shift (+4.0%)" in rows[0].note
    update = Update(at="now", by="t", commit="c", reason="driver", cases=0)
    moved = reanchored(
        base, {cid: [1.04] * 3 for cid in ids}, ENV, update, recent_mcycles={cid: [2.08] * 3 for cid in ids}
    )
    assert moved.baseline.cases[ids[0]].process_mcycles == pytest.approx(tuple(2.08 * f for f in spread))
