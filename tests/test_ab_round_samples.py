"""How many samples one side takes in one A/B round (RoundPlan.samples_for): split over the rounds on a host
clock (a stage costs what a baseline gate's case costs), up to max_samples a round on a GPU (as measured)."""

from __future__ import annotations

import pytest

from perfgate.ab.coordinator import RoundPlan
from perfgate.model import Timer


@pytest.mark.parametrize("timer", [Timer.HOST, Timer.HOST_THREAD_CPU, Timer.HOST_PROCESS_CPU])
def test_a_host_clock_side_takes_max_samples_per_stage_split_over_its_rounds(timer: Timer) -> None:
    plan = RoundPlan(rounds=20, max_samples=200, min_samples=5)
    assert plan.samples_for(0.05, timer) == 10  # a 50 us call: 40 ms would hold 800
    assert plan.samples_for(0.05, timer) * plan.rounds == plan.max_samples


def test_a_gpu_side_keeps_up_to_max_samples_a_round() -> None:
    plan = RoundPlan(rounds=20, max_samples=200, min_samples=5)
    assert plan.samples_for(0.01, Timer.CUDA_EVENT) == 200  # a 10 us kernel: the round's median needs them
    assert plan.samples_for(0.3, Timer.CUDA_EVENT) == 133  # a 300 us GEMM: its share of the round's 40 ms


@pytest.mark.parametrize("timer", [Timer.HOST, Timer.CUDA_EVENT])
def test_a_long_call_still_takes_min_samples_a_round(timer: Timer) -> None:
    assert RoundPlan(rounds=20, min_samples=5).samples_for(100.0, timer) == 5
