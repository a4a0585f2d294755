"""Host timers on CPU time (`host_timer`): a preempted call reads what it ran, not what it waited. On the manual
clock (tests/manual_clock.py) `preempt` is wall time the thread spent off the CPU: the wall clock reads it, the
thread's CPU time does not."""

from dataclasses import replace

import pytest

from perfgate.baseline.review import preemption_notes
from perfgate.config.settings import MeasureOptions, Settings
from perfgate.gate.compare import compare_run
from perfgate.measure import clock
from perfgate.measure.case import CaseSpec, measure_case
from perfgate.model import HostState, HostTimer, Timer, Verdict
from tests.helpers import HOST_ENV, baseline_of, case, gate_json, make_run, noisy, perf_project, results_json
from tests.manual_clock import ManualClock

OPTIONS = MeasureOptions(warmup_ms=1, min_samples=20, max_samples=40, budget_ms=200, memory=False)


@pytest.fixture
def manual():
    fake = ManualClock()
    previous = clock.install(fake)
    yield fake
    clock.install(previous)


def preempted_call(manual, every=5, waits=3, wait_s=0.010):
    """2 ms of CPU; `waits` calls in every `every` wait `wait_s` for a CPU first (another process ran)."""
    calls = [0]

    def call():
        if calls[0] % every < waits:
            manual.preempt(wait_s)
        manual.sleep(0.002)
        calls[0] += 1

    return call


def measured(manual, host_timer):
    options = replace(OPTIONS, host_timer=host_timer)
    return measure_case(CaseSpec("t::f", preempted_call(manual), options=options, timer=Timer.HOST))


def test_a_preempted_call_reads_its_waits_on_the_wall_clock_and_only_its_work_on_cpu_time(manual):
    wall = measured(manual, HostTimer.WALL)
    cpu = measured(manual, HostTimer.THREAD_CPU)
    process = measured(manual, HostTimer.PROCESS_CPU)
    assert wall.timing.timer is Timer.HOST and wall.timing.median_ms == pytest.approx(12.0, rel=1e-3)
    assert cpu.timing.timer is Timer.HOST_THREAD_CPU and cpu.timing.median_ms == pytest.approx(2.0, rel=1e-3)
    assert process.timing.timer is Timer.HOST_PROCESS_CPU and process.timing.median_ms == pytest.approx(2.0, rel=1e-3)
    assert wall.host_state.cpu_share_pct < 40  # the thread ran ~2 ms of every ~8 ms


def test_an_unpreempted_call_reads_the_same_on_both(manual):
    quiet = measure_case(CaseSpec("t::f", lambda: manual.sleep(0.002), options=OPTIONS, timer=Timer.HOST))
    options = replace(OPTIONS, host_timer=HostTimer.THREAD_CPU)
    cpu = measure_case(CaseSpec("t::f", lambda: manual.sleep(0.002), options=options, timer=Timer.HOST))
    assert quiet.timing.median_ms == pytest.approx(cpu.timing.median_ms, rel=1e-3)
    assert quiet.host_state.cpu_share_pct == pytest.approx(100.0)


def test_a_wall_clock_baseline_is_never_compared_with_cpu_time(tmp_path):
    base = baseline_of(make_run({"t::f": noisy(2.0)}, env=HOST_ENV), tmp_path)
    cpu = case("t::f", noisy(2.0), timer=Timer.HOST_THREAD_CPU)
    (row,) = [c for c in compare_run([cpu], base, HOST_ENV, Settings()).comparisons if c.case_id == "t::f"]
    assert row.verdict is Verdict.NOT_COMPARABLE
    assert row.note == "baseline timed with host, this run with host_thread_cpu"


def test_calibration_suggests_cpu_time_when_the_wall_clock_was_preempted():
    def host(share, timer=Timer.HOST):
        state = HostState(load_avg_1m=3.0, cpus=2, threads=1, cpu_share_pct=share)
        return replace(case("t::f", noisy(2.0), timer=timer), host_state=state)

    (note,) = preemption_notes({"t::f": [host(99.0), host(61.0), host(98.0)], "t::g": [host(99.5), host(99.0)]})
    assert (
        "1 wall-clock host case(s) were preempted" in note and "t::f (its thread ran 61-99% of the wall time)" in note
    )
    assert 'host_timer = "thread_cpu"' in note
    assert preemption_notes({"t::f": [host(99.0), host(98.0)]}) == []  # ran nearly all its wall time
    assert preemption_notes({"t::f": [host(50.0, Timer.HOST_THREAD_CPU)]}) == []  # already on CPU time


# --- end to end: calibrated quiet, gated while preempted, one case on each clock ------------------------------

TESTS = """
import os

import pytest

from perfgate.measure import clock

CALLS = [0]


def work():
    # 2 ms of CPU; under PREEMPT three calls in five first wait 10 ms for a CPU (both cores busy elsewhere)
    if os.environ.get("PREEMPT") and CALLS[0] % 5 < 3:
        clock.current().preempt(0.010)
    clock.current().sleep(0.002)
    CALLS[0] += 1


@pytest.mark.perfgate(host_timer="wall")
def test_wall(perfgate):
    perfgate(work)


def test_cpu(perfgate):
    perfgate(work)
"""
PYPROJECT = """
[tool.pytest.ini_options]
addopts = "-p no:cacheprovider"

[tool.perfgate]
warmup_ms = 2
min_samples = 10
max_samples = 30
budget_ms = 100
confirm_runs = 0
memory = false
host_timer = "thread_cpu"
"""


def test_under_preemption_the_wall_clock_case_fails_and_the_cpu_time_case_passes(pytester, monkeypatch, capsys):
    from perfgate.cli import main

    perf_project(pytester, monkeypatch, TESTS, PYPROJECT, clear=("PREEMPT",))
    monkeypatch.chdir(pytester.path)
    assert main(["calibrate", "--runs", "3", "--reason", "quiet", "--", "test_perf.py"]) == 0
    capsys.readouterr()
    monkeypatch.setenv("PREEMPT", "1")
    gate = gate_json(pytester, "test_perf.py")
    assert gate.ret == 1
    doc = results_json(pytester)
    timers = {r["case_id"].split("::")[-1]: r["timing"]["timer"] for r in doc["cases"]}
    assert timers == {"test_wall": "host", "test_cpu": "host_thread_cpu"}  # the option, and the marker over it
    rows = {c["case_id"].split("::")[-1]: c for c in doc["comparisons"] if c["metric"] == "median_ms"}
    assert rows["test_wall"]["verdict"] == "regressed" and rows["test_wall"]["change_pct"] > 400
    assert rows["test_cpu"]["verdict"] == "unchanged" and abs(rows["test_cpu"]["change_pct"]) < 1


def test_a_run_whose_noise_window_holds_a_preempted_process_thirteen_times_slower_is_stored(tmp_path):
    # a wall-clock window process of 27 ms against a 2 ms centre (+1300%) made the store refuse the run (exit 4)
    from perfgate.model import CaseThresholds, NoiseEstimate, Run, RunInfo
    from perfgate.store import open_store

    noise = NoiseEstimate(180.0, 9, 4, upper_pct=(1303.09, 400.0), lower_pct=(-3.0,))
    res = case("t::f", noisy(2.0), timer=Timer.HOST, thresholds=CaseThresholds(time_noise=noise))
    with open_store(tmp_path / "h.db") as store:
        run_id = store.save_run(
            Run(RunInfo("2026-11-21T00:00:00+00:00", "2026-11-21T00:01:00+00:00"), HOST_ENV, (res,))
        )
        assert store.load_run(run_id).results[0].thresholds.time_noise.upper_pct == (1303.09, 400.0)
