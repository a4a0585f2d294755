"""The outside review's scenarios (scripts/replay_scenarios.py) at a CI size, on the shipped gate with a real
SQLite history: an environment change is one finding and no failure, a code change is named within a few
runs, an unchanged first run after calibration with two-mode noise passes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.helpers import load_script


@pytest.fixture(scope="module")
def bench():
    return load_script("replay_scenarios")


def replay(bench, name: str, seeds: int = 1, **changes):
    scenario = replace(bench.SCENARIOS[name], **changes)
    tally = bench.Tally()
    for seed in range(seeds):
        bench.replay(scenario, seed, tally, bench._Silence)
    return tally


def test_a_driver_update_is_named_at_once_fails_no_run_and_is_re_anchored(bench):
    t = replay(bench, "driver update (+3% every case)", runs=18)
    assert t.failed_unchanged == 0 and t.common_named == [0] and t.reanchors == 1


def test_a_step_of_three_percent_on_a_12_us_case_is_named_within_a_few_runs(bench):
    t = replay(bench, "+3% step on 12 us", runs=18)
    assert t.failed_unchanged == 0 and t.named_after and max(t.named_after) <= 6


def test_a_quiet_creep_is_named_within_a_few_runs(bench):
    t = replay(bench, "creep quiet (+0.5%/run)", runs=16)
    assert t.failed_unchanged == 0 and t.named_after and max(t.named_after) <= 4


def test_the_first_run_after_calibration_with_two_modes_passes(bench):
    t = replay(bench, "first run: two modes, 100 cases", seeds=8)
    assert t.runs == 8 and t.failed_unchanged == 0


def test_an_intermittent_shared_slow_mode_is_named_as_such_and_stops_failing_strict_runs(bench):
    t = replay(bench, "intermittent shared mode (40% +3%)", runs=36)
    assert t.failed_unchanged == 0 and t.intermittent_named >= 5 and t.late_strict_common <= 2


def test_a_six_case_suite_passes_its_first_run_after_a_driver_update(bench):
    t = replay(bench, "first run: driver update +3%, 6 cases", seeds=20)
    assert t.runs == 20 and t.failed_unchanged == 0
