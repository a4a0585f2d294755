"""Results + baseline + thresholds -> per-metric comparisons -> the gate decision (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from perfgate.baseline import Baseline, BaselineCase
from perfgate.metrics import TIME_METRIC, spec_for
from perfgate.model import (CaseResult, Comparison, Direction, Environment, GateResult, Metric, MetricKind,
                            Verdict)
from perfgate.settings import MarkerOptions, Settings
from perfgate.stats import mann_whitney_p, median_change_ci_pct, percent_change

# Metrics named in an explanation even when they did not move: "DRAM bytes unchanged" rules causes out.
EXPLAIN_ALWAYS = ("launch__registers_per_thread", "sm__warps_active.avg.pct_of_peak_sustained_active",
                  "dram__bytes_read.sum", "nsys.launches_per_call")


def compare_run(results: Sequence[CaseResult], baseline: Baseline | None, current_env: Environment,
                settings: Settings, markers: Mapping[str, MarkerOptions] | None = None) -> GateResult:
    markers = markers or {}
    comparable = baseline is None or settings.allow_env_mismatch or \
        baseline.environment.comparability_key() == current_env.comparability_key()
    rows: list[Comparison] = []
    explanations: dict[str, tuple[Comparison, ...]] = {}
    for res in sorted(results, key=lambda r: r.case_id):
        base = baseline.cases.get(res.case_id) if baseline else None
        marker = markers.get(res.case_id)
        if base is None:
            rows.append(_unpaired(res.case_id, Verdict.NEW, current=res.timing.median_ms,
                                  note="no baseline: run with --perfgate-update-baseline to accept"))
        elif not comparable:
            rows.append(_unpaired(res.case_id, Verdict.NOT_COMPARABLE, baseline=base.median_ms,
                                  current=res.timing.median_ms, note=_env_note(baseline.environment, current_env)))
        else:
            time_row = compare_samples(res, base, settings, marker)
            metric_rows = compare_metrics(res, base, settings, marker)
            rows.append(time_row)
            rows += [r for r in metric_rows if r.threshold_pct is not None]  # derived ones only explain
            if time_row.verdict is Verdict.REGRESSED and metric_rows:
                explanations[res.case_id] = explain(metric_rows)
        rows += [_unpaired(res.case_id, Verdict.PROFILE_FAILED, note=e, metric="profile") for e in res.profile_errors]
    if baseline is not None:
        seen = {r.case_id for r in results}
        rows += [_unpaired(cid, Verdict.MISSING, baseline=b.median_ms, note="in the baseline, not run this time")
                 for cid, b in sorted(baseline.cases.items()) if cid not in seen]
    fail_on = {Verdict.REGRESSED} | ({Verdict.PROFILE_FAILED} if settings.fail_on_profile_error else set())
    return GateResult(comparisons=tuple(rows), current_env=current_env,
                      baseline_env=baseline.environment if baseline else None,
                      explanations=explanations, fail_on=frozenset(fail_on))


def _unpaired(case_id: str, verdict: Verdict, baseline: float | None = None, current: float | None = None,
              note: str = "", metric: str = TIME_METRIC) -> Comparison:
    return Comparison(case_id=case_id, metric=metric, unit="ms", direction=Direction.LOWER, verdict=verdict,
                      baseline=baseline, current=current, note=note)


def _env_note(base: Environment, cur: Environment) -> str:
    return (f"baseline measured on {base.device_name} ({base.device_kind}), this run on {cur.device_name} "
            f"({cur.device_kind}); pass --perfgate-allow-env-mismatch to compare anyway")


def compare_samples(res: CaseResult, base: BaselineCase, settings: Settings,
                    marker: MarkerOptions | None) -> Comparison:
    """Time verdict: needs both a significant rank test and a change beyond the threshold."""
    threshold = settings.threshold_for(res.case_id, TIME_METRIC, marker)
    p = mann_whitney_p(base.samples_ms, res.samples_ms)
    change = percent_change(base.median_ms, res.timing.median_ms)
    lo, hi = median_change_ci_pct(base.samples_ms, res.samples_ms)
    verdict = Verdict.UNCHANGED
    if change is not None and p < threshold.alpha:
        if change > threshold.pct:
            verdict = Verdict.REGRESSED
        elif change < -threshold.pct:
            verdict = Verdict.IMPROVED
    return Comparison(case_id=res.case_id, metric=TIME_METRIC, unit="ms", direction=Direction.LOWER,
                      verdict=verdict, baseline=base.median_ms, current=res.timing.median_ms, change_pct=change,
                      ci_low_pct=lo, ci_high_pct=hi, p_value=p, threshold_pct=threshold.pct)


def compare_metrics(res: CaseResult, base: BaselineCase, settings: Settings,
                    marker: MarkerOptions | None) -> list[Comparison]:
    """Profiler metrics, matched by (source, kernel, name); ungated ones are compared for explanations."""
    before = {(m.source, m.kernel, m.name): m for m in base.metrics}
    rows = []
    for m in res.metrics:
        old = before.get((m.source, m.kernel, m.name))
        spec = spec_for(m.name)
        if old is None or spec is None or m.source == "timing":
            continue
        rows.append(_metric_row(res.case_id, old, m, spec.direction, spec.kind,
                                settings.threshold_for(res.case_id, m.name, marker).pct))
    return rows


# Percent-valued metrics (hit rates, occupancy, speed-of-light) move by a fraction of a point between
# runs; near zero that is a huge relative change (0.0% -> 0.01% is "+inf%"). Below this many points the
# change is noise whatever its ratio.
PERCENT_POINTS_FLOOR = 1.0


def _metric_row(case_id: str, old: Metric, new: Metric, direction: Direction, kind: MetricKind,
                threshold_pct: float) -> Comparison:
    change = percent_change(old.value, new.value)
    worse = _worse_by(old.value, new.value, change, direction)
    if new.unit == "%" and abs(new.value - old.value) < PERCENT_POINTS_FLOOR:
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


def explain(metric_rows: Sequence[Comparison]) -> tuple[Comparison, ...]:
    """What moved with a time regression: counters that changed first (registers, spills, theoretical
    occupancy: the usual causes), then measured metrics that regressed, then the always-shown ones
    that held still ("DRAM bytes unchanged" rules a cause out)."""
    def rank(c: Comparison) -> tuple[int, int, float]:
        spec = spec_for(c.metric)
        kind_order = {MetricKind.COUNTER: 0, MetricKind.MEASURED: 1}.get(spec.kind, 2) if spec else 2
        magnitude = abs(c.change_pct) if c.change_pct is not None else float("inf")
        return (c.verdict is not Verdict.REGRESSED, kind_order, -magnitude)

    moved = [r for r in metric_rows if r.verdict is not Verdict.UNCHANGED]
    moved.sort(key=rank)
    steady = [r for r in metric_rows if r not in moved and r.metric in EXPLAIN_ALWAYS]
    return tuple(moved[:8] + steady[:4])
