"""pytest hooks and the `perfgate` fixture, in the order pytest calls them. Thin: the work is in the library
(plugin_setup.py for what the hooks do, gate.py for the orchestration the CLI shares)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from perfgate.errors import PerfgateError
from perfgate.session import Mode, PerfgateSession

SESSION_KEY = pytest.StashKey[PerfgateSession]()


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("perfgate", "performance gate for GPU kernels")
    g.addoption("--perfgate", action="store_true", help="measure perf cases, store the run, gate on baselines")
    g.addoption("--perfgate-strict", action="store_true", default=None,
                help="fail closed: no case measured, a baseline case skipped, not comparable, profile failed, "
                     "host clock against a CUDA baseline each fail the gate")
    g.addoption("--perfgate-db", type=Path, help="history database (default .perfgate/history.db, or $PERFGATE_DB)")
    g.addoption("--perfgate-baseline-dir", type=Path, help="directory of committed baselines (default baselines/)")
    g.addoption("--perfgate-baseline-file", type=Path, help="compare with this baseline file instead (must exist)")
    g.addoption("--perfgate-update-baseline", action="store_true", default=None,
                help="write the baseline from this run (uncalibrated; see perfgate calibrate)")
    g.addoption("--perfgate-reason", help="why the baseline changes (required with --perfgate-update-baseline)")
    g.addoption("--perfgate-summary", type=Path, help="write the Markdown summary here")
    g.addoption("--perfgate-json", type=Path, help="write the JSON results here")
    g.addoption("--perfgate-report-dir", type=Path, help="write charts (PNG) here")
    g.addoption("--perfgate-benchmark-json", type=Path,
                help="write github-action-benchmark customSmallerIsBetter JSON here")
    g.addoption("--perfgate-profile", help="also run the cases under profilers: nsys, ncu or nsys,ncu")
    g.addoption("--perfgate-allow-env-mismatch", action="store_true", default=None,
                help="compare even when the baseline was measured on another device model")
    g.addoption("--perfgate-no-store", action="store_true",
                help="write nothing: no history, no initial baseline (outputs named by an option still are)")
    g.addoption("--perfgate-pin-autotune", action="store_true", default=None,
                help="hold Triton autotuners to the configs the baseline recorded")
    g.addoption("--perfgate-confirm-runs", type=int, help="fresh processes that may re-measure a suspect case")
    g.addoption("--perfgate-publish-host", action="store_true", default=None,
                help="keep the hostname and absolute paths in published outputs")
    g.addoption("--perfgate-chart-url", help="base URL the charts are published at (links in a job summary)")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    # pytest-benchmark steps aside before its own pytest_configure runs: once configured it has already
    # warned "Benchmarks are automatically disabled because xdist plugin is active" in every -n log
    import os

    from perfgate.session import PROFILE_CHILD_ENV

    if config.getoption("--perfgate") or os.environ.get(PROFILE_CHILD_ENV):
        from perfgate.plugin_setup import step_aside_pytest_benchmark

        step_aside_pytest_benchmark(config)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "perfgate(**options): perfgate options for this test's cases "
                            "(threshold_pct, metrics={name: pct}, min_speedup, warmup_ms, min_samples, "
                            "max_samples, budget_ms, cooldown_max_ms, exclude_throttled, memory)")
    from perfgate.plugin_setup import make_session, register_benchmark_fixture

    try:
        state = make_session(config)
    except PerfgateError as err:
        raise pytest.UsageError(str(err)) from err
    config.stash[SESSION_KEY] = state
    if state.measuring or state.mode is Mode.PROFILE_CHILD:
        register_benchmark_fixture(config)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist controller: give each worker its own GPU."""
    from perfgate.xdist import assign_gpu

    state = node.config.stash.get(SESSION_KEY, None)
    if state is not None and state.measuring:
        assign_gpu(node)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Skipped, failed and errored perf tests: strict mode must know a baseline case went unmeasured."""
    outcome = yield
    state = item.config.stash.get(SESSION_KEY, None)
    if state is not None and state.measuring:
        from perfgate.plugin_setup import note_outcome

        note_outcome(state, item, outcome.get_result())


@pytest.fixture
def perfgate(request: pytest.FixtureRequest) -> Any:
    """Measure a callable: `perfgate(fn, *args, **kwargs)` -> TimingStats."""
    from perfgate.plugin_setup import fixture_for

    return fixture_for(request, request.config.stash.get(SESSION_KEY, None))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist controller: a worker finished; take its measurements into the one run."""
    from perfgate.xdist import receive_worker_results

    state = node.config.stash.get(SESSION_KEY, None)
    if state is not None and state.measuring:
        receive_worker_results(state, node, error)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(SESSION_KEY, None)
    if state is None or not state.measuring:
        return
    from perfgate.plugin_setup import finish

    code = finish(session.config, state, interrupted=exitstatus == pytest.ExitCode.INTERRUPTED,
                  tests_failed=exitstatus != 0)
    if code and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = code


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(SESSION_KEY, None)
    if state is None or (not state.messages and state.gate is None and not state.error):
        return
    from perfgate.plugin_setup import summary_lines

    terminalreporter.section("perfgate")
    for line in summary_lines(state):
        terminalreporter.write_line(line)
