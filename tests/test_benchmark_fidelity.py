"""pytest-benchmark's semantics under --perfgate, beyond its own tests (test_pytest_benchmark_upstream.py):
what a pedantic round times (setup and teardown never), its stats with pytest-benchmark's definitions,
group and extra_info kept with the case, and each `--benchmark-*` option either honoured or named in
the one warning line."""

import json
import random
from types import SimpleNamespace

import pytest

from perfgate.measure.rounds import FixedRounds, run_rounds
from perfgate.model import Timer
from perfgate.pytest_plugin.benchmark_stats import BenchmarkStats
from tests.helpers import perf_project


class StandInClock:
    def __init__(self):
        self.now = 0

    def read(self):
        return self.now

    def spend(self, ns):
        self.now += ns


def test_a_pedantic_round_times_the_target_only():
    clock, calls = StandInClock(), []

    def setup():
        calls.append("setup")
        clock.spend(5_000_000)  # a slow setup and teardown must not show in the samples
        return (2,), {"y": 3}

    def target(x, y):
        calls.append("target")
        clock.spend(1_000 * (x + y))
        return x * y

    def teardown(x, y):
        calls.append("teardown")
        clock.spend(11_000_000)

    plan = FixedRounds(target, setup, teardown, rounds=3, warmup_rounds=1)
    m = run_rounds(plan, Timer.HOST, read_ns=clock.read)
    assert m.samples_ms == (0.005, 0.005, 0.005) and m.result == 6
    assert calls == ["setup", "target", "teardown"] * 4


def test_a_pedantic_round_on_cuda_events_times_the_target_only(monkeypatch):
    torch = pytest.importorskip("torch")
    from perfgate.measure import timer

    clock, calls, flushes = StandInClock(), [], []

    class Event:  # a CUDA event on the stand-in clock
        def __init__(self, enable_timing=False):
            self.t = None

        def record(self):
            self.t = clock.now

        def elapsed_time(self, other):
            return (other.t - self.t) / 1e6

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(timer, "flush_buffer", lambda: SimpleNamespace(zero_=lambda: flushes.append(1)))

    def setup():
        calls.append("setup")
        clock.spend(9_000_000)
        return (), {}

    def target():
        calls.append("target")
        clock.spend(3_000)
        return "out"

    plan = FixedRounds(target, setup, lambda: clock.spend(7_000_000), rounds=2, warmup_rounds=1)
    m = run_rounds(plan, Timer.CUDA_EVENT, flush_l2=True)
    assert m.samples_ms == (0.003, 0.003) and m.result == "out"
    assert calls == ["setup", "target"] * 3 and len(flushes) == 3  # the L2 flushed before every round


def test_iterations_are_one_timed_loop_and_samples_are_per_call():
    clock, calls = StandInClock(), []

    def target():
        calls.append("t")
        clock.spend(400)

    m = run_rounds(FixedRounds(target, lambda: ((), {}), rounds=2, iterations=5), Timer.HOST, read_ns=clock.read)
    assert m.samples_ms == (0.0004, 0.0004) and m.result is None and len(calls) == 10


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 25, 100])
def test_stats_match_pytest_benchmarks_definitions(n):
    upstream = pytest.importorskip("pytest_benchmark.stats")
    rng = random.Random(n)
    data = [rng.lognormvariate(-13, 0.3) for _ in range(n)]
    theirs = upstream.Stats()
    for v in data:
        theirs.update(v)
    ours = BenchmarkStats(data)
    for name in upstream.Stats.fields:
        expected = getattr(theirs, name)
        assert getattr(ours, name) == (expected if isinstance(expected, str) else pytest.approx(expected)), name


SUITE = """
import gc
import pytest

GC_DURING_CALLS = []

def add(a, b):
    GC_DURING_CALLS.append(gc.isenabled())
    return a + b

def test_grouped(benchmark):
    benchmark.group = "arith"
    benchmark.extra_info["size"] = 2
    assert benchmark(add, 1, 2) == 3
    benchmark.extra_info["after"] = [1, "x"]  # set after the call: kept too
    assert benchmark.stats["mean"] == benchmark.stats.stats.mean > 0
    assert benchmark.stats.iterations >= 1 and benchmark.stats.group == "arith"

@pytest.mark.benchmark(group="marked", max_time=0.5, disable_gc=True)
def test_marked(benchmark):
    GC_DURING_CALLS.clear()
    benchmark.pedantic(add, args=(1, 2), rounds=3)
    assert GC_DURING_CALLS == [False] * 3

def test_plain():
    pass
"""
PYPROJECT = """
[tool.perfgate]
warmup_ms = 1
min_samples = 5
max_samples = 10
budget_ms = 10
confirm_runs = 0
memory = false
"""


@pytest.fixture
def suite(pytester, monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    return perf_project(pytester, monkeypatch, SUITE, PYPROJECT, test_name="test_bench")


def run(suite, *args):
    return suite.runpytest(
        "--perfgate", "-p", "no:cacheprovider", "--perfgate-no-store", "--perfgate-json", "out.json", *args
    )


def cases(suite):
    return {c["case_id"].split("::")[-1]: c for c in json.loads((suite.path / "out.json").read_text())["cases"]}


def test_group_and_extra_info_are_kept_with_the_case(suite):
    pytest.importorskip("pytest_benchmark")
    result = run(suite)
    assert result.ret == 0
    got = cases(suite)
    assert got["test_grouped"]["group"] == "arith"
    assert got["test_grouped"]["extra_info"] == {"size": 2, "after": [1, "x"]}
    assert got["test_marked"]["group"] == "marked" and got["test_marked"]["timing"]["n_samples"] == 3
    result.stdout.fnmatch_lines(
        ["perfgate warning: pytest-benchmark settings not used under --perfgate *: @pytest.mark.benchmark(max_time)"]
    )


def test_options_perfgate_does_not_use_are_named_in_one_line(suite):
    pytest.importorskip("pytest_benchmark")
    result = run(
        suite,
        "--benchmark-autosave",
        "--benchmark-compare-fail=mean:10%",
        "--benchmark-min-rounds=3",
        "--benchmark-disable-gc",
    )
    assert result.ret == 0
    lines = [line for line in result.outlines if "not used under --perfgate" in line]
    assert len(lines) == 1
    assert lines[0].endswith(": --benchmark-min-rounds, @pytest.mark.benchmark(max_time)")
    # written or mapped, each in its own way (tests/test_benchmark_cli.py)
    assert len(list((suite.path / ".benchmarks").glob("*/0001_*.json"))) == 1
    assert sum("--benchmark-compare-fail: perfgate's gate" in line for line in result.outlines) == 1


def test_benchmark_skip_and_only_select_tests_as_pytest_benchmark_does(suite):
    pytest.importorskip("pytest_benchmark")
    run(suite, "--benchmark-skip").assert_outcomes(passed=1, skipped=2)
    run(suite, "--benchmark-only").assert_outcomes(passed=2, skipped=1)


def test_benchmark_disable_runs_each_once_and_measures_nothing(suite):
    pytest.importorskip("pytest_benchmark")
    suite.makepyfile(
        test_once="""
CALLS = []
def test_once(benchmark):
    assert benchmark.disabled and not benchmark.enabled
    assert benchmark(CALLS.append, 1) is None and CALLS == [1] and benchmark.stats is None
"""
    )
    result = run(suite, "--benchmark-disable", "test_once.py")
    result.assert_outcomes(passed=1)
    assert cases(suite) == {}


def test_cprofile_runs_after_the_timing_and_dumps_its_profile(suite):
    pytest.importorskip("pytest_benchmark")
    suite.makepyfile(
        test_prof="""
RUNS = []
def test_prof(benchmark):
    benchmark.pedantic(RUNS.append, args=(1,), rounds=2)
    assert RUNS == [1, 1, 1]  # two rounds, then one call under cProfile
    assert benchmark.stats.cprofile_stats is not None
"""
    )
    result = run(suite, "--benchmark-cprofile=tottime", "--benchmark-cprofile-dump=prof/run", "test_prof.py")
    result.assert_outcomes(passed=1)
    assert (suite.path / "prof" / "run-test_prof.prof").is_file()


def test_the_fixture_can_be_used_once_per_test(suite):
    suite.makepyfile(
        test_twice="""
import pytest
def test_twice(benchmark):
    benchmark(int)
    with pytest.raises(Exception, match="Fixture can only be used once. Previously it was used in benchmark"):
        benchmark.pedantic(int)
"""
    )
    run(suite, "test_twice.py").assert_outcomes(passed=1)


def test_an_unknown_marker_argument_is_refused_as_pytest_benchmark_refuses_it(suite):
    suite.makepyfile(
        test_bad="""
import pytest
@pytest.mark.benchmark(rounds=3)
def test_bad(benchmark):
    benchmark(int)
"""
    )
    result = run(suite, "test_bad.py")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*benchmark mark can't have 'rounds' keyword argument.*"])


class RecordingFixture:
    """perfgate's fixture as the benchmark fixture drives it: records the timer each measurement asks for."""

    def __init__(self):
        self.timers, self.last = [], None

    def measure(self, fn, args, kwargs, timer=None):
        self.timers.append(timer)
        return SimpleNamespace(median_ms=1.0)

    def measure_rounds(self, plan, timer=None):
        self.timers.append(timer)
        return None, plan.target()


@pytest.mark.parametrize("use", ["call", "pedantic"])
def test_the_benchmark_fixture_times_wall_clock_as_pytest_benchmark_does_even_beside_a_gpu(use):
    from perfgate.pytest_plugin.benchmark import PerfgateBenchmark

    fixture = RecordingFixture()
    node = SimpleNamespace(name="test_x", nodeid="t.py::test_x")
    bench = PerfgateBenchmark(fixture, node, {}, disabled=False)
    value = bench(lambda: 7) if use == "call" else bench.pedantic(lambda: 7, rounds=2)
    assert value == 7 and fixture.timers == [Timer.HOST]  # never the session's CUDA events
