"""On the host clock a shared A/B host's sides may differ by a steady offset the rounds cannot cancel (each side
runs its own test body's inputs and allocations; a 2 us sort's sides differed by -11..+6% per case for the
case's life): the verdict bounds it from its draws as it does for separate processes (ratios.offsets_unknown).
An unchanged 100-case A/A run of scripts/ab_host_cost.py called such a case regressed: first pair +4.2%, fresh
pair +9.0%, its twins' offsets small."""

from __future__ import annotations

import pytest

from perfgate.ab.compare import AbRule, compare_ab
from perfgate.ab.protocol import Side
from perfgate.ab.rounds import CaseRounds, Measurement
from perfgate.metrics import TIME_METRIC
from perfgate.model import Timer, Verdict
from tests.steady_rounds import steady_case

CASE = "test_perf.py::test_sort[52]"
CALL_MS = 0.002


def _pair(timer: Timer, head_pct: float, twin_pct: float, seed: int) -> CaseRounds:
    return steady_case(CASE, CALL_MS, head_pct, twin_pct, seed, timer)


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
