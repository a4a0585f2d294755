"""A shared A/B host's rounds for one case, built without a worker: base, head and A/A twin each steady at its
own offset, 1% round noise, three stages of 20 rounds in the schedule's own orders. Used by the host-offset
tests (test_ab_host_offsets.py, test_ab_pooled_offsets.py)."""

from __future__ import annotations

import math
import random

import numpy as np

from perfgate.ab.protocol import Prepared, RoundSamples, Side
from perfgate.ab.rounds import CaseRounds, SideRounds
from perfgate.ab.schedule import round_orders
from perfgate.model import CaseResult, Timer
from perfgate.stats import summarize


def steady_case(
    case_id: str, call_ms: float, head_pct: float, twin_pct: float, seed: int, timer: Timer = Timer.HOST
) -> CaseRounds:
    """Three stages of 20 rounds of base, head and A/A twin, each side steady at its offset, 1% round noise."""
    rng = np.random.default_rng(seed)
    case = CaseRounds(case_id, case_id)
    skeleton = CaseResult(case_id, summarize([call_ms], timer), (call_ms,), nodeid=case_id)
    offsets = {Side.BASE: 0.0, Side.HEAD: head_pct, Side.AA: twin_pct}
    for side in offsets:
        case.sides[side] = SideRounds(Prepared(skeleton, call_ms))
    for order in round_orders(tuple(offsets), 60, random.Random(seed)):
        for side in order:
            value = call_ms * (1 + offsets[side] / 100) * math.exp(float(rng.normal(0.0, 0.01)))
            case.sides[side].rounds.append(RoundSamples((value,)))
        case.orders.append(order)
    case.stage_ends = [20, 40, 60]
    return case
