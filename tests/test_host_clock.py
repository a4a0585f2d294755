"""The host clock for short calls, on a stand-in clock (no wall clock in any verdict): each sample is a
calibrated loop of calls, so what reading the clock costs is under 2% of a call from 100 ns up, the
samples are per-call times, and several callables keep their own loops while alternating."""

import pytest

from perfgate.config.settings import MeasureOptions
from perfgate.measure.host_clock import (
    MIN_SAMPLE_NS,
    HostClock,
    Invocation,
    calibrate_loops,
    clock_of,
    sample_host,
    time_loop,
)
from perfgate.measure.timer import measure_calls
from perfgate.model import Timer


class StandInClock:
    """Nanoseconds that pass only when told: each read costs `read_cost_ns`, each call what it says."""

    def __init__(self, read_cost_ns: int) -> None:
        self.now = 0
        self.read_cost_ns = read_cost_ns
        self.calls: list[str] = []

    def read(self) -> int:
        self.now += self.read_cost_ns
        return self.now

    def work(self, name: str, cost_ns: int):
        def call():
            self.calls.append(name)
            self.now += cost_ns

        return call


@pytest.mark.parametrize("read_cost_ns", [30, 500, 5_000])
@pytest.mark.parametrize("call_ns", [100, 300, 1_000, 1_000_000])
def test_clock_overhead_is_under_two_percent_of_a_call_from_100_ns(read_cost_ns, call_ns):
    clock = StandInClock(read_cost_ns)
    host = clock_of(clock.read)
    assert host.overhead_ns == read_cost_ns
    samples = sample_host([Invocation(clock.work("c", call_ns))], lambda _ms: 20, 0.0, host)
    per_call_ns = [v * 1e6 for v in samples.samples_ms[0]]
    assert len(per_call_ns) == 20
    assert max(per_call_ns) / call_ns - 1 < 0.02
    # one call per sample, as before: the clock's cost lands on every call
    one_call = time_loop(Invocation(clock.work("c", call_ns)), 1, clock.read)
    assert one_call - call_ns == read_cost_ns


def test_a_sample_lasts_at_least_the_target_and_a_long_call_is_timed_alone():
    clock = StandInClock(50)
    host = clock_of(clock.read)
    loops, per_call = calibrate_loops(Invocation(clock.work("c", 270)), host)
    assert loops * 270 + 50 >= MIN_SAMPLE_NS > (loops - 1) * 270  # the loop plus its clock reads
    assert per_call == pytest.approx(270, rel=0.02)
    assert calibrate_loops(Invocation(clock.work("c", 2_000_000)), host, fastest_call_ns=2_000_000) == (1, 2_000_000)


def test_a_slow_clock_makes_longer_samples():
    assert HostClock(lambda: 0, overhead_ns=40).target_sample_ns == MIN_SAMPLE_NS
    assert HostClock(lambda: 0, overhead_ns=2_000).target_sample_ns == 200_000
    assert HostClock(lambda: 0, overhead_ns=10, resolution_ns=1_000).target_sample_ns == 100_000


def test_callables_keep_their_own_loops_and_alternate_sample_by_sample():
    clock = StandInClock(40)
    fast, slow = Invocation(clock.work("f", 200)), Invocation(clock.work("s", 40_000))
    result = sample_host([fast, slow], lambda _ms: 6, 0.0, clock_of(clock.read))
    assert result.calls_per_sample == (50, 1)
    assert [v * 1e6 for v in result.samples_ms[1]] == pytest.approx([40_000] * 6, rel=0.01)
    sampling = "".join(clock.calls)[-6 * 51 :]
    assert sampling == ("f" * 50 + "s") * 6


def test_measure_calls_reports_per_call_milliseconds_and_the_loop():
    clock = StandInClock(60)
    options = MeasureOptions(warmup_ms=0.0, min_samples=10, max_samples=10, memory=False)
    m = measure_calls([clock.work("c", 300)], options, Timer.HOST, host_clock=clock_of(clock.read))
    assert m.timer is Timer.HOST and len(m.samples_ms[0]) == 10
    assert m.calls_per_sample == (34,)
    assert all(abs(v * 1e6 / 300 - 1) < 0.02 for v in m.samples_ms[0])


def test_the_sample_count_comes_from_the_budget_over_a_whole_loop():
    clock = StandInClock(40)
    options = MeasureOptions(warmup_ms=0.0, min_samples=5, max_samples=1000, budget_ms=1.0, memory=False)
    m = measure_calls([clock.work("c", 1_000)], options, Timer.HOST, host_clock=clock_of(clock.read))
    assert m.calls_per_sample == (10,)
    assert len(m.samples_ms[0]) == 99  # 1 ms of budget // one loop (10 calls of 1 us + 40 ns of clock)
