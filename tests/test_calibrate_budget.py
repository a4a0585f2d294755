"""`perfgate calibrate` says when the calibration is too short for the suite's false-alarm budget to hold
whatever the noise's shape (issue 31: at 1,000 cases six processes bound a case at 1 / C(14, 8) = 3.3e-4, 33
times its share of a 1% budget)."""

from __future__ import annotations

import math

from perfgate.baseline.review import budget_note
from perfgate.gate.decision import MAX_STAGES, per_test_alpha, reference_processes_needed


def test_the_processes_needed_are_the_fewest_whose_rank_bound_reaches_alpha():
    for cases in (1, 10, 30, 100, 1000, 10000):
        alpha = per_test_alpha(1.0, cases)
        n = reference_processes_needed(alpha)
        assert 1.0 / math.comb(n + MAX_STAGES, MAX_STAGES) <= alpha
        assert n == 1 or 1.0 / math.comb(n - 1 + MAX_STAGES, MAX_STAGES) > alpha
    assert reference_processes_needed(per_test_alpha(1.0, 1000)) == 12


def test_a_thousand_cases_from_six_processes_are_warned_about_with_the_runs_that_would_hold():
    note = budget_note(1000, 6, 1.0)
    assert note is not None and "--runs 12" in note and "1000 cases" in note and "33%" in note


def test_a_small_suite_or_a_long_enough_calibration_gets_no_warning():
    assert budget_note(30, 6, 1.0) is None
    assert budget_note(1000, 12, 1.0) is None
    assert budget_note(100, 8, 1.0) is None
