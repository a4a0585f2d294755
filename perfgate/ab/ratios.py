"""Per case and metric, what its rounds say: head against base as per-round log ratios, grouped by stage, the
A/A twin's as noise -> one pair's ratio decision, then, for a call, the fresh pair's (gate/ratio.py's rule;
pure). The rows these decisions become are rows.py's; the whole run's, compare.py's.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterator, Mapping, Sequence

from perfgate.ab.aa import AaCases
from perfgate.ab.protocol import RoundSamples, Side
from perfgate.ab.rounds import CaseRounds, Measurement
from perfgate.gate.fresh_pair import on_one_pair, with_fresh_pair
from perfgate.gate.pooled import OffsetPrior, offset_prior
from perfgate.gate.ratio import MIN_ROUNDS, AaNoise, RatioDecision, RatioRule, decide_ratio
from perfgate.metrics import SPEEDUP_METRIC, TIME_METRIC
from perfgate.model import Timer, Verdict

RATIO_METRICS = (TIME_METRIC, SPEEDUP_METRIC)
CALLS = (Verdict.REGRESSED, Verdict.IMPROVED)  # the verdicts a fresh pair of processes must repeat


def _round_value(r: RoundSamples, metric: str) -> float:
    """One side's value of a round: the median time, or the speedup (reference median / case median)."""
    case = statistics.median(r.samples_ms)
    if metric == TIME_METRIC:
        return case
    return statistics.median(r.reference_samples_ms) / case


def _aligned(case: CaseRounds, a: Side, b: Side) -> Iterator[tuple[int, RoundSamples, RoundSamples]]:
    """(round index, a's round, b's round) for every round both sides measured."""
    seen = {s: 0 for s in case.sides}
    for index, order in enumerate(case.orders):
        if a in order and b in order and a in case.sides and b in case.sides:
            yield index, case.sides[a].rounds[seen[a]], case.sides[b].rounds[seen[b]]
        for s in order:
            seen[s] = seen.get(s, 0) + 1


def _worse_log(metric: str, base_value: float, other_value: float) -> float:
    """ln(other / base) for time (lower is better), ln(base / other) for speedup: + is always worse."""
    numerator, denominator = (other_value, base_value) if metric == TIME_METRIC else (base_value, other_value)
    if not (numerator > 0 and denominator > 0 and math.isfinite(numerator) and math.isfinite(denominator)):
        return math.nan  # a round with no usable median: the verdict sets it aside as wild
    return math.log(numerator / denominator)


def ratio_stages(case: CaseRounds, metric: str) -> list[list[float]]:
    """Head against base, per round, grouped by stage."""
    stages: list[list[float]] = [[] for _ in case.stage_ends]
    for index, base, head in _aligned(case, Side.BASE, Side.HEAD):
        stage = next(i for i, end in enumerate(case.stage_ends) if index < end)
        stages[stage].append(_worse_log(metric, _round_value(base, metric), _round_value(head, metric)))
    return [s for s in stages if s]


def aa_noise(case: CaseRounds, metric: str) -> AaNoise | None:
    """The A/A of this case (the second base process against the base), when it was measured here."""
    values = [
        _worse_log(metric, _round_value(b, metric), _round_value(a, metric))
        for _, b, a in _aligned(case, Side.BASE, Side.AA)
        if metric == TIME_METRIC or (b.reference_samples_ms and a.reference_samples_ms)
    ]
    return AaNoise.of(values) if len(values) >= 2 else None


def has_metric(case: CaseRounds, metric: str) -> bool:
    if case.same_code:  # not measured: nothing to compare, nothing charged to the false-alarm budget
        return False
    if metric == TIME_METRIC:
        return case.paired
    return case.paired and all(
        case.sides[s].rounds and case.sides[s].rounds[0].reference_samples_ms for s in (Side.BASE, Side.HEAD)
    )


def offsets_unknown(case: CaseRounds, shared: bool) -> bool:
    """Whether base and head may differ by a steady offset the rounds cannot cancel, so the verdict bounds it
    from its draws (gate/ratio.py's test for separate processes): always in processes of their own, and on the
    host clock in a shared one too. There each side runs its own test body's inputs and allocations, and a
    short call moved steadily for the case's life: in unchanged 100-case A/A runs of scripts/ab_host_cost.py
    (a 2 us sort) a case's three stages agreed on an offset of -11..+6%, its sign changing from case to case,
    and the shared rule (the offset's variance from a twin or three draws, t at the rounds' dof) called one
    regressed in both pairs (docs/ab.md "The verdict on the ratio"). CUDA tensors are moved every round
    (placement.py), and one shared process showed no such offset on the GPU."""
    if not shared:
        return True
    timers = {s.prepared.case.timing.timer for s in case.sides.values()}
    return any(t is not Timer.CUDA_EVENT for t in timers)


def host_prior(m: Measurement, cached: AaCases, metric: str) -> OffsetPrior | None:
    """The offset variance pooled over a shared run's host-clock cases (gate/pooled.py), from each one's A/A
    twin (measured here, else cached): the bound of offsets_unknown borrows it. None in separate processes
    (CUDA cases and separate processes keep their own draws) and under pooled.MIN_CASES such cases."""
    if not m.shared:
        return None
    twins = [
        aa_noise(case, metric) or cached.get(case.case_id, {}).get(metric)
        for case in m.cases
        if has_metric(case, metric) and offsets_unknown(case, m.shared)
    ]
    return offset_prior([aa.mean_log for aa in twins if aa is not None and aa.rounds >= 2])


def gated_count(cases: Sequence[CaseRounds]) -> int:
    """m: the run's ratio comparisons (time for every paired case, speedup where both have a reference)."""
    return sum(has_metric(c, metric) for c in cases for metric in RATIO_METRICS)


def decide_case(
    case: CaseRounds, metric: str, aa: AaNoise | None, rule: RatioRule, with_detects: bool = True
) -> RatioDecision | None:
    """One pair's decision on this case's rounds (gate/ratio.py); None with too few rounds to judge."""
    stages = ratio_stages(case, metric)
    if not stages or len(stages[0]) < MIN_ROUNDS:
        return None
    return decide_ratio([s for s in stages if len(s) >= MIN_ROUNDS], aa, rule, with_detects)


def judge_case(
    case: CaseRounds,
    metric: str,
    cached: AaNoise | None,
    rule: RatioRule,
    fresh: Mapping[str, CaseRounds] | None = None,
) -> RatioDecision | None:
    """The verdict of one case and metric: the first pair's decision (its own A/A, else the cached one) and,
    for a call, the fresh pair's (`fresh`: the cases a fresh pair measured; None: none was measured yet, and
    one will be when `rule.fresh_pair`). A call no fresh pair measured is judged on the first pair alone."""
    aa = aa_noise(case, metric) or cached
    decision = decide_case(case, metric, aa, rule)
    if decision is None or not decision.called:
        return decision
    if fresh is None:
        return decision if rule.fresh_pair else on_one_pair(decision)
    again = fresh.get(case.case_id)
    second = None
    if again is not None and has_metric(again, metric):
        second = decide_case(again, metric, aa_noise(again, metric), rule)
    return with_fresh_pair(decision, second) if second is not None else on_one_pair(decision)
