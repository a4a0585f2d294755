"""The replay benchmark (scripts/replay_decision.py) on every recorded H100 process value, at a CI-sized
number of independent calibrations: the shipped rule meets the issue's targets on real noise."""

import argparse

import pytest

from tests.helpers import load_script


def _replay(**overrides):
    module = load_script("replay_decision")
    args = argparse.Namespace(draws=200, window=10, stages=3, budget=1.0, min_effect=1.0, seed=11, json=None)
    vars(args).update(overrides)
    return module.run(args)


@pytest.fixture(scope="module")
def shipped() -> dict:
    """The replay at the shipped settings, computed once for the tests that read it (a pure function of them)."""
    return _replay()


def test_an_unchanged_suite_of_100_or_1000_cases_rarely_fails_on_recorded_h100_noise(shipped):
    result = shipped
    assert result["per_run_false_alarm"][100] <= 0.02
    assert result["per_run_false_alarm"][1000] <= 0.05


def test_five_percent_slowdowns_are_caught_on_memory_bound_reference_and_small_cases(shipped):
    per_case = shipped["per_case"]["1"]
    for name, rates in per_case.items():
        if "cublas_matmul" in name and not name.endswith("probe"):
            continue  # time alone: common-mode noise (docs/accuracy.md); the A/B mode is for it
        wanted = 0.80 if "small_add" in name and not name.endswith("probe") else 0.95
        if name == "c/small_add_probe":
            # one of its six calibration processes ran at 23 us instead of 12: with 18 reference processes
            # (under 20) it counts in the noise; a longer window outweighs it (docs/accuracy.md)
            wanted = 0.70
        assert rates["caught_5"] >= wanted, (name, rates)


def test_a_fresh_calibration_without_history_still_holds_the_budget():
    result = _replay(window=0, draws=300)  # rarer bad calibrations: more of them drawn
    assert result["per_run_false_alarm"][100] <= 0.02
    assert result["per_run_false_alarm"][1000] <= 0.05
