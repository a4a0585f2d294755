"""How many samples one side takes in one A/B round (RoundPlan.samples_for): its share of the round's time,
up to max_samples a round on every timer. Splitting a stage's max_samples over its rounds (10 samples a
round) made host rounds shorter than a preemption and unchanged 100-case A/A runs fail (docs/ab.md "Cost")."""

from __future__ import annotations

from perfgate.ab.coordinator import RoundPlan


def test_a_short_call_takes_its_share_of_the_round_up_to_max_samples() -> None:
    plan = RoundPlan(rounds=20, max_samples=200, min_samples=5, round_ms=40.0)
    assert plan.samples_for(0.05) == 200  # a 50 us call: 40 ms would hold 800; never split over the rounds
    assert plan.samples_for(0.3) == 133  # a 300 us GEMM: its share of the round's 40 ms


def test_a_long_call_still_takes_min_samples_a_round() -> None:
    assert RoundPlan(rounds=20, min_samples=5).samples_for(100.0) == 5
