"""What pytest_configure (and the hooks before it) do: the run's session object, with everything a gate
needs validated before the first test runs (settings, baseline, history, tools, the base ref's files), and
pytest-benchmark or pytest-codspeed stepped aside for a measuring run."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from perfgate.config.settings import Settings, settings_from_config
from perfgate.errors import ConfigError
from perfgate.measure.environment import utc_now
from perfgate.measure.phases import process_age_s
from perfgate.measure.processes import PROFILE_CHILD_ENV
from perfgate.pytest_plugin.session import ORDER_KEY, Mode, PerfgateSession


def take_child_order(config: pytest.Config) -> None:
    """Before any conftest is imported: a measurement child's order out of the environment, into the stash."""
    from perfgate.measure.handshake import HandshakeRefused, accept

    try:
        config.stash[ORDER_KEY] = accept(os.environ)
    except HandshakeRefused as err:
        config.stash[ORDER_KEY] = err


def make_session(config: pytest.Config) -> PerfgateSession:
    """Validate everything a gate needs before the first test runs: settings, baseline, history, tools."""
    from perfgate.measure.handshake import ChildOrder

    rootdir = Path(config.rootpath)
    started = utc_now()
    profile_tool = os.environ.get(PROFILE_CHILD_ENV, "")
    if profile_tool:
        return _profile_child_session(config, rootdir, started, profile_tool)
    _check_flags_kept(config)
    if not config.getoption("--perfgate") and not config.getoption("--perfgate-base"):
        return _plain_session(config, rootdir, started)
    order = config.stash.get(ORDER_KEY, None)
    if isinstance(order, ConfigError):
        raise order
    from perfgate.pytest_plugin.rootdir import project_root

    root = project_root(config)
    settings = load_settings(config, root.path)
    state = PerfgateSession(
        settings,
        root.path,
        started,
        _mode(config, order),
        started_monotonic=time.monotonic(),
        before_s=process_age_s(),
        nodeid_prefix=root.nodeid_prefix,
    )
    if root.warning:
        state.messages.append(root.warning)
    if state.mode is Mode.AB:
        return _ab_session(state, config)
    if state.mode is Mode.XDIST_WORKER:
        from perfgate.pytest_plugin.xdist import select_worker_gpu

        select_worker_gpu(config)
    if isinstance(order, ChildOrder) and state.mode is Mode.MEASURE_CHILD:
        state.child_output, state.child_nonce = order.output, order.nonce
    if state.mode is Mode.GATE:
        _check_gate_options(config, settings)
    _prepare_environment(state)
    if state.mode is Mode.GATE:
        _seed_from_pytest_benchmark(state, config)
        _check_against_base(state, config)
        if settings.store:
            _check_history(settings)
    return state


def _profile_child_session(config: pytest.Config, rootdir: Path, started: str, tool: str) -> PerfgateSession:
    """A profiler's child (measure/profiling.py runs it under nsys or ncu): it measures, never gates."""
    if on_command_line(config, "--perfgate"):  # a profiler's child never is a gate (profiling.child_command)
        raise ConfigError(
            f"perfgate: {PROFILE_CHILD_ENV} is set on a `pytest --perfgate` run: a gate is never "
            f"a profiler's child; unset {PROFILE_CHILD_ENV}"
        )
    from perfgate.measure.profiler_registry import profiler_named

    return PerfgateSession(Settings(), rootdir, started, Mode.PROFILE_CHILD, profile_child=profiler_named(tool).child)


def _plain_session(config: pytest.Config, rootdir: Path, started: str) -> PerfgateSession:
    """Plain pytest: read nothing, check nothing (but a pytest-benchmark flag that would do nothing)."""
    from perfgate.pytest_plugin.benchmark_cli import check_plain_run
    from perfgate.pytest_plugin.benchmark_options import given_options, pytest_arguments

    given = given_options(pytest_arguments(config))
    check_plain_run(config, tuple(g for g in given if g.startswith("--benchmark-")))
    return PerfgateSession(Settings(), rootdir, started, Mode.OFF)


def _ab_session(state: PerfgateSession, config: pytest.Config) -> PerfgateSession:
    if state.settings.update_baseline:
        raise ConfigError(
            "perfgate: --perfgate-base compares with a base commit; it writes no baseline "
            "(drop --perfgate-update-baseline)"
        )
    if state.settings.store:
        _check_history(state.settings)
    _check_against_base(state, config)
    return state


def _mode(config: pytest.Config, order: object) -> Mode:
    from perfgate.ab.protocol import WORKER_ENV

    if os.environ.get(WORKER_ENV):
        return Mode.AB_WORKER
    if config.getoption("--perfgate-base"):
        return Mode.AB
    if getattr(config, "workerinput", None) is not None:
        return Mode.XDIST_WORKER
    return Mode.MEASURE_CHILD if order is not None else Mode.GATE


def _check_flags_kept(config: pytest.Config) -> None:
    """A switch given on pytest's command line is still on: a conftest that sets `config.option.perfgate =
    False` (or turns --perfgate-strict off) before perfgate configures must not make the gate a plain run."""
    from perfgate.config.options import OPTIONS, Arg

    for opt in OPTIONS:
        if opt.flag and opt.arg is Arg.FLAG and on_command_line(config, opt.flag) and not config.getoption(opt.flag):
            raise ConfigError(
                f"perfgate: {opt.flag} was given on the command line but is off by the time perfgate "
                f"configures: a conftest or plugin changed it"
            )


def on_command_line(config: pytest.Config, flag: str) -> bool:
    """Whether `flag` was on pytest's own command line (or pytest.main's arguments): addopts and
    PYTEST_ADDOPTS, which a project's files and CI's environment supply, are not part of it."""
    return any(a == flag or a.startswith(flag + "=") for a in map(str, config.invocation_params.args))


def load_settings(config: pytest.Config, rootdir: Path) -> Settings:
    """Settings from the project's `[tool.perfgate]` and the pytest flags given (options.py); paths on the
    command line are relative to where pytest was invoked."""
    from dataclasses import replace

    from perfgate.config.options import pytest_values
    from perfgate.config.project import read_pyproject

    table, pyproject = read_pyproject(rootdir)
    here = Path(config.invocation_params.dir)
    given = {
        attr: (here / value if isinstance(value, Path) and not value.is_absolute() else value)
        for attr, value in pytest_values(config.getoption).items()
    }
    from perfgate.pytest_plugin.benchmark_cli import settings_values

    given.update(settings_values(config.getoption, rootdir, here))
    settings = settings_from_config(
        table, where=f"{pyproject} [tool.perfgate]", rootdir=rootdir, overrides={**given, "enabled": True}
    )
    return replace(settings, pyproject=pyproject if pyproject.is_file() else None)


def _check_gate_options(config: pytest.Config, settings: Settings) -> None:
    from perfgate.config.options import command_line_only_flags
    from perfgate.pytest_plugin.xdist import check_controller

    for flag in command_line_only_flags().values():
        if config.getoption(flag) is not None and not on_command_line(config, flag):
            raise ConfigError(
                f"perfgate: {flag} is not on pytest's own command line (addopts, PYTEST_ADDOPTS or a "
                f"plugin set it): it is taken only from there, so a project's files cannot switch a "
                f"gate's checks"
            )
    if settings.update_baseline and not settings.reason.strip():
        raise ConfigError('perfgate: --perfgate-update-baseline needs --perfgate-reason "why the baseline changes"')
    check_controller(config)
    from perfgate.measure.profiler_registry import profilers_named
    from perfgate.measure.tools import find_tool

    for profiler in profilers_named(settings.profile):  # a missing one is one line now, not an error per case later
        find_tool(profiler.executable, profiler.install_hint)


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


def _seed_from_pytest_benchmark(state: PerfgateSession, config: pytest.Config) -> None:
    """`--benchmark-compare[=NUM]` and no baseline for this machine yet: the saved run seeds it, imported."""
    from perfgate.pytest_plugin.benchmark_cli import compared_run

    if state.baseline is not None or state.environment is None or state.baseline_path is None:
        return  # the baseline there is what --benchmark-compare compares with (one line says so)
    source = compared_run(config.getoption, Path(config.invocation_params.dir))
    if source is None:
        return
    from perfgate.baseline.imported import seed_baseline_file
    from perfgate.measure.environment import who

    seeded = seed_baseline_file(source, state.baseline_path, state.environment, who(), state.rootdir)
    state.baseline = seeded.baseline
    state.messages.append(
        f"perfgate: seeded {state.baseline_path} from pytest-benchmark's saved run {source}: "
        f"{len(seeded.added)} case(s), marked imported"
    )


def _check_against_base(state: PerfgateSession, config: pytest.Config) -> None:
    """A pull request's gate: are the project root, [tool.perfgate] and (baseline mode) the baseline the ones
    its base ref's files give this run? A/B mode checks against its base, unless a baseline ref is named."""
    from dataclasses import replace

    from perfgate.baseline.base_ref import base_ref, check_against_base
    from perfgate.pytest_plugin.rootdir import invocation_of, pytest_rootdir

    ab = state.mode is Mode.AB
    ref = base_ref(state.settings.baseline_ref, os.environ) or (state.settings.base if ab else "")
    if not ref or (not ab and (state.environment is None or state.baseline_path is None)):
        return
    from perfgate.model import Environment

    env = state.environment or Environment(device_kind="host", device_name="")
    baseline = None if ab else state.baseline_path
    check = check_against_base(ref, state.settings, env, baseline, invocation_of(config), pytest_rootdir)
    state.facts = replace(state.facts, base=check)


def _check_history(settings: Settings) -> None:
    """A history that cannot be opened fails now, with one line, not after the suite ran."""
    from perfgate.store import open_store

    open_store(settings.db_path).close()


def register_benchmark_fixture(config: pytest.Config) -> None:
    """Under --perfgate, the `benchmark` fixture is served by perfgate's timers. pytest-benchmark itself
    steps aside for the run (its hooks would refuse a fixture that is not its own, and report twice)."""
    from perfgate.pytest_plugin.benchmark import BenchmarkPlugin
    from perfgate.pytest_plugin.benchmark_options import benchmark_options

    step_aside_pytest_benchmark(config)
    # pytest-benchmark, stepped aside, registers no marker: a --strict-markers suite must still collect
    config.addinivalue_line("markers", "benchmark: mark a test with custom benchmark settings.")
    config.addinivalue_line("markers", "codspeed_benchmark: mark an entire test for benchmarking (pytest-codspeed).")
    manager = config.pluginmanager
    if not manager.has_plugin("perfgate-benchmark"):
        manager.register(BenchmarkPlugin(benchmark_options(config)), "perfgate-benchmark")


def step_aside_pytest_benchmark(config: pytest.Config) -> None:
    """pytest-benchmark and pytest-codspeed step aside for a measuring run: one tool measures."""
    from perfgate.pytest_plugin.codspeed import step_aside_codspeed

    manager = config.pluginmanager
    pytest_benchmark = manager.get_plugin("benchmark")
    if pytest_benchmark is not None:
        manager.unregister(pytest_benchmark)
    step_aside_codspeed(config)
