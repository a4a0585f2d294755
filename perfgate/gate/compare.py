"""Results + baseline -> per-metric comparisons (pure). Each case is gated on the thresholds stored with
it (resolved when it was measured, noise included), so the same stored run always gets the same verdicts.

One gated test per case: its speedup when it has a reference (clocks and process state cancel in the
ratio; its time is then reported, not gated, unless `gate_time_with_reference`), else its time in SM cycles
when it is compute-bound (gate/bottleneck.py: the power cap moves the clock, not the cycles), else its time;
the measure not gated is reported beside it with the reason. The run's
false-alarm budget is divided over these tests (gate/decision.py). Memory and profiler counters are
compared with tolerances; a memory regression, a speedup below its target and an improvement follow the
same confirmation as a time regression: every process must show it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from perfgate.baseline import Baseline, BaselineCase
from perfgate.config.settings import Settings
from perfgate.gate.bottleneck import MeasureChoice, choose_measure
from perfgate.gate.common import centred_rank, common_shift
from perfgate.gate.cycles import compare_cycles
from perfgate.gate.decision import MAX_STAGES, Decision, Rule, decide, per_test_alpha
from perfgate.gate.mode_share import ModeShare, guarded, run_mode_share
from perfgate.gate.noise import estimate_noise, noise_floor
from perfgate.gate.static import LAUNCHED, compare_compiled, static_rule
from perfgate.gate.thresholds import metric_threshold_pct
from perfgate.gate.unseen import mode_rows
from perfgate.metrics import PEAK_ALLOCATED, PEAK_HOST, SPEEDUP_METRIC, TIME_METRIC, spec_for
from perfgate.model import (
    CaseResult,
    CommonShift,
    Comparison,
    Direction,
    Environment,
    GatedMeasure,
    GateResult,
    Metric,
    MetricKind,
    NoiseEstimate,
    Verdict,
)
from perfgate.stats import median_change_ci_pct, percent_change

# Metrics named in an explanation even when they did not move: "DRAM bytes unchanged" rules causes out.
EXPLAIN_ALWAYS = (
    "launch__registers_per_thread",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "dram__bytes_read.sum",
    "nsys.launches_per_call",
)
# Percent-valued metrics (hit rates, occupancy, speed-of-light) move by a fraction of a point between
# runs; near zero that is a huge relative change (0.0% -> 0.01% is "+inf%"). Below this many points the
# change is noise whatever its ratio.
PERCENT_POINTS_FLOOR = 1.0
MEMORY_METRICS = (PEAK_ALLOCATED, PEAK_HOST)  # re-measured by confirmation processes


def comparable(baseline: Baseline | None, current_env: Environment, settings: Settings) -> bool:
    return baseline is None or settings.allow_env_mismatch or baseline.environment.comparable_with(current_env)


def gated_tests(results: Sequence[CaseResult], baseline: Baseline | None, settings: Settings) -> int:
    """How many tests the run's false-alarm budget is divided over: one per compared case, two where a
    case with a reference also has its time gated."""
    if baseline is None:
        return 0
    per_case = 2 if settings.gate_time_with_reference else 1
    return sum(
        per_case if _speedup_values(r, baseline.cases[r.case_id]) else 1 for r in results if r.case_id in baseline.cases
    )


def compare_run(
    results: Sequence[CaseResult],
    baseline: Baseline | None,
    current_env: Environment,
    settings: Settings,
    intervals: bool = True,
) -> GateResult:
    """`intervals=False` skips the within-run change intervals (display only) where only verdicts matter."""
    env_ok = comparable(baseline, current_env, settings)
    rows: list[Comparison] = []
    explanations: dict[str, tuple[Comparison, ...]] = {}
    alpha = per_test_alpha(settings.false_alarm_pct, gated_tests(results, baseline, settings))
    rule = static_rule(settings)
    shift = run_shift(results, baseline, current_env, settings) if env_ok else None
    modes = run_mode_share(results, baseline) if env_ok else None  # other cases' windows: gate/mode_share.py
    for res in sorted(results, key=lambda r: r.case_id):
        base = baseline.cases.get(res.case_id) if baseline else None
        if base is None:
            rows.append(
                _unpaired(
                    res.case_id,
                    Verdict.NEW,
                    current=res.timing.median_ms,
                    note="no baseline: run perfgate calibrate or --perfgate-update-baseline to accept",
                )
            )
        elif not env_ok or base.timer is not res.timing.timer:
            assert baseline is not None
            rows.append(
                _unpaired(
                    res.case_id,
                    Verdict.NOT_COMPARABLE,
                    baseline=base.time_ms,
                    current=res.timing.median_ms,
                    note=_env_note(baseline.environment, current_env, base, res),
                )
            )
        else:
            speedup_row = compare_speedup(res, base, settings, alpha)
            choice = choose_measure(res, base, current_env.device_name, settings)
            on_cycles = speedup_row is None and choice.measure is GatedMeasure.CYCLES
            time_gated = (speedup_row is None and not on_cycles) or settings.gate_time_with_reference
            time_row = compare_time(
                res, base, settings, alpha, intervals, gated=time_gated, shift=shift, choice=choice, modes=modes
            )
            explicit = res.thresholds.time_pct if res.thresholds.time_pct_explicit else None
            reason = choice.reason if speedup_row is None else "the speedup is gated"
            rule_now = _rule(res, settings, alpha, explicit)
            cycles_row = compare_cycles(res, base, settings, rule_now, on_cycles, reason, shift if on_cycles else None)
            metric_rows = compare_metrics(res, base, skip=(SPEEDUP_METRIC,), stages=1 + settings.confirm_runs)
            static_rows = compare_compiled(res.case_id, base.compiled, res.compiled, rule)
            rows.append(time_row)
            rows += [r for r in (cycles_row, speedup_row) if r is not None]
            rows += [r for r in metric_rows if r.threshold_pct is not None]  # derived ones only explain
            rows += static_rows
            timed = (time_row, cycles_row, speedup_row)
            regressed = any(r.verdict is Verdict.REGRESSED and r.gated for r in timed if r)
            regressed = regressed or time_row.verdict is Verdict.REGRESSED
            why = explanation(static_rows, metric_rows, res) + mode_rows(res, base, timed) if regressed else ()
            if why:  # nothing moved and nothing always-shown: no "why" line at all rather than an empty one
                explanations[res.case_id] = why
        rows += _speedup_target(res, stages=1 + settings.confirm_runs)
        rows += [_unpaired(res.case_id, Verdict.PROFILE_FAILED, note=e, metric="profile") for e in res.profile_errors]
    if baseline is not None:
        seen = {r.case_id for r in results}
        rows += [
            _unpaired(cid, Verdict.MISSING, baseline=b.time_ms, note="in the baseline, not run this time")
            for cid, b in sorted(baseline.cases.items())
            if cid not in seen
        ]
    fail_on = {Verdict.REGRESSED, Verdict.BELOW_TARGET} | (
        {Verdict.PROFILE_FAILED} if settings.fail_on_profile_error else set()
    )
    return GateResult(
        comparisons=tuple(rows),
        current_env=current_env,
        baseline_env=baseline.environment if baseline else None,
        explanations=explanations,
        fail_on=frozenset(fail_on),
        calibrated=bool(baseline and baseline.calibrated),
        common_shift=shift,
    )


def run_shift(
    results: Sequence[CaseResult], baseline: Baseline | None, env: Environment, settings: Settings
) -> CommonShift | None:
    """The run's common-mode shift (gate/common.py) over its calibrated cases' first processes, each in the measure
    it is gated on: time, or cycles for a compute-bound case (its time follows the SM clock, a driver update
    moves its cycles)."""
    if baseline is None:
        return None
    changes, ranks = {}, {}
    for res in results:
        base = baseline.cases.get(res.case_id)
        if base is None or not base.calibrated or base.timer is not res.timing.timer:
            continue
        if _speedup_values(res, base) and not settings.gate_time_with_reference:
            continue  # gated on its speedup, where a shared shift cancels
        if choose_measure(res, base, env.device_name, settings).measure is GatedMeasure.CYCLES:
            values, now, resolved = base.cycle_values(), res.process_mcycles[0], res.thresholds.cycles_noise
        else:
            values, now, resolved = base.time_values(), res.timing.median_ms, res.thresholds.time_noise
        centre = sum(values) / len(values)
        noise = _noise(resolved, values, res, settings)
        if noise is not None:
            unit = noise.noise_pct * math.sqrt(1.0 + 1.0 / len(values))
            # against the calibration's median, not its mean (the centre): with two modes (40% of processes 3%
            # slow) the mean sits between them, every process lands off it, and the median of the cases'
            # changes is the fast mode's distance from the mean, a "shift" of unchanged code; a step moves both
            changes[res.case_id] = (100.0 * (now - statistics.median(values)) / centre, unit)
            ranks[res.case_id] = centred_rank(now, values)
    return common_shift(changes, settings.min_effect_pct, baseline.environment, env, ranks)


def _unpaired(
    case_id: str,
    verdict: Verdict,
    baseline: float | None = None,
    current: float | None = None,
    note: str = "",
    metric: str = TIME_METRIC,
) -> Comparison:
    return Comparison(
        case_id=case_id,
        metric=metric,
        unit="ms",
        direction=Direction.LOWER,
        verdict=verdict,
        baseline=baseline,
        current=current,
        note=note,
    )


def _env_note(base_env: Environment, cur: Environment, base: BaselineCase, res: CaseResult) -> str:
    if base.timer is not res.timing.timer and base_env.comparable_with(cur):
        return f"baseline timed with {base.timer.value}, this run with {res.timing.timer.value}"
    return (
        f"baseline measured on {base_env.device_name} ({base_env.device_kind}), this run on {cur.device_name} "
        f"({cur.device_kind}); pass --perfgate-allow-env-mismatch to compare anyway"
    )


def _rule(res: CaseResult, settings: Settings, alpha: float, explicit_pct: float | None) -> Rule:
    floor = explicit_pct if explicit_pct is not None else res.thresholds.min_effect_pct
    stages = 1 + settings.confirm_runs
    # no confirmation asked for: one process decides (the budget then rests on the normal model alone)
    return Rule(alpha=alpha, stages=stages, floor_pct=floor, max_stages=MAX_STAGES if settings.confirm_runs else 1)


def _noise(
    resolved: NoiseEstimate | None, calibration: Sequence[float], res: CaseResult, settings: Settings
) -> NoiseEstimate | None:
    """The noise resolved when the case was measured (calibration + history window), else the calibration's."""
    if resolved is not None:
        return resolved
    return estimate_noise(calibration, (), noise_floor(res.timing.timer, settings.noise_floor_pct))


def time_decision(
    res: CaseResult,
    base: BaselineCase,
    settings: Settings,
    alpha: float,
    shift: CommonShift | None = None,
    rule: Rule | None = None,
) -> Decision:
    t = res.thresholds
    calibration = base.time_values()
    noise = _noise(t.time_noise, calibration if base.calibrated else (), res, settings)
    moved = shift is not None and base.calibrated
    return decide(
        calibration,
        res.process_medians_ms,
        noise,
        rule or _rule(res, settings, alpha, t.time_pct if t.time_pct_explicit else None),
        threshold_pct=t.time_pct,
        baseline_samples=base.samples_ms,
        current_samples=res.samples_ms,
        shift_pct=shift.shift_pct if shift is not None and moved else 0.0,
        shift_variance=shift.variance_share if shift is not None and moved else 0.0,
    )


def compare_time(
    res: CaseResult,
    base: BaselineCase,
    settings: Settings,
    alpha: float,
    intervals: bool = True,
    gated: bool = True,
    shift: CommonShift | None = None,
    choice: MeasureChoice | None = None,
    modes: ModeShare | None = None,
) -> Comparison:
    """The time verdict with its interval: between-process when calibrated, else the within-run one; against
    the centre moved by the run's common-mode shift when there is one (gate/common.py). `choice`: why time is
    (or is not) the gated measure, said in the note."""
    d = time_decision(res, base, settings, alpha, shift)
    held = ""
    if gated:  # a slowdown within the run's unseen modes needs the processes they call for (gate/mode_share.py)
        rule = _rule(res, settings, alpha, res.thresholds.time_pct if res.thresholds.time_pct_explicit else None)
        d, held = guarded(d, rule, modes, res.case_id, lambda r: time_decision(res, base, settings, alpha, shift, r))
    lo, hi = d.ci_low_pct, d.ci_high_pct
    if d.noise is None and intervals:
        lo, hi = median_change_ci_pct(base.samples_ms, res.samples_ms) or (None, None)
    centre, current = base.time_ms, res.time_ms  # the one definition of each (docs/decision-rule.md)
    return Comparison(
        case_id=res.case_id,
        metric=TIME_METRIC,
        unit="ms",
        direction=Direction.LOWER,
        verdict=d.verdict,
        baseline=centre,
        current=current,
        change_pct=d.change_pct,
        ci_low_pct=lo,
        ci_high_pct=hi,
        p_value=d.p_value,
        threshold_pct=d.threshold_pct,
        noise_pct=d.noise.noise_pct if d.noise else None,
        score=d.score,
        processes=d.processes,
        note=_note(d, gated, _instead(res, choice, gated))
        + (
            f"; change against the run's common-mode shift ({shift.shift_pct:+.1f}%)"
            if shift is not None and d.noise is not None
            else ""
        )
        + (f"; {held}" if held else ""),
        detects_pct=d.detects_pct,
        gated=gated,
        suspect=d.suspect and gated,
        stages=d.stages,
    )


def _instead(res: CaseResult, choice: MeasureChoice | None, gated: bool) -> str:
    """Not gated: what is gated in its place. Gated: why the time is, when the case also has cycles."""
    if not gated:
        if res.speedup is not None or choice is None:
            return "the speedup is"
        return f"cycles are: {choice.reason}"
    return choice.reason if choice is not None and res.cycles is not None and res.speedup is None else ""


def _note(d: Decision, gated: bool, instead: str = "") -> str:
    if d.noise is None and d.verdict is Verdict.REGRESSED:
        source = (
            f"slower by more than {d.threshold_pct:g}% in every process, with no between-process noise yet: "
            "run perfgate calibrate"
        )
    elif d.noise is None:
        source = "no between-process noise yet: calibrate"
    else:
        source = f"noise from {d.noise.df + 1} processes ({d.noise.window_runs} from the history)"
    if gated:
        return f"{source}; gated: {instead}" if instead else source
    return f"{source}; reported, not gated ({instead})"


def _speedup_values(res: CaseResult, base: BaselineCase) -> tuple[float, ...]:
    """The baseline's speedup process values (reciprocals), when the run has a speedup to compare."""
    if res.speedup is None:
        return ()
    if base.process_speedups:
        return base.speedup_values()
    old = next((m.value for m in base.metrics if m.name == SPEEDUP_METRIC and m.value > 0), None)
    return (1.0 / old,) if old is not None else ()


def speedup_decision(res: CaseResult, base: BaselineCase, settings: Settings, alpha: float) -> Decision | None:
    """The speedup judged like time, on its reciprocal (candidate time / reference time, measured side by
    side): lower is better for both. Clocks and power state cancel out of the ratio, so it is the steadier
    signal for compute-bound kernels (docs/decision-rule.md)."""
    calibration = _speedup_values(res, base)
    if not calibration:
        return None
    noise = _noise(res.thresholds.speedup_noise, calibration if base.calibrated else (), res, settings)
    explicit = res.thresholds.metric_pct(SPEEDUP_METRIC)
    return decide(
        calibration,
        [1.0 / s for s in res.process_speedups],
        noise,
        _rule(res, settings, alpha, explicit),
        threshold_pct=explicit if explicit is not None else res.thresholds.time_pct,
    )


def compare_speedup(res: CaseResult, base: BaselineCase, settings: Settings, alpha: float) -> Comparison | None:
    """The gated speedup comparison, when the run and the baseline both have a speedup."""
    d = speedup_decision(res, base, settings, alpha)
    if d is None or res.speedup is None:
        return None
    calibration = _speedup_values(res, base)
    centre = len(calibration) / sum(calibration)  # the speedup whose reciprocal is the calibration's mean
    current = len(res.process_speedups) / sum(1.0 / s for s in res.process_speedups)
    flip = None if d.ci_low_pct is None or d.ci_high_pct is None else (-d.ci_high_pct, -d.ci_low_pct)
    change = percent_change(centre, current)
    return Comparison(
        case_id=res.case_id,
        metric=SPEEDUP_METRIC,
        unit="x",
        direction=Direction.HIGHER,
        verdict=d.verdict,
        kernel=res.speedup.reference,
        baseline=centre,
        current=current,
        change_pct=change,
        ci_low_pct=flip[0] if flip else None,
        ci_high_pct=flip[1] if flip else None,
        threshold_pct=d.threshold_pct,
        noise_pct=d.noise.noise_pct if d.noise else None,
        score=d.score,
        processes=d.processes,
        note=_note(d, True),
        detects_pct=d.detects_pct,
        suspect=d.suspect,
        stages=d.stages,
    )


def compare_metrics(
    res: CaseResult, base: BaselineCase, skip: tuple[str, ...] = (), stages: int = 1
) -> list[Comparison]:
    """Every catalogued metric of the case, whatever its source, matched by (source, kernel, name); ungated
    (derived) ones are compared for explanations. Memory is re-measured by confirmation processes and
    regresses only when all show it.

    Left out, on purpose: a TIMED metric (the case's time, whichever source recorded it). It is decided by
    `compare_time`'s rule on the between-process noise of many samples; a single-reading tolerance here
    would gate the same samples a second time, at a weaker rule. Metrics the catalogue does not know are
    stored, not compared (no direction, no threshold)."""
    before = {(m.source, m.kernel, m.name): m for m in base.metrics}
    rows = []
    for m in res.metrics:
        old = before.get((m.source, m.kernel, m.name))
        spec = spec_for(m.name)
        if old is None or spec is None or spec.kind is MetricKind.TIMED or m.name in skip:
            continue
        again = res.confirmation_memory if m.name in MEMORY_METRICS else ()
        rows.append(
            _metric_row(
                res.case_id,
                old,
                m,
                spec.direction,
                spec.kind,
                metric_threshold_pct(res.thresholds, m.name),
                again,
                stages if m.name in MEMORY_METRICS else 1,
            )
        )
    return rows


def _metric_row(
    case_id: str,
    old: Metric,
    new: Metric,
    direction: Direction,
    kind: MetricKind,
    threshold_pct: float,
    again: Sequence[float] = (),
    stages: int = 1,
) -> Comparison:
    change = percent_change(old.value, new.value)
    verdicts = [
        _tolerance_verdict(old, value, new.unit, direction, kind, threshold_pct) for value in (new.value, *again)
    ]
    first = verdicts[0]
    agreed = all(v is first for v in verdicts)
    verdict = first if agreed and first is not Verdict.UNCHANGED else Verdict.UNCHANGED
    suspect = first is not Verdict.UNCHANGED and agreed and len(verdicts) < stages
    return Comparison(
        case_id=case_id,
        metric=new.name,
        unit=new.unit,
        direction=direction,
        verdict=verdict,
        kernel=new.kernel,
        baseline=old.value,
        current=new.value,
        change_pct=change,
        threshold_pct=threshold_pct if kind is not MetricKind.DERIVED else None,
        note=new.source,
        processes=len(verdicts),
        suspect=suspect,
        min_change=(_floor(old.name, new.unit) or None) if kind is not MetricKind.DERIVED else None,
    )


def _floor(name: str, unit: str) -> float:
    """The absolute change (in `unit`) under which a metric's move is noise, whatever its percent."""
    spec = spec_for(name)
    return PERCENT_POINTS_FLOOR if unit == "%" else (spec.floor if spec else 0.0)


def _tolerance_verdict(
    old: Metric, value: float, unit: str, direction: Direction, kind: MetricKind, threshold_pct: float
) -> Verdict:
    if kind is MetricKind.DERIVED:
        return Verdict.UNCHANGED
    worse = _worse_by(old.value, value, percent_change(old.value, value), direction)
    if abs(value - old.value) < _floor(old.name, unit) or worse is None:
        return Verdict.UNCHANGED
    if worse > threshold_pct + 1e-9:
        return Verdict.REGRESSED
    if -worse > threshold_pct + 1e-9:
        return Verdict.IMPROVED
    return Verdict.UNCHANGED


def _worse_by(old: float, new: float, change: float | None, direction: Direction) -> float | None:
    """Percent by which new is worse than old (negative = better); 0 -> >0 on a lower-is-better
    counter (spills appearing) counts as infinitely worse."""
    if change is None:
        if new == old:
            return 0.0
        bad = new > old if direction is Direction.LOWER else new < old
        return float("inf") if bad else float("-inf")
    return change if direction is Direction.LOWER else -change


def _speedup_target(res: CaseResult, stages: int = 1) -> list[Comparison]:
    """The absolute target: the speedup's upper confidence bound must reach min_speedup, and every
    confirmation process must fall short of it too before the case fails."""
    target = res.thresholds.min_speedup
    s = res.speedup
    if target is None or s is None:
        return []
    below = [s.ci_high < target, *(v < target for v in res.confirmation_speedups)]
    verdict = Verdict.BELOW_TARGET if all(below) else Verdict.UNCHANGED
    suspect = all(below) and len(below) < stages
    return [
        Comparison(
            case_id=res.case_id,
            metric="min_speedup",
            unit="x",
            direction=Direction.HIGHER,
            verdict=verdict,
            kernel=s.reference,
            baseline=target,
            current=s.median,
            processes=len(below),
            suspect=suspect,
            note=f"{s.median:.2f}x vs {s.reference} (CI {s.ci_low:.2f}-{s.ci_high:.2f}), needs >= {target:g}x",
        )
    ]


def explanation(
    static_rows: Sequence[Comparison], metric_rows: Sequence[Comparison], res: CaseResult
) -> tuple[Comparison, ...]:
    """What came with a timing regression: the compiled kernels' changes first (known before any profiler
    ran: registers, spills, occupancy, another kernel), then the profiler's counters that moved, then ncu's
    diagnosis of the case's kernels when it was profiled."""
    from perfgate.gate.why import ncu_reasons

    static = [r for r in static_rows if r.baseline != r.current or r.metric == LAUNCHED]
    return tuple(static) + explain(metric_rows) + ncu_reasons(res)


def explain(metric_rows: Sequence[Comparison]) -> tuple[Comparison, ...]:
    """What moved with a regression: counters that changed first (registers, spills, theoretical
    occupancy: the usual causes), then measured metrics that regressed, then the always-shown ones
    that held still ("DRAM bytes unchanged" rules a cause out)."""

    def rank(c: Comparison) -> tuple[bool, int, float]:
        spec = spec_for(c.metric)
        kind_order = {MetricKind.COUNTER: 0, MetricKind.MEASURED: 1}.get(spec.kind, 2) if spec else 2
        magnitude = abs(c.change_pct) if c.change_pct is not None else float("inf")
        return (c.verdict is not Verdict.REGRESSED, kind_order, -magnitude)

    moved = [r for r in metric_rows if r.verdict is not Verdict.UNCHANGED]
    moved.sort(key=rank)
    steady = [r for r in metric_rows if r.verdict is Verdict.UNCHANGED and r.metric in EXPLAIN_ALWAYS]
    return tuple(moved[:8] + steady[:4])
