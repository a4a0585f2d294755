"""`perfgate calibrate` without --runs takes as many processes as the suite's false-alarm budget needs from
the first gate run, whatever the noise's shape (issue 31: six processes bound a 1,000-case suite's two-mode
case at 1 / C(14, 8) = 3.3e-4, 33 times its share of a 1% budget). GPU-free: the calibration's child processes
are stand-ins that report seeded process medians; the command line itself writes the baseline."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perfgate.baseline import calibrate as calibrate_module
from perfgate.baseline import load_baseline
from perfgate.baseline.calibrate import DEFAULT_PROCESSES, calibrate, processes_for
from perfgate.cli import main
from perfgate.config.settings import Settings
from perfgate.measure.processes import ChildRun
from tests.helpers import ENV, make_run


class _Suite:
    """A calibration's child process over `cases` cases, each median a seeded draw; counts the processes."""

    cases = 0
    started = 0

    def __init__(self, rootdir: Path, settings: Settings, baseline_file: Path | None = None) -> None:
        self.rng = np.random.default_rng(_Suite.started)

    def run(self, pytest_args: list[str], on_case=None) -> ChildRun:
        _Suite.started += 1
        values = 1.0 + 0.003 * self.rng.standard_normal(_Suite.cases)
        run = make_run({f"t.py::test_{i:04d}": [float(v)] * 5 for i, v in enumerate(values)})
        return ChildRun(run.results, (), ENV, 0)


@pytest.fixture
def suite(monkeypatch, tmp_path):
    monkeypatch.setattr(calibrate_module, "ChildRunner", _Suite)
    monkeypatch.setattr(_Suite, "started", 0)
    monkeypatch.chdir(tmp_path)

    def sized(cases: int) -> type[_Suite]:
        monkeypatch.setattr(_Suite, "cases", cases)
        return _Suite

    return sized


def _calibrate_cli(*argv: str) -> int:
    return main(["calibrate", "--reason", "sizing", "--baseline-file", "b.json", "--no-store", *argv])


@pytest.mark.parametrize(("cases", "processes"), [(2, 10), (100, 10), (1000, 12), (10000, 17)])
def test_calibration_without_runs_takes_the_processes_the_suites_budget_needs(suite, tmp_path, cases, processes):
    suite(cases)
    result = calibrate(Settings(rootdir=tmp_path, baseline_dir=tmp_path), None, [])
    assert len(result.runs) == processes == result.processes and result.sized_for == cases


def test_a_thousand_case_calibration_without_runs_holds_the_budget_from_the_first_run(suite, capsys):
    suite(1000)
    assert _calibrate_cli() == 0
    out = capsys.readouterr().out
    assert _Suite.started == 12 and "cannot hold" not in out
    assert all(len(c.process_medians_ms) == 12 for c in load_baseline(Path("b.json")).cases.values())
    assert "1000 case(s) from 12 processes" in out


def test_an_explicit_short_calibration_keeps_its_runs_and_the_warning_naming_the_runs_that_would_hold(suite, capsys):
    suite(1000)
    assert _calibrate_cli("--runs", "6") == 0
    out = capsys.readouterr().out
    assert _Suite.started == 6
    assert "6 calibration processes cannot hold the 1% false-alarm budget for 1000 cases" in out
    assert "calibrate with --runs 12" in out


def test_the_cases_the_baseline_keeps_count_in_the_size_the_calibration_is_sized_for(suite, capsys):
    suite(1000)
    assert _calibrate_cli("--runs", "3") == 0
    suite(10)  # now calibrate ten of them: the baseline still gates 1,000
    assert _calibrate_cli() == 0
    assert _Suite.started == 3 + 12
    suite(10)
    assert _calibrate_cli("--replace") == 0  # the others go: ten cases need the default
    assert _Suite.started == 3 + 12 + DEFAULT_PROCESSES


def test_the_processes_for_a_suite_are_the_default_or_what_the_rank_bound_needs():
    assert [processes_for(m, 1.0) for m in (1, 100, 437, 438, 1000, 10000)] == [10, 10, 10, 11, 12, 17]
    assert processes_for(100, 0.1) == 12  # a tighter budget asks for more


def _first_run_rate_per_case(processes: int, cases: int, calibrations: int = 3000) -> float:
    """A case whose processes land 3% slower 40% of the time (0.2% within a mode): its chance of failing the
    first gate run after a calibration of `processes`, averaged over seeded calibrations. Given one
    calibration it is exact: the k processes a failure needs are fresh, independent draws, each beyond the
    threshold with the mixture's survival probability q, so the case fails with q^k."""
    from statistics import NormalDist

    from perfgate.gate.decision import Rule, decide, per_test_alpha
    from perfgate.gate.noise import estimate_noise

    fast, slow = NormalDist(0.0, 0.2), NormalDist(3.0, 0.2)
    rng = np.random.default_rng(31)
    rule = Rule(alpha=per_test_alpha(1.0, cases), stages=3)
    total = 0.0
    for _ in range(calibrations):
        dev = 3.0 * (rng.random(processes) < 0.4) + 0.2 * rng.standard_normal(processes)
        cal = list(1.0 + dev / 100.0)
        d = decide(cal, [1.0], estimate_noise(cal, (), 0.1), rule)
        raw = 100.0 * ((1.0 + d.threshold_pct / 100.0) * sum(cal) / processes - 1.0)  # the threshold on dev
        q = 0.6 * (1.0 - fast.cdf(raw)) + 0.4 * (1.0 - slow.cdf(raw))
        total += q**d.stages
    return total / calibrations


def test_a_two_mode_case_keeps_its_share_of_the_budget_on_the_first_run_after_a_sized_calibration():
    alpha = 0.01 / 1000
    assert _first_run_rate_per_case(processes_for(1000, 1.0), 1000) <= alpha
    assert _first_run_rate_per_case(6, 1000) > 2 * alpha  # six processes: what the sizing is for
