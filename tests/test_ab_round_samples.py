"""How many samples one side takes in one A/B round (RoundPlan.samples_for): with CUDA events its share of the
round's time up to max_samples; on the host clock a turn of about HOST_TURN_MS, since there the spread of a
round's ratio comes from the time between the two sides' turns, not from a turn's length (docs/ab.md "Cost")."""

from __future__ import annotations

from perfgate.ab.rounds import RoundPlan
from perfgate.model import Timer


def test_a_short_call_takes_its_share_of_the_round_up_to_max_samples() -> None:
    plan = RoundPlan(rounds=20, max_samples=200, min_samples=5, round_ms=40.0)
    assert plan.samples_for(0.05) == 200  # a 50 us call: 40 ms would hold 800; never split over the rounds
    assert plan.samples_for(0.3) == 133  # a 300 us GEMM: its share of the round's 40 ms


def test_a_long_call_still_takes_min_samples_a_round() -> None:
    assert RoundPlan(rounds=20, min_samples=5).samples_for(100.0) == 5


def test_a_host_clock_turn_lasts_about_a_millisecond_of_samples() -> None:
    plan = RoundPlan(rounds=20, max_samples=200, min_samples=5, round_ms=20.0)
    assert plan.samples_for(0.05, Timer.HOST) == 20  # a 50 us call: 1 ms, where CUDA events take 200
    assert plan.samples_for(0.05, Timer.CUDA_EVENT) == 200
    assert plan.samples_for(0.002, Timer.HOST_THREAD_CPU) == 100  # a 2 us call: samples of >= 10 us (a loop)
    assert plan.samples_for(2.0, Timer.HOST) == 5  # a long call: min_samples still


def test_a_host_turn_never_exceeds_the_rounds_own_share() -> None:
    assert RoundPlan(rounds=20, round_ms=0.5, min_samples=5).samples_for(0.05, Timer.HOST) == 10
