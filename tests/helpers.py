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


def case(case_id: str, samples: list[float], metrics: tuple[Metric, ...] = (), timer: Timer = Timer.CUDA_EVENT,
         thresholds: CaseThresholds = CaseThresholds(), **extra: object) -> CaseResult:
    return CaseResult(case_id, summarize(samples, timer), tuple(samples), metrics, thresholds=thresholds,
                      nodeid=case_id.split("::", maxsplit=1)[0] if "::" in case_id else case_id, **extra)  # type: ignore[arg-type]


def make_run(samples: dict[str, list[float]], metrics: tuple[Metric, ...] = (), env: Environment = ENV,
             thresholds: CaseThresholds = CaseThresholds(), uid: str = "") -> Run:
    timer = Timer.CUDA_EVENT if env.device_kind == "cuda" else Timer.HOST
    results = tuple(case(cid, s, metrics, timer, thresholds) for cid, s in samples.items())
    return Run(RunInfo("2026-11-21T00:00:00+00:00", "2026-11-21T00:01:00+00:00", git_commit="abc123", run_uid=uid),
               env, results)


def baseline_of(run: Run, tmp_path: Path, name: str = "b.json") -> Baseline:
    return updated_baseline(None, run, tmp_path / name, "t", "r")


def calibrated(base: Baseline, process_medians: dict[str, list[float]]) -> Baseline:
    """The same baseline with per-case process medians (as `perfgate calibrate` would write them)."""
    cases = dict(base.cases)
    for cid, medians in process_medians.items():
        cases[cid] = replace(cases[cid], process_medians_ms=tuple(medians))
    return replace(base, cases=cases)


# pytester projects: one perf test file and a [tool.perfgate], run as `pytest --perfgate`

CI_ENV = ("GITHUB_STEP_SUMMARY", "PERFGATE_DB")  # set on a CI runner; would redirect a test's outputs


def perf_project(pytester: Any, monkeypatch: Any, test_source: str, pyproject: str, clear: tuple[str, ...] = (),
                 test_name: str = "test_perf", **env: str) -> Any:
    """The project with CI's variables and `clear` unset and `env` set, so each test starts the same."""
    for var in (*CI_ENV, *clear):
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
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
