"""pytest-benchmark suites, gated unchanged: under `--perfgate` the `benchmark` fixture is served by
perfgate's timers (CUDA events on a GPU) and each test becomes a gated case; without `--perfgate`
pytest-benchmark is untouched (this plugin is only registered by a measuring session).

Supported: `benchmark(fn, *args, **kwargs)` and `benchmark.pedantic(target, args, kwargs, setup=...,
rounds=..., warmup_rounds=..., iterations=...)`, both returning the function's result; `extra_info`,
`group`, `name` and a `stats` object with pytest-benchmark's field names (seconds).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from perfgate.model import TimingStats


class BenchmarkStats:
    """pytest-benchmark's `benchmark.stats.stats.<field>` (seconds), read from perfgate's TimingStats."""

    def __init__(self, t: TimingStats) -> None:
        self.min, self.max, self.mean = t.min_ms / 1e3, t.max_ms / 1e3, t.mean_ms / 1e3
        self.median, self.stddev = t.median_ms / 1e3, t.stdev_ms / 1e3
        self.q1, self.q3, self.iqr = t.q1_ms / 1e3, t.q3_ms / 1e3, t.iqr_ms / 1e3
        self.rounds = t.n_samples
        self.stats = self  # `benchmark.stats.stats.mean`, as pytest-benchmark nests it

    def __getitem__(self, key: str) -> float:
        return float(getattr(self, key))


class PerfgateBenchmark:
    def __init__(self, fixture: Any, name: str, fullname: str) -> None:
        self._fixture = fixture
        self.name = name
        self.fullname = fullname
        self.group: str | None = None
        self.extra_info: dict[str, Any] = {}
        self.stats: BenchmarkStats | None = None
        self.disabled = False
        self._used = False

    def __call__(self, function_to_benchmark: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return self._run(function_to_benchmark, args, kwargs)

    def pedantic(self, target: Callable[..., Any], args: tuple[Any, ...] = (), kwargs: Mapping[str, Any] | None = None,
                 setup: Callable[[], Any] | None = None, teardown: Callable[..., Any] | None = None,
                 rounds: int = 1, warmup_rounds: int = 0, iterations: int = 1) -> Any:
        if iterations < 1 or rounds < 1 or warmup_rounds < 0:
            raise ValueError("benchmark.pedantic: rounds and iterations must be >= 1, warmup_rounds >= 0")
        if setup is not None and (args or kwargs):
            raise TypeError("benchmark.pedantic: can't use `args` or `kwargs` if `setup` is given")
        return self._run(target, args, dict(kwargs or {}), setup, teardown, rounds, warmup_rounds, iterations)

    def _run(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any],
             setup: Callable[[], Any] | None = None, teardown: Callable[..., Any] | None = None,
             rounds: int | None = None, warmup_rounds: int = 0, iterations: int = 1) -> Any:
        if self._used:
            raise pytest.UsageError(f"{self.fullname}: the benchmark fixture can only be used once per test")
        self._used = True
        box = _Call(fn, args, dict(kwargs), setup, teardown, iterations)
        stats = self._fixture.measure_benchmark(box, rounds=rounds, warmup_rounds=warmup_rounds,
                                                iterations=iterations)
        self.stats = BenchmarkStats(stats)
        return box.result


class _Call:
    """The benchmarked call; `prepare` runs the user's setup outside the timed region."""

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                 setup: Callable[[], Any] | None, teardown: Callable[..., Any] | None, iterations: int) -> None:
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.setup, self.teardown, self.iterations = setup, teardown, iterations
        self.result: Any = None

    def prepare(self) -> None:
        if self.setup is None:
            return
        made = self.setup()
        if made is not None:
            self.args, self.kwargs = tuple(made[0]), dict(made[1] or {})

    def __call__(self) -> Any:
        for _ in range(self.iterations):
            self.result = self.fn(*self.args, **self.kwargs)
        if self.teardown is not None:
            self.teardown(*self.args, **self.kwargs)
        return self.result


class BenchmarkPlugin:
    """Registered by a measuring session: its `benchmark` fixture overrides pytest-benchmark's."""

    @pytest.fixture
    def benchmark(self, request: pytest.FixtureRequest) -> PerfgateBenchmark:
        from perfgate.pytest_plugin.fixture import fixture_for
        from perfgate.pytest_plugin.session import SESSION_KEY

        fixture = fixture_for(request, request.config.stash.get(SESSION_KEY, None))
        return PerfgateBenchmark(fixture, request.node.name, request.node.nodeid)
