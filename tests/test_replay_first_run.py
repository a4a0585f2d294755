"""scripts/replay_first_run.py replays the first gate run after a calibration at the decision, on the very draws
scripts/replay_scenarios.py gates through `run_gate`: its rates stand for run_gate's only while both give every
case the same verdict, after the same confirmation rounds."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.config.settings import Settings
from perfgate.model import Verdict
from tests.helpers import load_script


@pytest.fixture(scope="module")
def bench():
    load_script("replay_scenarios")  # replay_first_run imports it by name
    return load_script("replay_first_run")


def both_paths(bench, scenario, seed: int, tmp_path: Path):
    for side in ("fast", "full"):
        (tmp_path / side).mkdir(parents=True)
    fast = bench.decision_path(bench.Replica(scenario, seed, tmp_path / "fast", 10), Settings())
    full = bench.gate_path(bench.Replica(scenario, seed, tmp_path / "full", 10))
    return fast, full


def test_a_two_mode_first_run_gets_the_same_verdicts_and_confirmations_both_ways(bench, tmp_path):
    two_modes = bench.SCENARIOS["first run: two modes 40% +3%, 100 cases"]
    scenario = replace(two_modes, noises=two_modes.noises[:30])
    runs = [both_paths(bench, scenario, seed, tmp_path / str(seed)) for seed in range(4)]
    assert all(fast == full for fast, full in runs)
    assert any(fast.rounds for fast, _ in runs)  # suspects were measured again: the confirmation was compared too


def test_a_slowed_case_fails_the_first_run_both_ways_after_the_same_rounds(bench, tmp_path):
    gaussian = bench.SCENARIOS["first run: Gaussian 0.3%, 100 cases"]
    scenario = replace(gaussian, noises=gaussian.noises[:12], onset=1, code_step_pct=5.0)
    fast, full = both_paths(bench, scenario, 3, tmp_path)
    assert fast == full and fast.failed and fast.rounds >= 2
    assert fast.verdicts[0] is Verdict.REGRESSED and Verdict.REGRESSED not in fast.verdicts[1:]


def test_a_common_mode_shift_moves_the_centres_the_same_way_both_ways(bench, tmp_path):
    fast, full = both_paths(bench, bench.SCENARIOS["first run: driver update +3%, 6 cases"], 5, tmp_path)
    assert fast == full and fast.shift_pct is not None and not fast.failed
