"""pytest-benchmark suites, gated unchanged: under `--perfgate` the `benchmark` fixture is served by
perfgate's host clock (calibrated loops of calls; pytest-benchmark times the host's wall clock too, on a
GPU machine as well: a GPU function must synchronize inside, as it must for pytest-benchmark, and
sub-microsecond CPU functions stay measurable where CUDA events resolve ~0.5 us) and each test becomes a
gated case (the `perfgate` fixture is the one that times GPU work with CUDA events); without
`--perfgate` pytest-benchmark is untouched (this plugin is only registered by a measuring session).

The fixture keeps pytest-benchmark's semantics (its fixture.py, 5.x):
- `benchmark(fn, *args, **kwargs)` times `fn(*args, **kwargs)` as often as perfgate's sampling needs,
  then returns the result of one more, untimed call (the cProfile calls when cprofile is on);
- `benchmark.pedantic(target, args, kwargs, setup, teardown, rounds, iterations, warmup_rounds)` makes
  exactly warmup_rounds + rounds rounds of `iterations` calls, setup before and teardown after each
  round outside the timing, plus one untimed call for the result when iterations > 1; the same checks
  and errors;
- `enabled`/`disabled`, `name`, `fullname`, `param`, `params`, `group`, `extra_info` (kept with the case),
  `stats` (pytest-benchmark's Metadata and Stats, seconds), `weave`/`patch` (with aspectlib), one use
  per test (FixtureAlreadyUsed).
Options and marker keys: benchmark_options.py.
"""

from __future__ import annotations

import cProfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from perfgate.measure.host_clock import gc_paused
from perfgate.measure.rounds import Arguments, FixedRounds
from perfgate.model import Timer
from perfgate.pytest_plugin.benchmark_options import BenchmarkOptions, fixture_options, ignored_line, marker_settings
from perfgate.pytest_plugin.benchmark_stats import BenchmarkMetadata


class FixtureAlreadyUsed(Exception):
    """pytest-benchmark's error for a second use of the fixture in one test."""


class PerfgateBenchmark:
    def __init__(self, fixture: Any, node: pytest.Item, options: Mapping[str, Any], disabled: bool) -> None:
        self._fixture = fixture
        self.name, self.fullname = node.name, node.nodeid
        callspec = getattr(node, "callspec", None)
        self.param = callspec.id if callspec is not None else None
        self.params = callspec.params if callspec is not None else None
        self.group: str | None = options.get("group")
        self.extra_info: dict[str, Any] = {}
        self.stats: BenchmarkMetadata | None = None
        self.disabled = disabled
        self.has_error = False
        self.skipped = False
        self.cprofile_stats: Any = None
        self._options = dict(options)
        self._mode = ""
        self._cleanup_callbacks: list[Callable[[], Any]] = []

    @property
    def enabled(self) -> bool:
        return not self.disabled

    def __call__(self, function_to_benchmark: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self._use("benchmark(...)")
        try:
            return self._raw(function_to_benchmark, args, kwargs)
        except Exception:
            self.has_error = True
            raise

    def pedantic(
        self,
        target: Callable[..., Any],
        args: Any = (),
        kwargs: Mapping[str, Any] | None = None,
        setup: Callable[[], Any] | None = None,
        teardown: Callable[..., Any] | None = None,
        rounds: int = 1,
        warmup_rounds: int = 0,
        iterations: int = 1,
    ) -> Any:
        __tracebackhide__ = True  # a bad argument shows the test's line and pytest-benchmark's ValueError
        self._use("benchmark.pedantic(...)")
        try:
            _check_pedantic(setup, rounds, warmup_rounds, iterations)
        except ValueError:
            self.has_error = True
            raise
        try:
            return self._raw_pedantic(target, args, kwargs, setup, teardown, rounds, warmup_rounds, iterations)
        except Exception:
            self.has_error = True
            raise

    def weave(self, target: Any, **kwargs: Any) -> None:
        """Benchmark every call of `target` (a function or "module.name") made during the test."""
        try:
            import aspectlib
        except ImportError as exc:
            raise ImportError(exc.args, "Please install aspectlib or pytest-benchmark[aspect]") from exc

        def aspect(function: Callable[..., Any]) -> Callable[..., Any]:
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                return self(function, *args, **kwargs)

            return wrapper

        self._cleanup_callbacks.append(aspectlib.weave(target, aspect, **kwargs).rollback)

    patch = weave

    def _use(self, mode: str) -> None:
        if self._mode:
            self.has_error = True
            raise FixtureAlreadyUsed(f"Fixture can only be used once. Previously it was used in {self._mode} mode.")
        self._mode = mode

    def _raw(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self.disabled:
            return fn(*args, **kwargs)
        with gc_paused(bool(self._options.get("disable_gc"))):
            timing = self._fixture.measure(fn, args, kwargs, timer=Timer.HOST)
        case = self._fixture.last
        iterations = case.calls_per_sample if case is not None else 1
        self._set_stats(case.samples_ms if case is not None else (timing.median_ms,), iterations)
        if self._options.get("cprofile"):
            loops = self._options.get("cprofile_loops", 1)
            return self._profiled(lambda: ((tuple(args), kwargs)), fn, loops or iterations, None)
        return fn(*args, **kwargs)

    def _raw_pedantic(
        self,
        target: Callable[..., Any],
        args: Any,
        kwargs: Mapping[str, Any] | None,
        setup: Callable[[], Any] | None,
        teardown: Callable[..., Any] | None,
        rounds: int,
        warmup_rounds: int,
        iterations: int,
    ) -> Any:
        arguments = _arguments_maker(args, kwargs, setup)
        if self.disabled:
            call_args, call_kwargs = arguments()
            return target(*call_args, **call_kwargs)
        plan = FixedRounds(
            target, arguments, teardown, rounds, warmup_rounds, iterations, bool(self._options.get("disable_gc"))
        )
        case, result = self._fixture.measure_rounds(plan, Timer.HOST)
        self._set_stats(case.samples_ms if case is not None else (), iterations)
        if iterations > 1:  # a looped round kept no result: one more call for it
            call_args, call_kwargs = arguments()
            result = target(*call_args, **call_kwargs)
            if teardown is not None:
                teardown(*call_args, **call_kwargs)
        if self._options.get("cprofile"):
            loops = self._options.get("cprofile_loops", 1) or iterations
            self._profiled(arguments, target, loops, teardown)
        return result

    def _set_stats(self, samples_ms: Any, iterations: int) -> None:
        if len(samples_ms):
            self.stats = BenchmarkMetadata(self, [v / 1e3 for v in samples_ms], iterations, self._options)

    def _profiled(
        self,
        arguments: Callable[[], Arguments],
        fn: Callable[..., Any],
        loops: int,
        teardown: Callable[..., Any] | None,
    ) -> Any:
        """pytest-benchmark's cProfile pass, after the timing: `loops` calls under the profiler."""
        import pstats

        profile = cProfile.Profile()
        args, kwargs = arguments()
        result = None
        for _ in range(loops):
            result = profile.runcall(fn, *args, **kwargs)
            if teardown is not None:
                teardown(*args, **kwargs)
        self.cprofile_stats = pstats.Stats(profile)
        if self.stats is not None:
            self.stats.cprofile_stats = self.cprofile_stats
        prefix = str(self._options.get("cprofile_dump") or "")
        if prefix:
            out = Path(f"{prefix}-{_slug(self.name)}.prof")
            out.parent.mkdir(parents=True, exist_ok=True)
            self.cprofile_stats.dump_stats(out)
        return result

    def _cleanup(self) -> None:
        while self._cleanup_callbacks:
            self._cleanup_callbacks.pop()()
        from perfgate.pytest_plugin.arguments import params
        from perfgate.pytest_plugin.fixture import failing_the_test

        with failing_the_test():  # a group or extra_info no history can hold errors the test, in one line
            self._fixture.annotate(self.group, self.extra_info, params(self.params))


def _check_pedantic(setup: Callable[[], Any] | None, rounds: Any, warmup_rounds: Any, iterations: Any) -> None:
    """pytest-benchmark's checks, in its order and with its exceptions."""
    __tracebackhide__ = True
    if not isinstance(iterations, int) or iterations < 1:
        raise ValueError("Must have positive int for `iterations`.")
    if not isinstance(rounds, int) or rounds < 1:
        raise ValueError("Must have positive int for `rounds`.")
    if not isinstance(warmup_rounds, int) or warmup_rounds < 0:
        raise ValueError("Must have positive int for `warmup_rounds`.")
    if iterations > 1 and setup:
        raise ValueError("Can't use more than 1 `iterations` with a `setup` function.")


def _arguments_maker(
    args: Any, kwargs: Mapping[str, Any] | None, setup: Callable[[], Any] | None
) -> Callable[[], Arguments]:
    """Each round's (args, kwargs): the setup's return value when it returns one, else the given ones."""
    given: Arguments = (tuple(args), dict(kwargs or {}))
    has_args = bool(args or kwargs)

    def arguments() -> Arguments:
        if setup is not None:
            made = setup()
            if made:
                if has_args:
                    raise TypeError("Can't use `args` or `kwargs` if `setup` returns the arguments.")
                made_args, made_kwargs = made
                return tuple(made_args), dict(made_kwargs or {})
        return given

    return arguments


def _slug(name: str) -> str:
    for c in r"\/:*?<>| ":
        name = name.replace(c, "_").replace("__", "_")
    return name


class BenchmarkPlugin:
    """Registered by a measuring session: its `benchmark` fixture overrides pytest-benchmark's."""

    def __init__(self, options: BenchmarkOptions) -> None:
        self.options = options
        self.marker_keys: set[str] = set()

    @pytest.fixture
    def benchmark(self, request: pytest.FixtureRequest) -> Iterator[PerfgateBenchmark]:
        from perfgate.pytest_plugin.fixture import fixture_for
        from perfgate.pytest_plugin.session import SESSION_KEY

        if self.options.skip:
            pytest.skip("Benchmarks are skipped (--benchmark-skip was used).")
        marker = marker_settings(request.node)
        self.marker_keys.update(marker)
        fixture = fixture_for(request, request.config.stash.get(SESSION_KEY, None))
        bench = PerfgateBenchmark(fixture, request.node, fixture_options(self.options, marker), self.options.disabled)
        yield bench
        bench._cleanup()

    @pytest.fixture
    def benchmark_weave(self, benchmark: PerfgateBenchmark) -> Callable[..., None]:
        return benchmark.weave

    @pytest.fixture
    def codspeed_benchmark(self, benchmark: PerfgateBenchmark) -> PerfgateBenchmark:
        """pytest-codspeed's name for its fixture (codspeed.py)."""
        return benchmark

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """--benchmark-skip and --benchmark-only, as pytest-benchmark applies them; a test pytest-codspeed
        would measure whole counts as a benchmark (codspeed.py)."""
        from perfgate.pytest_plugin.codspeed import CODSPEED_SUITE, WHOLE_TEST, measured_whole

        skip_bench = pytest.mark.skip(reason="Skipping benchmark (--benchmark-skip active).")
        skip_other = pytest.mark.skip(reason="Skipping non-benchmark (--benchmark-only active).")
        codspeed_suite = config.stash.get(CODSPEED_SUITE, False)
        for item in items:
            whole = measured_whole(item, codspeed_suite)
            if whole:
                item.stash[WHOLE_TEST] = True
            if whole or "benchmark" in getattr(item, "fixturenames", ()):
                if self.options.skip:
                    item.add_marker(skip_bench)
            elif self.options.only:
                item.add_marker(skip_other)

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> bool | None:
        """A test pytest-codspeed would measure whole, measured whole (codspeed.py)."""
        from perfgate.pytest_plugin.codspeed import WHOLE_TEST, run_whole
        from perfgate.pytest_plugin.fixture import failing_the_test, fixture_for
        from perfgate.pytest_plugin.session import SESSION_KEY

        if not pyfuncitem.stash.get(WHOLE_TEST, False):
            return None
        fixture = fixture_for(pyfuncitem._request, pyfuncitem.config.stash.get(SESSION_KEY, None))
        if not run_whole(pyfuncitem, fixture, self.options.disabled):
            return None
        from perfgate.pytest_plugin.arguments import params

        group = marker_settings(pyfuncitem).get("group")
        callspec = getattr(pyfuncitem, "callspec", None)
        with failing_the_test():
            fixture.annotate(group, {}, params(callspec.params if callspec is not None else None))
        return True

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Before the gate's own summary: the one line naming what perfgate did not use."""
        from perfgate.baseline.imported import imported_line
        from perfgate.pytest_plugin.benchmark_cli import mapped_lines
        from perfgate.pytest_plugin.session import SESSION_KEY, Mode

        state = session.config.stash.get(SESSION_KEY, None)
        if state is None or state.mode is not Mode.GATE:
            return
        lines = [ignored_line(self.options.ignored, self.marker_keys), *mapped_lines(dict.fromkeys(self.options.given))]
        state.messages += [line for line in (*lines, imported_line(state.baseline)) if line]
