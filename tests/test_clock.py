"""The clock measurement reads (perfgate/measure/clock.py): the host's in production, at no extra cost per
sample, and a manual one in tests, on which a callable takes exactly the time it declares."""

import threading
import time

import pytest

from perfgate.config.settings import MeasureOptions
from perfgate.measure import clock
from perfgate.measure.case import CaseSpec, measure_case
from perfgate.model import Timer
from tests.manual_clock import ManualClock


@pytest.fixture
def manual():
    fake = ManualClock()
    previous = clock.install(fake)
    yield fake
    clock.install(previous)


def test_production_reads_the_time_module_itself():
    assert clock.current() is clock.SYSTEM
    assert clock.SYSTEM.perf_counter_ns is time.perf_counter_ns and clock.SYSTEM.sleep is time.sleep


def test_the_system_clock_polls_on_another_thread_until_stopped():
    seen, first = [], threading.Event()

    def poll():
        seen.append(threading.current_thread().name)
        first.set()

    poller = clock.SYSTEM.every(0.001, poll)
    assert first.wait(timeout=60)
    poller.stop()
    poller._thread.join(timeout=60)  # stop() waits 2 s at most; a busy machine may need longer
    assert not poller._thread.is_alive()
    assert set(seen) == {"perfgate-poll"}


def test_host_samples_are_exactly_the_time_the_callable_takes(manual):
    options = MeasureOptions(warmup_ms=1, min_samples=10, max_samples=20, budget_ms=40)
    result = measure_case(CaseSpec("t::x", manual.sleep, (0.002,), options=options, timer=Timer.HOST))
    assert result.samples_ms == (2.0,) * 20


def test_periodic_work_runs_at_the_instants_it_falls_due(manual):
    at = []
    poller = manual.every(0.005, lambda: at.append(manual.perf_counter_ns()))
    manual.sleep(0.012)
    assert at == [0, 5_000_000, 10_000_000]
    poller.stop()
    manual.sleep(0.1)
    assert len(at) == 3


def test_a_tick_per_reading_ends_a_loop_that_waits_on_the_clock():
    ticking = ManualClock(tick_ns=1000)
    reads = 0
    while ticking.perf_counter_ns() < 1_000_000:
        reads += 1
    assert reads == 999
    with pytest.raises(ValueError, match="does not go back"):
        ticking.advance_ns(-1)
