"""pytest-codspeed suites under `--perfgate`: its `benchmark` fixture (`benchmark(fn, *args)`,
`benchmark.pedantic(...)`, `benchmark.extra_info`; also requested as `codspeed_benchmark`) is served by the
pytest-benchmark-compatible fixture (benchmark.py), and a test it would measure whole (marked
`@pytest.mark.benchmark` / `codspeed_benchmark`, not using the fixture) is measured whole: perfgate calls
the test function, with its fixtures set up once, as often as its sampling needs, as pytest-codspeed's
walltime mode does.

pytest-codspeed steps aside for the run, as pytest-benchmark does (runtime.py): one tool measures. A bare
`@pytest.mark.benchmark` means "measure this whole test" only in a suite pytest-codspeed serves (the plugin
is installed): under pytest-benchmark the same marker only carries settings for the fixture, and a test
that does not use the fixture is no benchmark there.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

CODSPEED_PLUGINS = ("codspeed", "pytest_codspeed.plugin", "codspeed_plugin")
WHOLE_TEST = pytest.StashKey[bool]()
CODSPEED_SUITE = pytest.StashKey[bool]()  # pytest-codspeed was loaded and stepped aside
BENCHMARK_FIXTURES = ("benchmark", "codspeed_benchmark", "perfgate")


def step_aside_codspeed(config: pytest.Config) -> None:
    manager = config.pluginmanager
    for name in CODSPEED_PLUGINS:
        plugin = manager.get_plugin(name)
        if plugin is not None:
            manager.unregister(plugin)
            config.stash[CODSPEED_SUITE] = True


def measured_whole(item: pytest.Item, codspeed_suite: bool) -> bool:
    """pytest-codspeed's rule for a test measured whole: its marker, and no benchmark fixture."""
    if any(f in getattr(item, "fixturenames", ()) for f in BENCHMARK_FIXTURES):
        return False
    if item.get_closest_marker("codspeed_benchmark") is not None:
        return True
    return codspeed_suite and item.get_closest_marker("benchmark") is not None


def run_whole(item: pytest.Function, fixture: Any, disabled: bool) -> bool:
    """pytest_pyfunc_call for a test measured whole: True when it ran here (a coroutine test is left to
    the plugin that runs it, unmeasured, as pytest-codspeed leaves it)."""
    function = item.obj
    if inspect.iscoroutinefunction(function):
        return False
    kwargs = {name: item.funcargs[name] for name in item._fixtureinfo.argnames}
    if disabled:
        function(**kwargs)
        return True
    from perfgate.model import Timer

    fixture.measure(function, (), kwargs, timer=Timer.HOST)
    return True
