"""Records for tests: runs, noisy samples, baselines, pytester projects (importable helpers, not test modules)."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

from perfgate.baseline import Baseline
from perfgate.baseline.write import updated_baseline
from perfgate.model import CaseResult, CaseThresholds, Environment, Metric, Run, RunInfo, Timer
from perfgate.stats import summarize

ENV = Environment(device_kind="cuda", device_name="NVIDIA H100 80GB HBM3", compute_capability="9.0")
HOST_ENV = Environment(device_kind="host", device_name="Some CPU")


def noisy(center: float, n: int = 60, seed: int = 0, sd: float = 0.005) -> list[float]:
    rng = random.Random(seed)
    return [center * (1 + rng.gauss(0, sd)) for _ in range(n)]


def case(
    case_id: str,
    samples: list[float],
    metrics: tuple[Metric, ...] = (),
    timer: Timer = Timer.CUDA_EVENT,
    thresholds: CaseThresholds = CaseThresholds(),
    **extra: object,
) -> CaseResult:
    return CaseResult(
        case_id,
        summarize(samples, timer),
        tuple(samples),
        metrics,
        thresholds=thresholds,
        nodeid=case_id.split("::", maxsplit=1)[0] if "::" in case_id else case_id,
        **extra,
    )  # type: ignore[arg-type]


def make_run(
    samples: dict[str, list[float]],
    metrics: tuple[Metric, ...] = (),
    env: Environment = ENV,
    thresholds: CaseThresholds = CaseThresholds(),
    uid: str = "",
) -> Run:
    timer = Timer.CUDA_EVENT if env.device_kind == "cuda" else Timer.HOST
    results = tuple(case(cid, s, metrics, timer, thresholds) for cid, s in samples.items())
    return Run(
        RunInfo("2026-11-21T00:00:00+00:00", "2026-11-21T00:01:00+00:00", git_commit="abc123", run_uid=uid),
        env,
        results,
    )


def baseline_of(run: Run, tmp_path: Path, name: str = "b.json") -> Baseline:
    return updated_baseline(None, run, tmp_path / name, "t", "r")


QUIET_PROCESSES = (0.997, 1.0, 1.003, 0.999, 1.001, 1.0)  # six calibration processes, ~0.2% apart


def calibrated_of(run: Run, tmp_path: Path, spread: tuple[float, ...] = QUIET_PROCESSES) -> Baseline:
    """A calibrated baseline of `run`: each case's process medians its median times `spread`."""
    base = baseline_of(run, tmp_path)
    return calibrated(base, {cid: [c.median_ms * f for f in spread] for cid, c in base.cases.items()})


def calibrated(base: Baseline, process_medians: dict[str, list[float]]) -> Baseline:
    """The same baseline with per-case process medians (as `perfgate calibrate` would write them)."""
    cases = dict(base.cases)
    for cid, medians in process_medians.items():
        cases[cid] = replace(cases[cid], process_medians_ms=tuple(medians))
    return replace(base, cases=cases)


# pytester projects: one perf test file and a [tool.perfgate], run as `pytest --perfgate`

CI_ENV = ("GITHUB_STEP_SUMMARY", "PERFGATE_DB")  # set on a CI runner; would redirect a test's outputs

# Plugins the generated projects never use, kept out of every pytest they run, in-process or as a child
# (confirmation, calibration, xdist workers, the action's gate): hypothesis's costs ~0.8 s of CPU a process.
LEAN_PYTEST_ADDOPTS = "-p no:hypothesispytest"

# The project's conftest.py: perfgate measures on a manual clock (tests/manual_clock.py), on which a perf
# test's callable takes exactly the time it declares (`clock.current().sleep(0.002)` is 2 ms, however busy
# the machine is) and one that declares nothing takes a tick per reading. The gate's child processes
# (confirmation, calibration) load the same conftest, so they keep the same time. Restored when the run
# ends: in-process runs share this process's perfgate modules.
MANUAL_CLOCK_CONFTEST = (
    Path(__file__).with_name("manual_clock.py").read_text()
    + """

from perfgate.measure import clock

_replaced = []


def pytest_configure(config):
    _replaced.append(clock.install(ManualClock(tick_ns=1000)))


def pytest_unconfigure(config):
    clock.install(_replaced.pop())
"""
)


def perf_project(
    pytester: Any,
    monkeypatch: Any,
    test_source: str,
    pyproject: str,
    clear: tuple[str, ...] = (),
    test_name: str = "test_perf",
    **env: str,
) -> Any:
    """The project, measured on a manual clock, with CI's variables and `clear` unset and `env` set, so
    each test starts the same."""
    for var in (*CI_ENV, *clear):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PYTEST_ADDOPTS", LEAN_PYTEST_ADDOPTS)  # after pytester, which clears it
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    pytester.makeconftest(MANUAL_CLOCK_CONFTEST)
    pytester.makepyfile(**{test_name: test_source})
    pytester.makefile(".toml", pyproject=pyproject)
    return pytester


def gate_json(pytester: Any, *args: str) -> Any:
    """`pytest --perfgate` in-process, results written to out.json."""
    return pytester.runpytest("--perfgate", "-p", "no:cacheprovider", "--perfgate-json", "out.json", *args)


def results_json(pytester: Any) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((pytester.path / "out.json").read_text())
    return doc


def comparisons_by_case(pytester: Any, metric: str = "median_ms") -> dict[str, dict[str, Any]]:
    """out.json's comparisons of one metric, by the last part of the case id."""
    return {c["case_id"].split("::")[-1]: c for c in results_json(pytester)["comparisons"] if c["metric"] == metric}


SCRIPTS_DIR = Path(__file__).parents[1] / "scripts"


def load_script(name: str) -> Any:
    """scripts/<name>.py as a module registered under `name` (its dataclasses look their module up while it
    loads, and a script that imports another by name finds it)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(name, SCRIPTS_DIR / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
