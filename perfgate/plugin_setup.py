"""What the pytest hooks do, kept out of plugin.py so the hooks stay a readable list."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from perfgate.errors import ConfigError, PerfgateError
from perfgate.session import PerfgateSession
from perfgate.settings import MarkerOptions, Settings, marker_options, read_pyproject, settings_from_config


def make_session(config: pytest.Config, child_tool: str) -> PerfgateSession:
    """Settings from pyproject + options; with the gate on, fingerprint and validate the baseline now,
    so a malformed baseline fails in a second, not after the whole suite ran."""
    from perfgate.pipeline import utc_now

    rootdir = Path(config.rootpath)
    opt = config.getoption
    enabled = bool(opt("--perfgate")) and not child_tool
    if not enabled:  # plain pytest (or a profiling child): read nothing, check nothing
        return PerfgateSession(settings=Settings(), rootdir=rootdir, started_at=utc_now(), child_tool=child_tool)
    if _under_xdist(config):
        raise ConfigError("perfgate: --perfgate under pytest-xdist (-n) is not supported yet: parallel cases would "
                          "share the GPU and skew each other's timings; run the perf suite without -n")
    if opt("--perfgate-update-baseline") and not opt("--perfgate-reason"):
        raise ConfigError("perfgate: --perfgate-update-baseline needs --perfgate-reason \"why the baseline changes\"")
    settings = settings_from_config(
        read_pyproject(rootdir), enabled=enabled, db_path=opt("--perfgate-db"),
        baseline_dir=opt("--perfgate-baseline-dir"), baseline_file=opt("--perfgate-baseline-file"),
        update_baseline=bool(opt("--perfgate-update-baseline")), reason=opt("--perfgate-reason") or "",
        summary_path=opt("--perfgate-summary"), json_path=opt("--perfgate-json"),
        report_dir=opt("--perfgate-report-dir"), profile=opt("--perfgate-profile"),
        allow_env_mismatch=opt("--perfgate-allow-env-mismatch"),
        store=False if opt("--perfgate-no-store") else None)
    settings = _rooted(settings, rootdir)
    session = PerfgateSession(settings=settings, rootdir=rootdir, started_at=utc_now(),
                              started_monotonic=time.monotonic(), child_tool=child_tool)
    if enabled:
        _check_profilers(settings.profile)
        _attach_environment(session)
    return session


def _under_xdist(config: pytest.Config) -> bool:
    """A worker, or a controller about to start workers (one GPU per worker is a later feature)."""
    if getattr(config, "workerinput", None) is not None:
        return True
    return bool(config.pluginmanager.hasplugin("xdist") and config.getoption("numprocesses", None))


def _check_profilers(tools: frozenset[str]) -> None:
    """A missing profiler is one clear line before anything runs, not an error per case at the end."""
    from perfgate.measure.tools import find_tool

    for tool in sorted(tools):
        find_tool(tool)


def _rooted(settings: Any, rootdir: Path) -> Any:
    """Relative paths from pyproject are relative to the project root, not the current directory."""
    from dataclasses import replace

    def fix(p: Path | None) -> Path | None:
        return p if p is None or p.is_absolute() else rootdir / p

    return replace(settings, db_path=fix(settings.db_path), baseline_dir=fix(settings.baseline_dir))


def _attach_environment(session: PerfgateSession) -> None:
    from perfgate.baseline import baseline_path, load_baseline
    from perfgate.measure.environment import current_environment
    from perfgate.measure.timer import cuda_available

    session.environment = current_environment(cuda_available())
    s = session.settings
    session.baseline_path = s.baseline_file or baseline_path(s.baseline_dir, session.environment)
    session.baseline = load_baseline(session.baseline_path)


def marker_for(node: pytest.Item) -> MarkerOptions | None:
    """Closest `perfgate` marker wins (function over class over module)."""
    mark = node.get_closest_marker("perfgate")
    if mark is None:
        return None
    if mark.args:
        raise ConfigError(f"perfgate: {node.nodeid}: the perfgate marker takes keyword arguments only")
    return marker_options(dict(mark.kwargs), node.nodeid)


def finish(state: PerfgateSession, interrupted: bool, tests_failed: bool) -> int:
    """Profile, store, gate, write. Returns the exit status the gate asks for (0 = nothing to add)."""
    from perfgate.compare import compare_run
    from perfgate.pipeline import build_run, maybe_write_baseline, store_run, write_outputs

    if interrupted:
        state.messages.append("perfgate: run interrupted; nothing stored, no baseline touched")
        return 0
    if not state.results:
        state.messages.append("perfgate: no perf cases were measured")
        return 0
    state.messages.append(f"perfgate: timing phase took {time.monotonic() - state.started_monotonic:.1f} s "
                          f"({len(state.results)} case(s))")
    try:
        profile_settings = _profile(state)
        run = build_run(state, profile_settings)
        if state.settings.store:
            run = store_run(run, state.settings.db_path)
            state.run_id = run.run_id
            state.messages.append(f"perfgate: stored run {run.run_id} in {state.settings.db_path}")
        state.gate = compare_run(run.results, state.baseline, run.environment, state.settings, state.markers)
        write_outputs(state.gate, run, state.settings, _charts(state, run))
        if not tests_failed:  # never accept a baseline from a run whose tests failed
            line = maybe_write_baseline(run, state.baseline, state.baseline_path, state.settings)
            if line:
                state.messages.append(line)
    except PerfgateError as err:
        state.error = str(err)
        return int(pytest.ExitCode.USAGE_ERROR)
    return 1 if state.gate.failed and not state.settings.update_baseline else 0


def _profile(state: PerfgateSession) -> str:
    if not state.settings.profile:
        return ""
    from perfgate.measure.profile import profile_session

    return profile_session(state)


def _charts(state: PerfgateSession, run: Any) -> tuple[str, ...]:
    if state.settings.report_dir is None:
        return ()
    from perfgate.report.gate_charts import write_gate_charts

    assert state.gate is not None
    if not (state.settings.store and state.settings.db_path.exists()):
        return write_gate_charts(state.gate, run, state.settings, state.baseline)
    from perfgate.store import open_store

    store = open_store(state.settings.db_path)  # once for every trend chart, not once per case
    try:
        return write_gate_charts(state.gate, run, state.settings, state.baseline,
                                 lambda case_id: store.history(case_id, run.environment.device_name))
    finally:
        store.close()


def summary_lines(state: PerfgateSession) -> list[str]:
    from perfgate.report.terminal import render_terminal

    lines = list(state.messages)
    if state.error:
        return lines + [state.error]
    if state.gate is not None:
        lines += render_terminal(state.gate)
    return lines
