"""What the pytest hooks do, kept out of the hooks module (__init__.py) so the hooks stay a readable list."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from perfgate.config.settings import Settings, settings_from_config
from perfgate.errors import ConfigError, PerfgateError, one_line
from perfgate.measure.environment import utc_now
from perfgate.measure.processes import MEASURE_CHILD_ENV, PROFILE_CHILD_ENV
from perfgate.model import TestOutcome, UnmeasuredTest
from perfgate.pytest_plugin.session import Mode, PerfgateSession

PERF_FIXTURES = ("perfgate", "benchmark")


def make_session(config: pytest.Config) -> PerfgateSession:
    """Validate everything a gate needs before the first test runs: settings, baseline, history, tools."""
    rootdir = Path(config.rootpath)
    started = utc_now()
    profile_tool = os.environ.get(PROFILE_CHILD_ENV, "")
    if profile_tool:
        return PerfgateSession(Settings(), rootdir, started, Mode.PROFILE_CHILD, profile_tool=profile_tool)
    if not config.getoption("--perfgate"):  # plain pytest: read nothing, check nothing
        return PerfgateSession(Settings(), rootdir, started, Mode.OFF)
    settings = load_settings(config, rootdir)
    state = PerfgateSession(settings, rootdir, started, _mode(config), started_monotonic=time.monotonic())
    if state.mode is Mode.XDIST_WORKER:
        from perfgate.pytest_plugin.xdist import select_worker_gpu

        select_worker_gpu(config)
    if state.mode is Mode.MEASURE_CHILD:
        state.child_output = Path(os.environ[MEASURE_CHILD_ENV])
    if state.mode is Mode.GATE:
        _check_gate_options(config, settings)
    _prepare_environment(state)
    if state.mode is Mode.GATE and settings.store:
        _check_history(settings)
    return state


def _mode(config: pytest.Config) -> Mode:
    if getattr(config, "workerinput", None) is not None:
        return Mode.XDIST_WORKER
    return Mode.MEASURE_CHILD if os.environ.get(MEASURE_CHILD_ENV) else Mode.GATE


def load_settings(config: pytest.Config, rootdir: Path) -> Settings:
    """Settings from the project's `[tool.perfgate]` and the pytest flags given (options.py); paths on the
    command line are relative to where pytest was invoked."""
    from dataclasses import replace

    from perfgate.config.options import pytest_values
    from perfgate.config.project import read_pyproject

    table, pyproject = read_pyproject(rootdir)
    here = Path(config.invocation_params.dir)
    given = {attr: (here / value if isinstance(value, Path) and not value.is_absolute() else value)
             for attr, value in pytest_values(config.getoption).items()}
    settings = settings_from_config(table, where=f"{pyproject} [tool.perfgate]", rootdir=rootdir,
                                    overrides={**given, "enabled": True})
    return replace(settings, pyproject=pyproject if pyproject.is_file() else None)


def _check_gate_options(config: pytest.Config, settings: Settings) -> None:
    from perfgate.pytest_plugin.xdist import check_controller

    if settings.update_baseline and not settings.reason.strip():
        raise ConfigError("perfgate: --perfgate-update-baseline needs --perfgate-reason \"why the baseline changes\"")
    check_controller(config)
    from perfgate.measure.tools import find_tool

    for tool in sorted(settings.profile):  # a missing profiler is one line now, not an error per case later
        find_tool(tool)


def _prepare_environment(state: PerfgateSession) -> None:
    from perfgate.gate.run import resolve_baseline
    from perfgate.measure.environment import current_environment
    from perfgate.measure.gpu_state import open_device
    from perfgate.measure.timer import cuda_available

    use_cuda = cuda_available()
    state.environment = current_environment(use_cuda)
    state.baseline_path, state.baseline, state.facts = resolve_baseline(state.settings, state.environment)
    if use_cuda:
        state.device = open_device(state.environment.device_uuid)


def _check_history(settings: Settings) -> None:
    """A history that cannot be opened fails now, with one line, not after the suite ran."""
    from perfgate.store import open_store

    open_store(settings.db_path).close()


def note_outcome(state: PerfgateSession, item: pytest.Item, report: pytest.TestReport) -> None:
    if not any(f in getattr(item, "fixturenames", ()) for f in PERF_FIXTURES):
        return
    if report.skipped:
        longrepr = report.longrepr
        reason = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""
        reason = reason.removeprefix("Skipped: ")
        state.unmeasured[item.nodeid] = UnmeasuredTest(item.nodeid, TestOutcome.SKIPPED, one_line(reason, 200))
    elif report.failed:
        outcome = TestOutcome.FAILED if report.when == "call" else TestOutcome.ERROR
        crash = getattr(report.longrepr, "reprcrash", None)
        lines = [line for line in report.longreprtext.strip().splitlines() if line.strip()]
        reason = str(getattr(crash, "message", "")) or (lines[-1] if lines else "")
        state.unmeasured[item.nodeid] = UnmeasuredTest(item.nodeid, outcome, one_line(reason, 200))


def register_benchmark_fixture(config: pytest.Config) -> None:
    """Under --perfgate, the `benchmark` fixture is served by perfgate's timers. pytest-benchmark itself
    steps aside for the run (its hooks would refuse a fixture that is not its own, and report twice)."""
    from perfgate.pytest_plugin.benchmark import BenchmarkPlugin

    step_aside_pytest_benchmark(config)
    manager = config.pluginmanager
    if not manager.has_plugin("perfgate-benchmark"):
        manager.register(BenchmarkPlugin(), "perfgate-benchmark")


def step_aside_pytest_benchmark(config: pytest.Config) -> None:
    manager = config.pluginmanager
    pytest_benchmark = manager.get_plugin("benchmark")
    if pytest_benchmark is not None:
        manager.unregister(pytest_benchmark)


def finish(config: pytest.Config, state: PerfgateSession, interrupted: bool, tests_failed: bool) -> int:
    """Hand the measurements on: to the parent (child), the controller (worker) or the gate. Returns the
    exit status the gate asks for (0 = nothing to add)."""
    if state.mode is Mode.MEASURE_CHILD:
        _write_child_output(state)
        return 0
    if state.mode is Mode.XDIST_WORKER:
        from perfgate.pytest_plugin.xdist import send_worker_results

        send_worker_results(config, state)
        return 0
    if interrupted:
        state.messages.append("perfgate: run interrupted before anything was stored; no baseline touched")
        return 0
    state.messages.append(f"perfgate: timing phase took {time.monotonic() - state.started_monotonic:.1f} s "
                          f"({len(state.results)} case(s))")
    try:
        return _gate(config, state, tests_failed)
    except PerfgateError as err:
        state.error = str(err)
        return int(pytest.ExitCode.USAGE_ERROR)


def _gate(config: pytest.Config, state: PerfgateSession, tests_failed: bool) -> int:
    from perfgate.gate.run import GateRequest, build_run, run_gate

    assert state.environment is not None and state.baseline_path is not None  # set when the gate is enabled
    profile_settings = _profile(state)
    run = build_run(state.results.values(), state.unmeasured.values(), state.environment, state.rootdir,
                    state.started_at, profile_settings)
    outcome = run_gate(GateRequest(run=run, settings=state.settings, baseline=state.baseline,
                                   baseline_path=state.baseline_path, facts=state.facts,
                                   confirmer=_confirmer(state), may_write_baseline=not tests_failed))
    state.gate, state.run_id = outcome.gate, outcome.run.run_id
    state.messages += outcome.messages
    return outcome.exit_code


def _profile(state: PerfgateSession) -> str:
    """Run the profilers over the measured cases (their metrics join the cases); the settings line."""
    if not state.settings.profile or not state.results:
        return ""
    from perfgate.measure.profiling import profile_cases

    profiled = profile_cases(state.results, state.settings, state.rootdir)
    state.results = profiled.results
    state.messages += profiled.messages
    return profiled.settings_line


def _confirmer(state: PerfgateSession) -> Any:
    from perfgate.measure.processes import ChildRunner

    return ChildRunner(state.rootdir, state.settings, state.baseline_path).confirmer(state.results)


def _write_child_output(state: PerfgateSession) -> None:
    from perfgate.codec import case_to_dict, unmeasured_to_dict
    from perfgate.report.publish import write_text

    assert state.child_output is not None
    doc = {"results": [case_to_dict(r) for r in state.results.values()],
           "unmeasured": [unmeasured_to_dict(u) for u in state.unmeasured.values()],
           "environment": state.environment.__dict__ if state.environment else None}
    write_text(state.child_output, json.dumps(doc, allow_nan=False))


def summary_lines(state: PerfgateSession) -> list[str]:
    from perfgate.report.terminal import render_terminal

    lines = list(state.messages)
    if state.error:
        return lines + [state.error]
    if state.gate is not None:
        lines += render_terminal(state.gate)
    return lines
