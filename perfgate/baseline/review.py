"""What a reviewer of a new calibration must know: cases that cannot detect a change worth gating, and why,
and the processes left out of the noise as an autotuning warm-up."""

from __future__ import annotations

import math
from collections.abc import Sequence

from perfgate.baseline import MIN_CALIBRATION_PROCESSES, Baseline, BaselineCase
from perfgate.baseline.write import autotune_warmup
from perfgate.gate.decision import MAX_STAGES, per_test_alpha, reference_processes_needed
from perfgate.gate.noise import EXCLUSION_MIN_PROCESSES, without_isolated
from perfgate.model import CaseResult, HostState, Run, Timer
from perfgate.report.format import fmt_value

USEFUL_DETECT_PCT = 10.0  # a case that cannot see a change this large gates nothing worth gating
TINY_CALL_MS = {Timer.CUDA_EVENT: 0.005}  # launch/timer overhead dominates below this; the host clock: 1 us
HOST_TINY_CALL_MS = 0.001
BUSY_LOAD_PER_CPU = 0.5
STEAL_PCT = 2.0
PREEMPTED_SHARE_PCT = 90.0  # a thread that ran less of its wall time than this waited for a CPU
SHARE_SPREAD_PCT = 5.0  # ... or whose share moved this much between processes
PREEMPTED_NAMED = 3


def calibration_notes(
    baseline: Baseline, runs: Sequence[Run], autotuned_first: bool, ceiling_pct: float = 100.0
) -> list[str]:
    """One line per case that detects only changes above USEFUL_DETECT_PCT (with the likely reasons), one per
    case whose autotuning process was left out, and one per case whose calibration processes lie further
    apart than the strict ceiling (strict mode fails such a case on every run: gate/ceiling.py)."""
    by_case: dict[str, list[CaseResult]] = {}
    for run in runs:
        for res in run.results:
            by_case.setdefault(res.case_id, []).append(res)
    lines = []
    for case_id, results in sorted(by_case.items()):
        case = baseline.cases.get(case_id)
        if case is None:
            continue
        if autotune_warmup(results, autotuned_first):
            lines.append(
                f"perfgate note: {case_id}: process 1 ran the autotuner "
                f"({fmt_value(results[0].timing.median_ms, 'ms')}); it is a warm-up, left out of the noise"
            )
        lines += _isolated_notes(case_id, case)
        lines += _beyond_ceiling_notes(case_id, case, ceiling_pct)
        detects = [d for d in (case.threshold_pct, case.speedup_threshold_pct) if d is not None]
        if detects and min(detects) > USEFUL_DETECT_PCT:
            why = "; ".join(reasons(results)) or "its process medians differ this much from one process to the next"
            lines.append(f"perfgate warning: {case_id} detects only changes >= {min(detects):.1f}%: {why}")
    return lines + preemption_notes(by_case)


def budget_note(cases: int, processes: int, false_alarm_pct: float) -> str | None:
    """A warning when `processes` calibration processes are too few for `cases` gated cases to keep the
    run's false-alarm budget whatever the noise's shape (gate/decision.py reference_processes_needed); None
    when they suffice. The noise window adds one reference process a passing run, so the budget holds
    from the run that fills the gap on."""
    alpha = per_test_alpha(false_alarm_pct, cases)
    needed = reference_processes_needed(alpha)
    if processes >= needed:
        return None
    worst_pct = min(100.0, 100.0 * cases / math.comb(processes + MAX_STAGES, MAX_STAGES))
    return (
        f"perfgate: warning: {processes} calibration processes cannot hold the {false_alarm_pct:g}% false-alarm "
        f"budget for {cases} cases whatever the noise's shape: for two-mode noise a run may fail unchanged code "
        f"up to {worst_pct:.2g}% of the time until {needed - processes} passing gate run(s) fill the noise "
        f"window; calibrate with --runs {needed} to hold it from the first run (docs/decision-rule.md)"
    )


def _isolated_notes(case_id: str, case: BaselineCase) -> list[str]:
    """A calibration process far from all the others is kept in the noise until the history holds enough
    processes to tell an outlier from a mode (gate/noise.py): say what it costs meanwhile."""
    out = []
    for what, values in (("time", case.process_medians_ms), ("speedup", case.process_speedups)):
        if len(values) <= MIN_CALIBRATION_PROCESSES:
            continue
        kept = without_isolated(values, min_processes=0)
        if len(kept) == len(values):
            continue
        odd = next(v for v in values if v not in kept)
        centre = sum(kept) / len(kept)
        shown = fmt_value(odd, "ms") if what == "time" else f"{odd:.4g}x"
        out.append(
            f"perfgate note: {case_id}: one calibration process's {what} ({shown}) lies {_rel(odd, centre)} "
            f"from all the others; it counts in the noise until the history holds "
            f"{EXCLUSION_MIN_PROCESSES} processes: recalibrate if it was a fluke"
        )
    return out


def _beyond_ceiling_notes(case_id: str, case: BaselineCase, ceiling_pct: float) -> list[str]:
    from perfgate.gate.ceiling import calibration_spread_pct
    from perfgate.metrics import SPEEDUP_METRIC, TIME_METRIC

    out = []
    for what, metric in (("time", TIME_METRIC), ("speedup's reciprocal", SPEEDUP_METRIC)):
        spread = calibration_spread_pct(case, metric)
        if spread > ceiling_pct:
            out.append(
                f"perfgate warning: {case_id}: calibration processes {spread:+.0f}% apart ({what}): beyond the "
                f"{ceiling_pct:g}% ceiling, so strict mode fails this case on every run; find what made one "
                f"process that slow (a cold cache, a busy host, a one-off autotune) and recalibrate"
            )
    return out


def _rel(value: float, centre: float) -> str:
    return f"{100 * (value - centre) / centre:+.1f}%"


def reasons(results: Sequence[CaseResult]) -> list[str]:
    """Why a case's processes disagree, from what was recorded with them."""
    out = []
    medians = sorted(r.timing.median_ms for r in results)
    timer = results[0].timing.timer
    if medians[len(medians) // 2] < TINY_CALL_MS.get(timer, HOST_TINY_CALL_MS):
        out.append(
            f"one call takes {fmt_value(medians[len(medians) // 2], 'ms')}, where timer and launch overhead "
            "set the spread: time more work per call"
        )
    hosts = [r.host_state for r in results if r.host_state is not None]
    if hosts:
        out += _host_reasons(hosts)
    if timer is Timer.CUDA_EVENT and results[0].speedup is None:
        out.append(
            f"process medians spread {fmt_value(medians[0], 'ms')}-{fmt_value(medians[-1], 'ms')} (machine "
            "state common to the process): a reference or a probe cancels it (docs/accuracy.md)"
        )
    return out


def _host_reasons(hosts: Sequence[HostState]) -> list[str]:
    out = []
    busiest = max(hosts, key=lambda h: h.load_avg_1m / max(1, h.cpus))
    if busiest.load_avg_1m > BUSY_LOAD_PER_CPU * busiest.cpus:
        out.append(f"the host was busy (load average {busiest.load_avg_1m:.1f} on {busiest.cpus} CPU(s))")
    threads = max(h.threads for h in hosts)
    if threads > 1:
        out.append(f"{threads} threads ran in the measuring process, sharing its CPUs")
    steal = max((h.steal_pct for h in hosts if h.steal_pct is not None), default=0.0)
    if steal > STEAL_PCT:
        out.append(f"the hypervisor took {steal:.0f}% of the CPU time (steal)")
    return out


def preemption_notes(by_case: dict[str, list[CaseResult]]) -> list[str]:
    """One line when wall-clock host cases were preempted in calibration (their thread ran well under its wall
    time, or that share moved between processes, or the hypervisor stole time): the wall clock counts the waits,
    CPU time does not (`host_timer = "thread_cpu"`, docs/host-timers.md)."""
    hit = []
    for case_id, results in sorted(by_case.items()):
        hosts = [r.host_state for r in results if r.timing.timer is Timer.HOST and r.host_state is not None]
        shares = [h.cpu_share_pct for h in hosts if h.cpu_share_pct is not None]
        steal = max((h.steal_pct for h in hosts if h.steal_pct is not None), default=0.0)
        if shares and (min(shares) < PREEMPTED_SHARE_PCT or max(shares) - min(shares) > SHARE_SPREAD_PCT):
            hit.append(f"{case_id} (its thread ran {min(shares):.0f}-{max(shares):.0f}% of the wall time)")
        elif steal > STEAL_PCT:
            hit.append(f"{case_id} (the hypervisor stole {steal:.0f}% of the CPU)")
    if not hit:
        return []
    more = f" and {len(hit) - PREEMPTED_NAMED} more" if len(hit) > PREEMPTED_NAMED else ""
    return [
        f"perfgate note: {len(hit)} wall-clock host case(s) were preempted while calibrating: "
        f"{'; '.join(hit[:PREEMPTED_NAMED])}{more}. The wall clock counts the time they waited for a CPU; for "
        f'single-threaded code set host_timer = "thread_cpu" (CPU time, docs/host-timers.md) and recalibrate'
    ]
