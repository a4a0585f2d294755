"""Where a gate's time goes: each case's phases, summed into the line printed after the timing phase."""

from __future__ import annotations

from dataclasses import replace

from perfgate.measure.phases import FIRST_CALLS, KERNELS, LAUNCHES, MEMORY, SAMPLES, Phases, phase_line
from tests.helpers import case, noisy
from tests.manual_clock import ManualClock


def test_a_case_counts_the_seconds_of_each_phase_on_the_clock_it_is_given():
    clock = ManualClock()
    phases = Phases(lambda: clock.perf_counter_ns() / 1e9)
    with phases(FIRST_CALLS):
        clock.sleep(40.0)
    with phases(SAMPLES):
        clock.sleep(0.5)
    with phases(KERNELS):
        clock.sleep(0.25)
    with phases(KERNELS):
        clock.sleep(0.25)
    assert phases.items() == ((FIRST_CALLS, 40.0), (KERNELS, 0.5), (SAMPLES, 0.5))


def test_a_phase_inside_another_is_counted_once_in_its_own_name():
    clock = ManualClock()
    phases = Phases(lambda: clock.perf_counter_ns() / 1e9)
    with phases(KERNELS):
        clock.sleep(0.25)
        with phases(LAUNCHES):
            clock.sleep(4.0)
        clock.sleep(0.25)
    with phases(SAMPLES):
        clock.sleep(0.5)
    assert phases.items() == ((KERNELS, 0.5), (LAUNCHES, 4.0), (SAMPLES, 0.5))


def test_the_line_names_the_slowest_first_calls_and_what_the_tests_themselves_took():
    cold = replace(
        case("k/t.py::test_rms_norm", noisy(1.0)), phases_s=((FIRST_CALLS, 41.0), (SAMPLES, 0.4), (MEMORY, 0.1))
    )
    warm = replace(case("k/t.py::test_add", noisy(1.0)), phases_s=((FIRST_CALLS, 1.5), (KERNELS, 0.3), (SAMPLES, 0.4)))
    line = phase_line(45.0, [warm, cold], before_s=6.25)
    assert line == (
        "perfgate: timing phase took 45.0 s (2 case(s)): first calls 42.5 s (compile, autotune, build: "
        "t.py::test_rms_norm 41.0 s, t.py::test_add 1.5 s), compiled kernels 0.3 s, sampling 0.8 s, memory 0.1 s, "
        "the tests' own code 1.3 s, before it 6.2 s (python, imports, collection)"
    )


def test_cases_without_phases_give_the_plain_line():
    assert phase_line(2.0, [case("a", noisy(1.0))]) == "perfgate: timing phase took 2.0 s (1 case(s))"
