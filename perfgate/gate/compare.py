"""Results + baseline -> per-metric comparisons (pure). Each case is gated on the thresholds stored with
it (resolved when it was measured), so the same stored run always gets the same verdicts."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import replace

from perfgate.baseline import Baseline, BaselineCase
from perfgate.config.settings import Settings
from perfgate.gate.decision import (
    MIN_CALIBRATION_PROCESSES,
    BaselineTiming,
    DecisionSettings,
    TimeDecision,
    decide_time,
    pooled,
)
from perfgate.gate.thresholds import metric_threshold_pct
from perfgate.metrics import SPEEDUP_METRIC, TIME_METRIC, spec_for
from perfgate.model import CaseResult, Comparison, Direction, Environment, GateResult, Metric, MetricKind, Verdict
from perfgate.stats import median_change_ci_pct, percent_change

# Metrics named in an explanation even when they did not move: "DRAM bytes unchanged" rules causes out.
EXPLAIN_ALWAYS = ("launch__registers_per_thread", "sm__warps_active.avg.pct_of_peak_sustained_active",
                  "dram__bytes_read.sum", "nsys.launches_per_call")
# Percent-valued metrics (hit rates, occupancy, speed-of-light) move by a fraction of a point between
# runs; near zero that is a huge relative change (0.0% -> 0.01% is "+inf%"). Below this many points the
# change is noise whatever its ratio.
PERCENT_POINTS_FLOOR = 1.0


def decision_settings(settings: Settings) -> DecisionSettings:
    return DecisionSettings(alpha=settings.alpha, confirm_alpha=settings.confirm_alpha,
                            noise_floor_pct=settings.noise_floor_pct)


def comparable(baseline: Baseline | None, current_env: Environment, settings: Settings) -> bool:
    return baseline is None or settings.allow_env_mismatch or \
        baseline.environment.comparability_key() == current_env.comparability_key()


def compare_run(results: Sequence[CaseResult], baseline: Baseline | None, current_env: Environment,
                settings: Settings, intervals: bool = True) -> GateResult:
    """`intervals=False` skips the change intervals (display only) where only verdicts are needed."""
    env_ok = comparable(baseline, current_env, settings)
    rows: list[Comparison] = []
    explanations: dict[str, tuple[Comparison, ...]] = {}
    for res in sorted(results, key=lambda r: r.case_id):
        base = baseline.cases.get(res.case_id) if baseline else None
        if base is None:
            rows.append(_unpaired(res.case_id, Verdict.NEW, current=res.timing.median_ms,
                                  note="no baseline: run perfgate calibrate or --perfgate-update-baseline to accept"))
        elif not env_ok or base.timer is not res.timing.timer:
            assert baseline is not None
            rows.append(_unpaired(res.case_id, Verdict.NOT_COMPARABLE, baseline=base.median_ms,
                                  current=res.timing.median_ms, note=_env_note(baseline.environment, current_env,
                                                                               base, res)))
        else:
            time_row = compare_time(res, base, settings, intervals)
            speedup_row = compare_speedup(res, base, settings)
            metric_rows = compare_metrics(res, base, skip=(SPEEDUP_METRIC,) if speedup_row else ())
            rows.append(time_row)
            if speedup_row is not None:
                rows.append(speedup_row)
            rows += [r for r in metric_rows if r.threshold_pct is not None]  # derived ones only explain
            why = explain(metric_rows) if time_row.verdict is Verdict.REGRESSED else ()
            if why:  # nothing moved and nothing always-shown: no "why" line at all rather than an empty one
                explanations[res.case_id] = why
        rows += _speedup_target(res)
        rows += [_unpaired(res.case_id, Verdict.PROFILE_FAILED, note=e, metric="profile") for e in res.profile_errors]
    if baseline is not None:
        seen = {r.case_id for r in results}
        rows += [_unpaired(cid, Verdict.MISSING, baseline=b.median_ms, note="in the baseline, not run this time")
                 for cid, b in sorted(baseline.cases.items()) if cid not in seen]
    fail_on = {Verdict.REGRESSED, Verdict.BELOW_TARGET} | (
        {Verdict.PROFILE_FAILED} if settings.fail_on_profile_error else set())
    return GateResult(comparisons=tuple(rows), current_env=current_env,
                      baseline_env=baseline.environment if baseline else None,
                      explanations=explanations, fail_on=frozenset(fail_on),
                      calibrated=bool(baseline and baseline.calibrated))


def _unpaired(case_id: str, verdict: Verdict, baseline: float | None = None, current: float | None = None,
              note: str = "", metric: str = TIME_METRIC) -> Comparison:
    return Comparison(case_id=case_id, metric=metric, unit="ms", direction=Direction.LOWER, verdict=verdict,
                      baseline=baseline, current=current, note=note)


def _env_note(base_env: Environment, cur: Environment, base: BaselineCase, res: CaseResult) -> str:
    if base.timer is not res.timing.timer and base_env.comparability_key() == cur.comparability_key():
        return f"baseline timed with {base.timer.value}, this run with {res.timing.timer.value}"
    return (f"baseline measured on {base_env.device_name} ({base_env.device_kind}), this run on {cur.device_name} "
            f"({cur.device_kind}); pass --perfgate-allow-env-mismatch to compare anyway")


def compare_time(res: CaseResult, base: BaselineCase, settings: Settings, intervals: bool = True) -> Comparison:
    """The time verdict (gate/decision.py) with the interval of this run's change for the summary."""
    d = decide_time(base.timing(), res.process_medians_ms, res.samples_ms, res.thresholds,
                    decision_settings(settings))
    ci = median_change_ci_pct(base.samples_ms, res.samples_ms) if intervals else None
    lo, hi = ci if ci is not None else (None, None)
    current = pooled(res.process_medians_ms)
    note = "calibrated" if d.calibrated else "uncalibrated baseline"
    return Comparison(case_id=res.case_id, metric=TIME_METRIC, unit="ms", direction=Direction.LOWER,
                      verdict=d.verdict, baseline=base.median_ms, current=current, change_pct=d.change_pct,
                      ci_low_pct=lo, ci_high_pct=hi, p_value=d.p_value, threshold_pct=d.threshold_pct,
                      noise_pct=d.noise_pct, score=d.score, processes=d.processes, note=note)


def speedup_decision(res: CaseResult, base_speedups: Sequence[float], decision: DecisionSettings) -> TimeDecision:
    """The speedup judged like time: its reciprocal (candidate time / reference time, measured side by side)
    against the calibration processes' reciprocals. Clocks and power state cancel out of the ratio, so it
    is the steadier signal for compute-bound kernels (docs/decision-rule.md)."""
    inverse = tuple(1.0 / s for s in base_speedups)
    explicit = res.thresholds.metric_pct(SPEEDUP_METRIC)
    thresholds = replace(res.thresholds, time_pct=explicit if explicit is not None else res.thresholds.time_pct,
                         time_pct_explicit=explicit is not None)
    timing = BaselineTiming(statistics.median(inverse), (), inverse, res.timing.timer)
    return decide_time(timing, [1.0 / s for s in res.process_speedups], (), thresholds, decision)


def compare_speedup(res: CaseResult, base: BaselineCase, settings: Settings) -> Comparison | None:
    """A calibrated speedup comparison, when both the run and the calibrated baseline have one."""
    if res.speedup is None or len(base.process_speedups) < MIN_CALIBRATION_PROCESSES:
        return None
    d = speedup_decision(res, base.process_speedups, decision_settings(settings))
    centre = statistics.median(base.process_speedups)
    current = 1.0 / pooled([1.0 / s for s in res.process_speedups])
    return Comparison(case_id=res.case_id, metric=SPEEDUP_METRIC, unit="x", direction=Direction.HIGHER,
                      verdict=d.verdict, kernel=res.speedup.reference, baseline=centre, current=current,
                      change_pct=percent_change(centre, current), threshold_pct=d.threshold_pct,
                      noise_pct=d.noise_pct, score=d.score, processes=d.processes, note="calibrated")


def compare_metrics(res: CaseResult, base: BaselineCase, skip: tuple[str, ...] = ()) -> list[Comparison]:
    """Profiler, memory and (uncalibrated) speedup metrics, matched by (source, kernel, name); ungated ones
    are compared for explanations."""
    before = {(m.source, m.kernel, m.name): m for m in base.metrics}
    rows = []
    for m in res.metrics:
        old = before.get((m.source, m.kernel, m.name))
        spec = spec_for(m.name)
        if old is None or spec is None or m.source == "timing" or m.name in skip:
            continue
        rows.append(_metric_row(res.case_id, old, m, spec.direction, spec.kind,
                                metric_threshold_pct(res.thresholds, m.name)))
    return rows


def _metric_row(case_id: str, old: Metric, new: Metric, direction: Direction, kind: MetricKind,
                threshold_pct: float) -> Comparison:
    change = percent_change(old.value, new.value)
    worse = _worse_by(old.value, new.value, change, direction)
    spec = spec_for(new.name)
    floor = PERCENT_POINTS_FLOOR if new.unit == "%" else (spec.floor if spec else 0.0)
    if abs(new.value - old.value) < floor:
        worse = 0.0
    verdict = Verdict.UNCHANGED
    if kind is not MetricKind.DERIVED:
        if worse is not None and worse > threshold_pct + 1e-9:
            verdict = Verdict.REGRESSED
        elif worse is not None and -worse > threshold_pct + 1e-9:
            verdict = Verdict.IMPROVED
    return Comparison(case_id=case_id, metric=new.name, unit=new.unit, direction=direction, verdict=verdict,
                      kernel=new.kernel, baseline=old.value, current=new.value, change_pct=change,
                      threshold_pct=threshold_pct if kind is not MetricKind.DERIVED else None, note=new.source)


def _worse_by(old: float, new: float, change: float | None, direction: Direction) -> float | None:
    """Percent by which new is worse than old (negative = better); 0 -> >0 on a lower-is-better
    counter (spills appearing) counts as infinitely worse."""
    if change is None:
        if new == old:
            return 0.0
        bad = new > old if direction is Direction.LOWER else new < old
        return float("inf") if bad else float("-inf")
    return change if direction is Direction.LOWER else -change


def _speedup_target(res: CaseResult) -> list[Comparison]:
    """The absolute target: the speedup's upper confidence bound must reach min_speedup."""
    target = res.thresholds.min_speedup
    s = res.speedup
    if target is None or s is None:
        return []
    verdict = Verdict.BELOW_TARGET if s.ci_high < target else Verdict.UNCHANGED
    return [Comparison(case_id=res.case_id, metric="min_speedup", unit="x", direction=Direction.HIGHER,
                       verdict=verdict, kernel=s.reference, baseline=target, current=s.median,
                       note=f"{s.median:.2f}x vs {s.reference} (CI {s.ci_low:.2f}-{s.ci_high:.2f}), "
                            f"needs >= {target:g}x")]


def explain(metric_rows: Sequence[Comparison]) -> tuple[Comparison, ...]:
    """What moved with a time regression: counters that changed first (registers, spills, theoretical
    occupancy: the usual causes), then measured metrics that regressed, then the always-shown ones
    that held still ("DRAM bytes unchanged" rules a cause out)."""
    def rank(c: Comparison) -> tuple[bool, int, float]:
        spec = spec_for(c.metric)
        kind_order = {MetricKind.COUNTER: 0, MetricKind.MEASURED: 1}.get(spec.kind, 2) if spec else 2
        magnitude = abs(c.change_pct) if c.change_pct is not None else float("inf")
        return (c.verdict is not Verdict.REGRESSED, kind_order, -magnitude)

    moved = [r for r in metric_rows if r.verdict is not Verdict.UNCHANGED]
    moved.sort(key=rank)
    steady = [r for r in metric_rows if r not in moved and r.metric in EXPLAIN_ALWAYS]
    return tuple(moved[:8] + steady[:4])
