"""The rounds behind a run's ratios as the JSON results carry them (`ab.cases`): each case's round orders,
stage ends and every side's round medians, so a verdict can be checked, and the noise studied
(docs/evidence/ab-noise.md was measured from these)."""

from __future__ import annotations

import statistics
from collections.abc import Callable

from perfgate.ab.protocol import RoundSamples
from perfgate.ab.rounds import CaseRounds
from perfgate.report.ab import RoundTrace


def round_trace(case: CaseRounds) -> RoundTrace:
    """The case's rounds as measured: orders, stage ends, each side's round medians."""

    def medians(pick: Callable[[RoundSamples], tuple[float, ...]]) -> tuple[tuple[str, tuple[float, ...]], ...]:
        out = []
        for side, rounds in case.sides.items():
            values = [pick(r) for r in rounds.rounds]
            if values and all(values):
                out.append((side.value, tuple(float(statistics.median(v)) for v in values)))
        return tuple(out)

    return RoundTrace(
        case.case_id,
        tuple(tuple(s.value for s in order) for order in case.orders),
        tuple(case.stage_ends),
        medians(lambda r: r.samples_ms),
        medians(lambda r: r.reference_samples_ms),
    )
