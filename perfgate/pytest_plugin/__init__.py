"""The pytest plugin (entry point `pytest11: perfgate`): hooks and the `perfgate` fixture, in the order pytest
calls them. Thin: configure.py and runtime.py do what the hooks ask, session.py holds the run's state,
fixture.py and benchmark.py serve the fixtures, xdist.py spreads workers over GPUs; the verdict is the
library's (perfgate.gate.run, shared with the command line)."""

from __future__ import annotations

from typing import Any

import pytest

from perfgate.errors import PerfgateError
from perfgate.pytest_plugin.session import SESSION_KEY, Mode


def pytest_addoption(parser: pytest.Parser) -> None:
    from perfgate.config.options import add_pytest_options

    add_pytest_options(parser.getgroup("perfgate", "performance gate for GPU kernels").addoption)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser) -> None:
    """Before any conftest is imported: a measurement child takes its order (and the variable naming it) out of
    the environment, so no conftest or test can tell a confirmation process by it (measure/handshake.py).
    The plugins loaded by entry point or -p are registered by now: pytest-benchmark's flags are declared
    here unless it declared them (benchmark_cli.py)."""
    from perfgate.pytest_plugin.benchmark_cli import declare_when_absent
    from perfgate.pytest_plugin.configure import take_child_order

    take_child_order(early_config)
    declare_when_absent(early_config, parser)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    # pytest-benchmark steps aside before its own pytest_configure runs: once configured it has already
    # warned "Benchmarks are automatically disabled because xdist plugin is active" in every -n log
    import os

    from perfgate.measure.processes import PROFILE_CHILD_ENV

    if config.getoption("--perfgate") or os.environ.get(PROFILE_CHILD_ENV):
        from perfgate.pytest_plugin.configure import step_aside_pytest_benchmark

        step_aside_pytest_benchmark(config)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "perfgate(**options): perfgate options for this test's cases "
        "(threshold_pct, metrics={name: pct}, min_speedup, gated_measure, host_timer, warmup_ms, min_samples, "
        "max_samples, budget_ms, cooldown_max_ms, exclude_throttled, flush_l2, move_inputs, memory)",
    )
    # pytest-benchmark, stepped aside, registers no marker: a --strict-markers suite must still collect
    config.addinivalue_line("markers", "benchmark: mark a test with custom benchmark settings.")
    from perfgate.pytest_plugin.configure import make_session, register_benchmark_fixture

    try:
        state = make_session(config)
    except PerfgateError as err:
        raise pytest.UsageError(str(err)) from err
    config.stash[SESSION_KEY] = state
    if state.measuring or state.mode is Mode.PROFILE_CHILD:
        from perfgate.pytest_plugin.forks import watch_forks

        watch_forks()  # a child forked inside a measured call never carries on measuring
        register_benchmark_fixture(config)
    if state.mode in (Mode.AB, Mode.AB_WORKER):
        from perfgate.pytest_plugin.ab import register_ab_plugin

        register_ab_plugin(config, state)
    if state.mode is Mode.GATE:
        from perfgate.pytest_plugin.exit_guard import ExitGuard

        capture = config.pluginmanager.get_plugin("capturemanager")
        state.exit_guard = ExitGuard()
        state.exit_guard.install(capture.suspend_global_capture if capture is not None else None)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist controller: give each worker its own GPU."""
    from perfgate.pytest_plugin.xdist import assign_gpu

    state = node.config.stash.get(SESSION_KEY, None)
    if state is not None and state.measuring:
        assign_gpu(node)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A bad marker argument is bad configuration: one line and exit 4 before any test runs."""
    state = config.stash.get(SESSION_KEY, None)
    if state is not None and state.measuring:
        from perfgate.pytest_plugin.fixture import check_markers

        check_markers(items, state.settings)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Skipped, failed and errored perf tests: strict mode must know a baseline case went unmeasured."""
    outcome = yield
    state = item.config.stash.get(SESSION_KEY, None)
    if state is not None and state.measuring:
        from perfgate.pytest_plugin.runtime import note_outcome

        note_outcome(state, item, outcome.get_result())


@pytest.fixture
def perfgate(request: pytest.FixtureRequest) -> Any:
    """Measure a callable: `perfgate(fn, *args, **kwargs)` -> TimingStats."""
    from perfgate.pytest_plugin.fixture import fixture_for

    return fixture_for(request, request.config.stash.get(SESSION_KEY, None))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist controller: a worker finished; take its measurements into the one run."""
    from perfgate.pytest_plugin.xdist import receive_worker_results

    state = node.config.stash.get(SESSION_KEY, None)
    if state is not None and state.measuring:
        receive_worker_results(state, node, error)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(SESSION_KEY, None)
    if state is None and session.config.getoption("--perfgate") and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR  # ended before perfgate was configured: no verdict
    if state is None or not state.measuring or not state.owns_process:  # a test's forked child finishes nothing
        return
    from perfgate.pytest_plugin.runtime import finish

    code = finish(session.config, state, int(exitstatus))
    state.pytest_session = session
    if code:
        state.exit_code = state.exit_code or code
    if code and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = code


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """After pytest's own "N passed" line: a failed gate's verdict is the last line, in red. Last of every
    plugin's: a later hook that reset the exit status to 0 does not turn a failed gate green."""
    state = config.stash.get(SESSION_KEY, None)
    if state is None or not state.owns_process:
        return
    if state.exit_guard is not None:
        state.exit_guard.remove()
    session = state.pytest_session
    if state.exit_code and session is not None and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = state.exit_code
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or not (state.exit_code or state.error):
        return
    from perfgate.pytest_plugin.runtime import last_line

    reporter.write_line(last_line(state), red=True, bold=True)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(SESSION_KEY, None)
    if state is None or not state.owns_process or (not state.messages and not state.terminal and not state.error):
        return
    from perfgate.pytest_plugin.runtime import summary_lines

    terminalreporter.section("perfgate")
    for line in summary_lines(state):
        terminalreporter.write_line(line)
