"""On the host clock a shared A/B host's sides may differ by a steady offset the rounds cannot cancel (each side
runs its own test body's inputs and allocations; a 2 us sort's sides differed by -11..+6% per case for the
case's life): the verdict bounds it from its draws as it does for separate processes (compare.offsets_unknown).
An unchanged 100-case A/A run of scripts/ab_host_cost.py called such a case regressed: first pair +4.2%, fresh
pair +9.0%, its twins' offsets small."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from perfgate.ab.compare import AbRule, compare_ab
from perfgate.ab.coordinator import CaseRounds, Measurement, SideRounds
from perfgate.ab.protocol import Prepared, RoundSamples, Side
from perfgate.ab.schedule import round_orders
from perfgate.metrics import TIME_METRIC
from perfgate.model import CaseResult, Timer, Verdict
from perfgate.stats import summarize

CASE = "test_perf.py::test_sort[52]"
CALL_MS = 0.002


def _pair(timer: Timer, head_pct: float, twin_pct: float, seed: int) -> CaseRounds:
    """Three stages of 20 rounds of base, head and A/A twin, each side steady at its offset, 1% round noise."""
    rng = np.random.default_rng(seed)
    case = CaseRounds(CASE, CASE)
    skeleton = CaseResult(CASE, summarize([CALL_MS], timer), (CALL_MS,), nodeid=CASE)
    offsets = {Side.BASE: 0.0, Side.HEAD: head_pct, Side.AA: twin_pct}
    for side in offsets:
        case.sides[side] = SideRounds(Prepared(skeleton, CALL_MS))
    for order in round_orders(tuple(offsets), 60, random.Random(seed)):
        for side in order:
            value = CALL_MS * (1 + offsets[side] / 100) * math.exp(float(rng.normal(0.0, 0.01)))
            case.sides[side].rounds.append(RoundSamples((value,)))
        case.orders.append(order)
    case.stage_ends = [20, 40, 60]
    return case


def _verdict(timer: Timer, first: tuple[float, float], fresh: tuple[float, float]) -> Verdict:
    m = Measurement(cases=[_pair(timer, *first, seed=1)], collected={Side.HEAD: (CASE,)}, shared=True)
    budget = AbRule(false_alarm_pct=0.01)  # this case's share of a 100-case run's 1%
    cmp = compare_ab(m, {}, budget, fresh={CASE: _pair(timer, *fresh, seed=2)})
    return cmp.decisions[(CASE, TIME_METRIC)].verdict


@pytest.mark.parametrize("timer", [Timer.HOST, Timer.HOST_THREAD_CPU])
def test_a_steady_side_offset_on_the_host_clock_is_not_a_regression_in_a_shared_host(timer: Timer) -> None:
    assert _verdict(timer, (4.2, 0.3), (9.0, -0.5)) is not Verdict.REGRESSED


def test_the_same_rounds_timed_by_cuda_events_keep_the_shared_rule() -> None:
    # CUDA inputs move every round (placement.py): one shared process has no such offset, and the GPU's
    # verdict is what it was
    assert _verdict(Timer.CUDA_EVENT, (4.2, 0.3), (9.0, -0.5)) is Verdict.REGRESSED


def test_a_gross_host_slowdown_is_still_regressed_in_a_shared_host() -> None:
    assert _verdict(Timer.HOST, (40.0, 0.3), (45.0, -0.5)) is Verdict.REGRESSED
