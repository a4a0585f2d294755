"""pytest hooks and the `perfgate` fixture, in the order pytest calls them. Thin: the work is in the library."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from perfgate.errors import PerfgateError
from perfgate.session import CHILD_ENV, PerfgateSession

SESSION_KEY = pytest.StashKey[PerfgateSession]()


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("perfgate", "performance gate for GPU kernels")
    g.addoption("--perfgate", action="store_true", help="measure perf cases, store the run, gate on baselines")
    g.addoption("--perfgate-db", type=Path, help="history database (default .perfgate/history.db)")
    g.addoption("--perfgate-baseline-dir", type=Path, help="directory of committed baselines (default baselines/)")
    g.addoption("--perfgate-baseline-file", type=Path, help="compare with this baseline file instead")
    g.addoption("--perfgate-update-baseline", action="store_true", help="write the baseline from this run")
    g.addoption("--perfgate-reason", help="why the baseline changes (required with --perfgate-update-baseline)")
    g.addoption("--perfgate-summary", type=Path, help="write the Markdown summary here")
    g.addoption("--perfgate-json", type=Path, help="write the JSON results here")
    g.addoption("--perfgate-report-dir", type=Path, help="write charts (PNG) here")
    g.addoption("--perfgate-profile", help="also run the cases under profilers: nsys, ncu or nsys,ncu")
    g.addoption("--perfgate-allow-env-mismatch", action="store_true", default=None,
                help="compare even when the baseline was measured on another device model")
    g.addoption("--perfgate-no-store", action="store_true", help="do not write the run to the history")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "perfgate(**options): perfgate options for this test's cases "
                            "(threshold_pct, metrics={name: pct}, warmup_ms, min_samples, max_samples, budget_ms)")
    from perfgate.plugin_setup import make_session

    try:
        config.stash[SESSION_KEY] = make_session(config, os.environ.get(CHILD_ENV, ""))
    except PerfgateError as err:
        raise pytest.UsageError(str(err)) from err


@pytest.fixture
def perfgate(request: pytest.FixtureRequest):
    """Measure a callable: `perfgate(fn, *args, **kwargs)` -> TimingStats."""
    from perfgate.fixture import PerfgateFixture
    from perfgate.plugin_setup import marker_for

    session = request.config.stash.get(SESSION_KEY, None)
    try:
        marker = marker_for(request.node)
    except PerfgateError as err:
        pytest.fail(str(err), pytrace=False)
    return PerfgateFixture(session, request.node.nodeid, marker)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(SESSION_KEY, None)
    if state is None or not state.settings.enabled or state.child_tool:
        return
    from perfgate.plugin_setup import finish

    code = finish(state, interrupted=exitstatus == pytest.ExitCode.INTERRUPTED, tests_failed=exitstatus != 0)
    if code and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = code


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(SESSION_KEY, None)
    if state is None or not state.settings.enabled or state.child_tool:
        return
    from perfgate.plugin_setup import summary_lines

    terminalreporter.section("perfgate")
    try:
        lines = summary_lines(state)
    except Exception as err:  # a rendering bug must not turn a finished run into a traceback
        lines = [f"perfgate: could not render the summary ({type(err).__name__}: {err}); "
                 f"the run and its verdicts are stored"]
    for line in lines:
        terminalreporter.write_line(line)
