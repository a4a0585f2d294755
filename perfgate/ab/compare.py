"""What the rounds say: per case, head against base -> comparison rows and findings (pure).

Time and, for cases timed against a reference in both trees, the speedup are judged on their per-round
ratios (gate/ratio.py), each one of the run's m gated comparisons sharing the false-alarm budget. Peak memory
is compared head against base like any counter (the catalogue's tolerance). A case one tree lacks is new
(head only) or removed (base only); a case whose first calls or output check failed on one side is not
comparable, with that side and the cause.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from perfgate.ab.aa import AaCases
from perfgate.ab.coordinator import CaseRounds, Measurement
from perfgate.ab.findings import ab_findings
from perfgate.ab.protocol import RoundSamples, Side
from perfgate.baseline.write import case_from_result
from perfgate.gate.compare import compare_metrics
from perfgate.gate.pooled import OffsetPrior, offset_prior
from perfgate.gate.ratio import (
    MIN_ROUNDS,
    AaNoise,
    RatioDecision,
    RatioRule,
    decide_ratio,
    on_one_pair,
    with_fresh_pair,
)
from perfgate.gate.static import StaticRule, compare_compiled, is_static
from perfgate.metrics import SPEEDUP_METRIC, STATIC_LAUNCHED, TIME_METRIC
from perfgate.model import (
    CaseResult,
    Comparison,
    Direction,
    GateResult,
    Timer,
    Verdict,
)
from perfgate.stats import ratio_ci, summarize

RATIO_METRICS = (TIME_METRIC, SPEEDUP_METRIC)
CALLS = (Verdict.REGRESSED, Verdict.IMPROVED)  # the verdicts a fresh pair of processes must repeat


@dataclass(frozen=True)
class AbRule:
    false_alarm_pct: float = 1.0  # the run's budget: P(an unchanged A/B gate fails) stays under this
    min_effect_pct: float = 1.0
    stages: int = 3  # 1 + confirmation stages
    strict: bool = False
    static: StaticRule = StaticRule()  # the static gate, head against base (gate/static.py)
    fresh_pair: bool = True  # a call is measured again by a fresh pair of processes (`ab_fresh_pair`)

    def for_comparisons(self, m: int, separate: bool = True, prior: OffsetPrior | None = None) -> RatioRule:
        """The ratio rule of one of the run's m comparisons; `separate`: base and head ran in processes of
        their own (False: threads of one shared process), which decides how process offsets are bounded;
        `prior`: the run's pooled offset variance that bound borrows (host_prior)."""
        return RatioRule(
            prior=prior if separate else None,
            alpha=self.false_alarm_pct / 100.0 / max(1, m),
            stages=self.stages,
            min_effect_pct=self.min_effect_pct,
            separate=separate,
            fresh_pair=self.fresh_pair,
        )


# --- per-round series ---------------------------------------------------------------------------------


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


# --- the whole run --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AbComparison:
    gate: GateResult
    head_results: tuple[CaseResult, ...]
    base_results: tuple[CaseResult, ...]
    decisions: dict[tuple[str, str], RatioDecision]  # (case id, metric) -> the decision
    aa_measured: AaCases  # the A/A measured in this run, for the cache


Results = Mapping[tuple[Side, str], CaseResult]  # (side, case id) -> that side's case


def side_results(m: Measurement) -> dict[tuple[Side, str], CaseResult]:
    """Each side's cases as CaseResults: every round's samples pooled (what the history stores)."""
    return {(side, c.case_id): _result(c, side) for c in m.cases for side in (Side.BASE, Side.HEAD) if side in c.sides}


def compare_ab(
    m: Measurement,
    cached: AaCases,
    rule: AbRule,
    results: Results | None = None,
    fail_on_profile_error: bool = False,
    fresh: Mapping[str, CaseRounds] | None = None,
    incomparable: Mapping[str, str] | None = None,
) -> AbComparison:
    """`results`: the sides' cases when something was added to them (profiler metrics); default
    side_results(m). `fresh`: called cases measured again by a fresh pair of processes (case id -> its
    rounds there): a call stands only where that pair makes it too (verdict.with_fresh_pair).
    `incomparable`: case id -> why it cannot be compared although both sides measured it (provenance.py):
    one not-comparable row instead of its verdicts."""
    results = results if results is not None else side_results(m)
    gated = gated_count(m.cases)
    rows: list[Comparison] = []
    decisions: dict[tuple[str, str], RatioDecision] = {}
    measured_aa: dict[str, dict[str, AaNoise]] = {}
    unmeasured = _why_unmeasured(m)  # once: per case it was cases x collect errors each time
    priors = {metric: host_prior(m, cached, metric) for metric in RATIO_METRICS}
    for case in m.cases:
        why = (incomparable or {}).get(case.case_id)
        if why is not None:
            rows.append(Comparison(case.case_id, TIME_METRIC, "ms", Direction.LOWER, Verdict.NOT_COMPARABLE, note=why))
            continue
        for metric in RATIO_METRICS:
            here = aa_noise(case, metric)
            if here is not None:
                measured_aa.setdefault(case.case_id, {})[metric] = here
            if not has_metric(case, metric):
                continue
            cached_aa = cached.get(case.case_id, {}).get(metric)
            separate = offsets_unknown(case, m.shared)
            ratio_rule = rule.for_comparisons(gated, separate, priors[metric])  # None unless shared (host_prior)
            decision = judge_case(case, metric, cached_aa, ratio_rule, fresh)
            if decision is not None:
                decisions[(case.case_id, metric)] = decision
                rows.append(_ratio_row(case, metric, decision, here is not None or cached_aa is not None))
        rows += _other_rows(case, results, unmeasured)
        rows += _compiled_rows(case, results, rule.static)
    head = tuple(r for (side, _), r in results.items() if side is Side.HEAD)
    base = tuple(r for (side, _), r in results.items() if side is Side.BASE)
    fail_on = {Verdict.REGRESSED, Verdict.BELOW_TARGET} | ({Verdict.PROFILE_FAILED} if fail_on_profile_error else set())
    gate = GateResult(
        comparisons=tuple(rows),
        current_env=m.environments.get(Side.HEAD),
        baseline_env=m.environments.get(Side.BASE),
        fail_on=frozenset(fail_on),
        strict=rule.strict,
        calibrated=True,
        explanations=static_explanations(rows),
    )
    gate = replace(gate, findings=tuple(ab_findings(m, gate, results, decisions)))
    return AbComparison(gate, head, base, decisions, measured_aa)


def _ratio_row(case: CaseRounds, metric: str, d: RatioDecision, with_aa: bool) -> Comparison:
    if d.suspect and d.change_pct > 0:  # the rounds ended while a regression could still be confirmed: not a pass
        d = replace(d, verdict=Verdict.INCONCLUSIVE)
    base, head = _pooled(case, Side.BASE, metric), _pooled(case, Side.HEAD, metric)
    stages = f" in {d.stages} stages" if d.stages > 1 else ""
    note = f"A/B: {d.rounds} rounds{stages}" + ("" if with_aa else ", no A/A")
    if d.wild_rounds:
        note += f"; {d.wild_rounds} wild round(s) set aside"
    if d.unrepeated:
        note += "; no fresh pair of processes measured it: judged on the first pair alone"
    if d.fresh is not None and d.first_pct is not None:
        again = "confirmed" if d.verdict in CALLS else "not confirmed"
        note += (
            f"; {again} by a fresh pair of processes ({_worse_word(metric, d.fresh.change_pct)}; first pair "
            f"{_worse_word(metric, d.first_pct)}; the ratio is both pairs')"
        )
    if d.gross:
        note += (
            f"; beyond the gross threshold ({d.threshold_pct:.0f}%) in both pairs of processes: a slowdown no "
            "process offset explains"
        )
    if d.process_pct is not None:
        note += f"; process offset {d.process_pct:.2f}% (sd, from {len(d.draws)} draw(s)) in the threshold"
    if metric == TIME_METRIC:
        return Comparison(
            case_id=case.case_id,
            metric=metric,
            unit="ms",
            direction=Direction.LOWER,
            verdict=d.verdict,
            baseline=base,
            current=head,
            change_pct=d.change_pct,
            ci_low_pct=d.ci_low_pct,
            ci_high_pct=d.ci_high_pct,
            threshold_pct=_finite(d.threshold_pct),
            noise_pct=d.noise_pct,
            detects_pct=d.detects_pct,
            note=note,
        )
    flip = _speedup_change  # the decision's + is "worse": a lower speedup
    reference = case.sides[Side.HEAD].prepared.case.speedup
    return Comparison(
        case_id=case.case_id,
        metric=metric,
        unit="x",
        direction=Direction.HIGHER,
        verdict=d.verdict,
        kernel=reference.reference if reference else "",
        baseline=base,
        current=head,
        change_pct=flip(d.change_pct),
        ci_low_pct=flip(d.ci_high_pct),
        ci_high_pct=flip(d.ci_low_pct),
        threshold_pct=_finite(d.threshold_pct),
        noise_pct=d.noise_pct,
        detects_pct=d.detects_pct,
        note=note,
    )


def _finite(pct: float) -> float | None:
    """A threshold nothing bounds (separate processes, no A/A and no fresh pair) is no number to show."""
    return pct if math.isfinite(pct) else None


def _worse_word(metric: str, worse_pct: float) -> str:
    """The fresh pair's change in the metric's own terms (time +: slower; speedup -: lower)."""
    change = worse_pct if metric == TIME_METRIC else _speedup_change(worse_pct)
    return f"{change:+.2f}%"


def _speedup_change(worse_pct: float) -> float:
    """A ratio `worse` % worse (base / head speedup) as the speedup's own % change."""
    return 100.0 * (1.0 / (1.0 + worse_pct / 100.0) - 1.0)


def _pooled(case: CaseRounds, side: Side, metric: str) -> float:
    rounds = case.sides[side].rounds
    if metric == TIME_METRIC:
        return statistics.median(v for r in rounds for v in r.samples_ms)
    refs = [v for r in rounds for v in r.reference_samples_ms]
    return statistics.median(refs) / statistics.median(v for r in rounds for v in r.samples_ms)


def _result(case: CaseRounds, side: Side) -> CaseResult:
    """A side's case as one CaseResult: every round's samples (the history stores both sides)."""
    sr = case.sides[side]
    skeleton = sr.prepared.case
    samples = [v for r in sr.rounds for v in r.samples_ms] or list(skeleton.samples_ms)
    refs = [v for r in sr.rounds for v in r.reference_samples_ms]
    speedup = skeleton.speedup
    metrics = tuple(mt for mt in skeleton.metrics if mt.name != SPEEDUP_METRIC)
    if refs and len(refs) == len(samples) and speedup is not None:
        median, lo, hi = ratio_ci(refs, samples)
        speedup = replace(speedup, reference_samples_ms=tuple(refs), median=median, ci_low=lo, ci_high=hi)
        metrics += (replace(next(mt for mt in skeleton.metrics if mt.name == SPEEDUP_METRIC), value=median),)
    timing = summarize(samples, skeleton.timing.timer, skeleton.bytes_moved, skeleton.flops)
    return replace(skeleton, timing=timing, samples_ms=tuple(samples), metrics=metrics, speedup=speedup)


def _why_unmeasured(m: Measurement) -> dict[tuple[Side, str], str]:
    """(side, node id) -> how that side's test ended without measuring (failed, skipped, errored), and for
    the tests of a file one side could not collect (it does not import there), why."""
    why = {
        (side, t.nodeid): f"{side.value}: test {t.outcome.value}" + (f": {t.reason}" if t.reason else "")
        for side, tests in m.unmeasured.items()
        for t in tests
    }
    for side, errors in m.collect_errors.items():
        for case in m.cases:
            for where, error in errors:
                if where and (case.nodeid == where or case.nodeid.startswith(where + "::")):
                    why.setdefault((side, case.nodeid), f"{side.value}: {where} could not be collected: {error}")
    return why


def _other_rows(case: CaseRounds, results: Results, unmeasured: Mapping[tuple[Side, str], str]) -> list[Comparison]:
    """Memory and profiler metrics (head against base), the head's speedup target, one-sided and failed
    cases. A case one side did not reach because its test failed or was skipped there is not comparable,
    not new or removed."""
    cid = case.case_id
    failed_profiles = [
        Comparison(cid, "profile", "", Direction.LOWER, Verdict.PROFILE_FAILED, note=f"{s.value}: {e}")
        for s in (Side.BASE, Side.HEAD)
        if (s, cid) in results
        for e in results[(s, cid)].profile_errors
    ]
    return failed_profiles + _case_rows(case, results, unmeasured)


def _case_rows(case: CaseRounds, results: Results, unmeasured: Mapping[tuple[Side, str], str]) -> list[Comparison]:
    cid = case.case_id
    for side, error in case.failed.items():
        return [
            Comparison(cid, TIME_METRIC, "ms", Direction.LOWER, Verdict.NOT_COMPARABLE, note=f"{side.value}: {error}")
        ]
    if Side.HEAD in case.sides and Side.BASE not in case.sides:
        why = unmeasured.get((Side.BASE, case.nodeid))
        return [
            Comparison(
                cid,
                TIME_METRIC,
                "ms",
                Direction.LOWER,
                Verdict.NOT_COMPARABLE if why else Verdict.NEW,
                current=results[(Side.HEAD, cid)].timing.median_ms,
                note=why or "new: not in the base",
            )
        ]
    if Side.BASE in case.sides and Side.HEAD not in case.sides:  # the tail's findings judge it (allow_missing)
        why = unmeasured.get((Side.HEAD, case.nodeid))
        return [
            Comparison(
                cid,
                TIME_METRIC,
                "ms",
                Direction.LOWER,
                Verdict.MISSING,
                baseline=results[(Side.BASE, cid)].timing.median_ms,
                note=why or "removed: not in the head",
            )
        ]
    if not case.paired:
        return []
    head, base = results[(Side.HEAD, cid)], results[(Side.BASE, cid)]
    rows = [
        r for r in compare_metrics(head, case_from_result(base), skip=(SPEEDUP_METRIC,)) if r.threshold_pct is not None
    ]
    return rows + _speedup_target(head)


def _compiled_rows(case: CaseRounds, results: Results, static: StaticRule) -> list[Comparison]:
    """A case not measured because both sides run the same code: its one row says so. Every paired case: the
    static gate, head's compiled kernels against the base's."""
    cid = case.case_id
    if not case.paired or (Side.HEAD, cid) not in results or (Side.BASE, cid) not in results:
        return []
    head, base = results[(Side.HEAD, cid)], results[(Side.BASE, cid)]
    rows = compare_compiled(cid, base.compiled, head.compiled, static)
    if case.same_code:
        rows.insert(
            0,
            Comparison(
                cid,
                TIME_METRIC,
                "ms",
                Direction.LOWER,
                Verdict.UNCHANGED,
                note=f"unchanged (same code): {case.same_code}; not measured",
                gated=False,
            ),
        )
    return rows


def static_explanations(rows: Sequence[Comparison]) -> dict[str, tuple[Comparison, ...]]:
    """Per case whose time or speedup regressed: the static changes that came with it (head against base)."""
    regressed = {c.case_id for c in rows if c.verdict is Verdict.REGRESSED and c.metric in RATIO_METRICS}
    out: dict[str, list[Comparison]] = {}
    for c in rows:
        if c.case_id in regressed and is_static(c.metric) and (c.baseline != c.current or c.metric == STATIC_LAUNCHED):
            out.setdefault(c.case_id, []).append(c)
    return {cid: tuple(found) for cid, found in out.items()}


def _speedup_target(res: CaseResult) -> list[Comparison]:
    """The head's absolute target: its speedup's upper confidence bound must reach min_speedup."""
    target, s = res.thresholds.min_speedup, res.speedup
    if target is None or s is None:
        return []
    verdict = Verdict.BELOW_TARGET if s.ci_high < target else Verdict.UNCHANGED
    note = f"{s.median:.2f}x vs {s.reference} (CI {s.ci_low:.2f}-{s.ci_high:.2f}), needs >= {target:g}x"
    return [
        Comparison(
            res.case_id,
            "min_speedup",
            "x",
            Direction.HIGHER,
            verdict,
            kernel=s.reference,
            baseline=target,
            current=s.median,
            note=note,
        )
    ]
