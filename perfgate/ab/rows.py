"""Per case, its rows: the ratio decisions (ratios.py) as time and speedup rows, memory and profiler
metrics head against base, the head's speedup target, one-sided, failed and same-code cases, the static gate
(pure). A case one tree lacks is new (head only) or removed (base only); a case whose first calls or output
check failed on one side is not comparable, with that side and the cause.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace

from perfgate.ab.protocol import Side
from perfgate.ab.ratios import CALLS, RATIO_METRICS
from perfgate.ab.rounds import CaseRounds
from perfgate.baseline.write import case_from_result
from perfgate.gate.compare import compare_metrics
from perfgate.gate.ratio import RatioDecision
from perfgate.gate.static import StaticRule, compare_compiled, is_static
from perfgate.metrics import SPEEDUP_METRIC, STATIC_LAUNCHED, TIME_METRIC
from perfgate.model import CaseResult, Comparison, Direction, Verdict

Results = Mapping[tuple[Side, str], CaseResult]  # (side, case id) -> that side's case


def ratio_row(case: CaseRounds, metric: str, d: RatioDecision, with_aa: bool) -> Comparison:
    """The row of one case's time or speedup from its ratio decision: pooled medians, the change in the
    metric's own terms (speedup: + is higher), and a note of how it was reached."""
    if d.suspect and d.change_pct > 0:  # the rounds ended while a regression could still be confirmed: not a pass
        d = replace(d, verdict=Verdict.INCONCLUSIVE)
    base, head = _pooled(case, Side.BASE, metric), _pooled(case, Side.HEAD, metric)
    note = _ratio_note(metric, d, with_aa)
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


def _ratio_note(metric: str, d: RatioDecision, with_aa: bool) -> str:
    """How a ratio verdict was reached: rounds and stages, wild rounds, the fresh pair, the gross rule, the
    process offset."""
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
    return note


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


def other_rows(case: CaseRounds, results: Results, unmeasured: Mapping[tuple[Side, str], str]) -> list[Comparison]:
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
    for present, absent in ((Side.HEAD, Side.BASE), (Side.BASE, Side.HEAD)):
        if present in case.sides and absent not in case.sides:
            return [_one_sided(cid, present, results, unmeasured.get((absent, case.nodeid)))]
    if not case.paired:
        return []
    head, base = results[(Side.HEAD, cid)], results[(Side.BASE, cid)]
    rows = [
        r for r in compare_metrics(head, case_from_result(base), skip=(SPEEDUP_METRIC,)) if r.threshold_pct is not None
    ]
    return rows + _speedup_target(head)


def _one_sided(cid: str, present: Side, results: Results, why: str | None) -> Comparison:
    """A case one side has: new (head only), removed (base only: the tail's findings judge it, allow_missing),
    or not comparable where the other side's test ended without measuring it (`why`)."""
    value = results[(present, cid)].timing.median_ms
    if present is Side.HEAD:
        verdict = Verdict.NOT_COMPARABLE if why else Verdict.NEW
        return Comparison(
            cid, TIME_METRIC, "ms", Direction.LOWER, verdict, current=value, note=why or "new: not in the base"
        )
    note = why or "removed: not in the head"
    return Comparison(cid, TIME_METRIC, "ms", Direction.LOWER, Verdict.MISSING, baseline=value, note=note)


def compiled_rows(case: CaseRounds, results: Results, static: StaticRule) -> list[Comparison]:
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
