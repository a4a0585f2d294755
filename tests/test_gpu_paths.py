"""The CUDA and NVML code paths, run without a GPU: torch.cuda's events, allocator statistics and NVML are
replaced by stand-ins that keep time with a manual clock (tests/manual_clock.py), so the
sampling loop, interleaving, throttled sample exclusion, the power protocol and the peak-memory pass all
execute here, each callable taking exactly the time it declares, on an idle or a busy machine alike.
(On a GPU the same paths run for real: tests/test_gpu.py.)"""

from dataclasses import dataclass

import pytest

torch = pytest.importorskip("torch")

from perfgate.config.settings import MeasureOptions  # noqa: E402
from perfgate.measure import clock, gpu_state, protocol, timer  # noqa: E402
from perfgate.measure.case import CaseSpec, measure_case  # noqa: E402
from perfgate.model import Timer  # noqa: E402
from tests.manual_clock import ManualClock  # noqa: E402


@pytest.fixture(autouse=True)
def manual_clock():
    """Every test here runs on a clock that moves only when a stand-in kernel says how long it took."""
    fake = ManualClock()
    previous = clock.install(fake)
    yield fake
    clock.install(previous)


def now_s():
    return clock.current().perf_counter_ns() / 1e9


def take(ms):
    """A kernel that takes exactly `ms` milliseconds."""
    clock.current().sleep(ms / 1e3)


class FakeEvent:
    def __init__(self, enable_timing=False):
        self.t = None

    def record(self):
        self.t = now_s()

    def elapsed_time(self, other):
        return (other.t - self.t) * 1e3


class FakeFlush:
    def zero_(self):
        pass


@pytest.fixture
def fake_cuda(monkeypatch):
    allocated = {"now": 1000, "peak": 1000}
    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda: allocated["now"])
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda: allocated.update(peak=allocated["now"]))
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda: allocated["peak"])
    monkeypatch.setattr(torch.cuda, "max_memory_reserved", lambda: 1 << 21)
    monkeypatch.setattr(timer, "flush_buffer", FakeFlush)
    return allocated


@dataclass
class FakeNvml:
    """A GPU that is power-capped (reason 0x4) during the given windows of its life."""

    capped_between: tuple[tuple[float, float], ...] = ()
    power_limit_w: float = 700.0
    clocks_locked_by_setting: bool = False

    def __post_init__(self):
        self.t0 = now_s()
        self.reads = 0

    def read(self):
        self.reads += 1
        now = now_s()
        capped = any(a <= now - self.t0 < b for a, b in self.capped_between)
        return gpu_state.Reading(
            now,
            1410.0 if capped else 1980.0,
            2619.0,
            690.0 if capped else 120.0,
            45.0,
            gpu_state.SW_POWER_CAP if capped else 0,
        )


OPTIONS = MeasureOptions(warmup_ms=2, min_samples=10, max_samples=40, budget_ms=40, cooldown_max_ms=500)


def test_cuda_sampling_interleaves_reference_and_candidate_and_reads_the_speedup(fake_cuda):
    order = []

    def cand():
        order.append("c")
        take(0.5)

    def ref():
        order.append("r")
        take(1.0)

    result = measure_case(
        CaseSpec("t::x", cand, reference=ref, reference_name="slow ref", options=OPTIONS, timer=Timer.CUDA_EVENT),
        FakeNvml(),
    )
    assert result.timing.timer is Timer.CUDA_EVENT and result.timing.n_samples >= 10
    assert "rcrcrcrc" in "".join(order)  # alternating, sample by sample
    assert result.speedup.reference == "slow ref"
    s = result.speedup
    assert 1.5 < s.median < 2.5 and s.ci_low <= s.median <= s.ci_high
    assert result.gpu_state.polls > 0 and result.gpu_state.sm_clock_mhz == 1980.0
    assert {m.name for m in result.metrics} == {"memory.peak_allocated_bytes", "memory.peak_reserved_bytes", "speedup"}


def test_the_peak_memory_of_a_call_is_what_it_allocated_above_what_was_there(fake_cuda):
    def call():
        fake_cuda["peak"] = max(fake_cuda["peak"], fake_cuda["now"] + 4096)

    result = measure_case(CaseSpec("t::m", call, options=OPTIONS, timer=Timer.CUDA_EVENT))
    peak = next(m.value for m in result.metrics if m.name == "memory.peak_allocated_bytes")
    assert peak == 4096


def test_a_hot_gpu_is_cooled_until_the_cap_clears_then_settles():
    nvml = FakeNvml(capped_between=((0.0, 0.15),))
    waited = protocol.cool_down(nvml, 2000)
    assert 150 + protocol.SETTLE_S * 1000 * 0.9 < waited < 1000
    cool = FakeNvml()
    assert protocol.cool_down(cool, 2000) < 50  # nothing to wait for
    assert protocol.cool_down(FakeNvml(capped_between=((0.0, 10.0),)), 100) == pytest.approx(100, abs=40)  # bounded


def test_samples_taken_under_a_power_cap_are_dropped_when_enough_remain(fake_cuda, monkeypatch):
    monkeypatch.setattr(timer, "CHUNK_MS", 3.0)
    monkeypatch.setattr(protocol, "SETTLE_S", 0.0)
    calls = {"n": 0}

    def cand():
        calls["n"] += 1
        take(0.5)

    options = MeasureOptions(warmup_ms=0, min_samples=10, max_samples=60, budget_ms=60, cooldown_max_ms=0)
    nvml = FakeNvml(capped_between=((0.0, 0.012),))  # capped through warm-up and the first chunks
    result = measure_case(CaseSpec("t::x", cand, options=options, timer=Timer.CUDA_EVENT), nvml)
    assert result.gpu_state.excluded_samples > 0
    assert result.timing.n_samples == 60 - result.gpu_state.excluded_samples
    assert result.gpu_state.throttle_reasons & gpu_state.SW_POWER_CAP


def test_too_few_clean_samples_keeps_them_all_and_flags_the_case(fake_cuda, monkeypatch):
    monkeypatch.setattr(protocol, "SETTLE_S", 0.0)
    options = MeasureOptions(warmup_ms=0, min_samples=10, max_samples=20, budget_ms=20, cooldown_max_ms=0)
    nvml = FakeNvml(capped_between=((0.0, 100.0),))  # capped all along
    result = measure_case(CaseSpec("t::x", lambda: take(0.5), options=options, timer=Timer.CUDA_EVENT), nvml)
    assert result.gpu_state.excluded_samples == 0 and result.timing.n_samples == 20
    assert result.gpu_state.throttled_fraction == 1.0


def test_without_nvml_the_cuda_path_still_measures(fake_cuda):
    result = measure_case(CaseSpec("t::x", lambda: take(0.2), options=OPTIONS, timer=Timer.CUDA_EVENT), None)
    assert result.gpu_state is None and result.timing.n_samples >= 10


def test_a_user_who_locked_clocks_gets_it_recorded(fake_cuda):
    nvml = FakeNvml(clocks_locked_by_setting=True)
    result = measure_case(CaseSpec("t::x", lambda: take(0.2), options=OPTIONS, timer=Timer.CUDA_EVENT), nvml)
    assert result.gpu_state.clocks_locked


def _trim_cold(samples):
    return timer._select(samples, timer._kept_rounds(samples, range(len(samples[0]))))


def test_leading_warm_up_outliers_are_not_recorded():
    samples = [[50.0, 40.0] + [1.0] * 98]
    assert _trim_cold(samples)[0][:2] == (1.0, 1.0)
    assert len(_trim_cold(samples)[0]) == 98
    steady = [[1.0, 1.1] + [1.0] * 98]
    assert len(_trim_cold(steady)[0]) == 100


def test_each_cuda_sample_is_stamped_around_its_call_and_keeps_its_clock_through_the_drops(
    fake_cuda, monkeypatch, manual_clock
):
    from perfgate.measure import sm_clock
    from tests.manual_clock import FakeSm, FakeSmProbe

    monkeypatch.setattr(timer, "CHUNK_MS", 3.0)
    monkeypatch.setattr(protocol, "SETTLE_S", 0.0)
    order = []
    sm = FakeSm(manual_clock, 1980.0, schedule=((0.02, 1500.0),))  # the clock drops part-way

    class Recording(FakeSmProbe):
        def stamp(self, index):
            order.append("p")
            super().stamp(index)

    def cand():
        order.append("c")
        sm.compute(0.99)  # 0.5 ms at 1980 MHz

    monkeypatch.setattr(sm_clock, "_installed", [lambda _timer: Recording(sm)])
    options = MeasureOptions(warmup_ms=0, min_samples=10, max_samples=60, budget_ms=60, cooldown_max_ms=0, memory=False)
    nvml = FakeNvml(capped_between=((0.0, 0.012),))  # the first chunks are dropped as throttled
    result = measure_case(CaseSpec("t::x", cand, options=options, timer=Timer.CUDA_EVENT), nvml)
    assert "pcppcp" in "".join(order)  # a stamp right before and right after every sampled call
    assert result.gpu_state.excluded_samples > 0
    assert result.cycles.probed_samples == result.timing.n_samples  # the clocks dropped with their samples
    assert result.cycles.clock_min_mhz == pytest.approx(1500.0) and result.cycles.clock_max_mhz == pytest.approx(1980.0)
    assert result.cycles.median_mcycles == pytest.approx(0.99, rel=1e-5)  # whatever clock each sample ran at
