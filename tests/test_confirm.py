"""Confirmation before failing: a suspect case is re-measured in fresh processes; only a regression that
survives them fails the gate. (The parent runs in-process; the confirmation children are real processes.)"""

import io
import re

import pytest

from perfgate.config.settings import Settings
from perfgate.gate.confirm import confirm_suspects
from perfgate.report.progress import LogProgress
from tests.helpers import calibrated_of, comparisons_by_case, gate_json, make_run, noisy, perf_project, results_json

PERF_TEST = """
import os, pathlib
from perfgate.measure import clock

def work(ms):
    clock.current().sleep(ms / 1e3)

def test_really_slower(perfgate):
    perfgate(work, float(os.environ.get("SLEEP_MS", "2")))

def test_slow_once(perfgate):
    # slow in the first process only: a fresh process (a confirmation run) finds the mark, runs at full speed
    mark = pathlib.Path("slowed-once")
    once = os.environ.get("SLOW_ONCE") and not mark.exists()
    perfgate(work, 3.0 if once else 2.0)
    if once:
        mark.write_text("")
"""
PYPROJECT = """
[tool.perfgate]
threshold_pct = 10.0
warmup_ms = 2
min_samples = 10
max_samples = 20
budget_ms = 40
confirm_runs = 1
noise_branch = "*"
"""


@pytest.fixture
def project(pytester, monkeypatch):
    perf_project(pytester, monkeypatch, PERF_TEST, PYPROJECT, clear=("SLOW_ONCE",), SLEEP_MS="2")
    for _ in range(3):  # the baseline, then two unchanged runs: the noise window the gate judges by
        assert pytester.runpytest("--perfgate", "-p", "no:cacheprovider").ret == 0
    return pytester


def test_a_real_regression_is_confirmed_in_a_fresh_process_and_fails(project, monkeypatch):
    # +20%: below the gross threshold, so the window's noise decides (at +50% the gross rule would, in 2)
    monkeypatch.setenv("SLEEP_MS", "2.4")
    result = gate_json(project)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "*confirmed 1 suspect case(s) in a fresh process (round 1 of *): * s",
            "*test_really_slower*REGRESSED (* processes)*",
        ]
    )
    row = comparisons_by_case(project)["test_really_slower"]
    # three reference processes (the baseline's and two passing runs'): more confirmations than
    # confirm_runs, until all of them beyond every reference process is rare enough (decision.py)
    assert row["verdict"] == "regressed" and row["processes"] == row["stages"] > 2


def test_a_slowdown_a_fresh_process_does_not_reproduce_is_cleared(project, monkeypatch):
    monkeypatch.setenv("SLOW_ONCE", "1")
    result = gate_json(project)
    assert result.ret == 0
    row = comparisons_by_case(project)["test_slow_once"]
    # not regressed: the fresh process did not show it; the two disagree, so it is named (inconclusive)
    assert row["verdict"] == "inconclusive" and row["processes"] == 2
    stored = results_json(project)["cases"]
    assert next(c for c in stored if c["case_id"].endswith("test_slow_once"))["confirmation_medians_ms"]


def test_confirmation_can_be_switched_off(project, monkeypatch):
    monkeypatch.setenv("SLEEP_MS", "3")
    result = project.runpytest("--perfgate", "-p", "no:cacheprovider", "--perfgate-confirm-runs", "0")
    assert result.ret == 1
    assert "confirmed" not in result.stdout.str() and "suspect" not in result.stdout.str()


def test_a_first_run_then_a_function_one_and_a_half_times_slower_fails_with_the_calibrate_hint(pytester, monkeypatch):
    """`pytest --perfgate` twice on a new project (shipped confirmation: two fresh processes): the first run
    writes an uncalibrated baseline; a 1.5x slower function then fails in all three processes, and the gate
    says to calibrate. Below the gross threshold it would stay inconclusive (tests/test_plugin.py)."""
    first_use = "[tool.perfgate]\nwarmup_ms = 2\nmin_samples = 10\nmax_samples = 20\nbudget_ms = 40\n"
    perf_project(pytester, monkeypatch, PERF_TEST, first_use, clear=("SLOW_ONCE",), SLEEP_MS="2")
    assert pytester.runpytest("--perfgate", "-p", "no:cacheprovider").ret == 0
    monkeypatch.setenv("SLEEP_MS", "3")
    result = gate_json(pytester)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "*round 2 of 2*",
            "*test_really_slower*REGRESSED (3 processes)*",
            "*slower by more than 25% in every process (3)*run perfgate calibrate*",
        ]
    )


def test_a_confirmation_round_is_shown_while_it_runs_not_after(tmp_path):
    baseline = calibrated_of(make_run({"t::a": noisy(1.0), "t::b": noisy(2.0)}), tmp_path)
    slow = make_run({"t::a": noisy(1.5, seed=1), "t::b": noisy(2.0, seed=2)})
    out = io.StringIO()
    seen_while_running: list[str] = []

    def confirmer(case_ids):
        seen_while_running.append(out.getvalue())
        return {r.case_id: r for r in slow.results if r.case_id in case_ids}

    messages: list[str] = []
    confirm_suspects(slow, baseline, Settings(confirm_runs=2), confirmer, messages, progress=LogProgress(out))
    # as many rounds as the case's reference needs (gate/decision.py: stages_needed), each shown as it starts
    assert re.search(
        r"confirmation round 1 of \d+: 1 suspect case\(s\) \(1 step\(s\)\): started\n$", seen_while_running[0]
    )
    assert re.search(r"confirmation round 1 of \d+: 1 suspect case\(s\): 1/1 in ", out.getvalue())
    assert len(seen_while_running) >= 2 and len(messages) == len(seen_while_running)  # a cost line per round
