"""Re-anchoring: the baseline's centres moved onto the level the history shows now, its noise kept.

After a common-mode shift (gate/common.py: a driver update, a new board, a machine that drifted), every
case's calibration still describes the spread of its processes, only not their level. A re-anchor scales
each case's calibration process values by one factor: the median over the cases of (median of its last N
passing gate runs on the tracked branch) / (the median of its calibration processes), like for like.
Relative spreads, and so the noise and what each case detects, stay as calibrated; nothing is measured.
With `per_case`, each case takes its own factor instead: that also accepts changes of single cases (use it
only when they are known to be intended).

A re-anchor moves the centres only where the recent runs show a common shift, by the gate's own test
(gate/common.py `common_shift`, on each case's recent median ranked among its calibration processes): the
factor of runs that did not move is a median of noise, and moving every centre by it shifts each case's
reference for nothing (an outside review, issue 31). `force` moves them anyway; so does `per_case`, which is
an explicit acceptance of each case's own level.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from perfgate.baseline import Baseline, BaselineCase, Update
from perfgate.model import CommonShift, Environment

MIN_RUNS = 3  # a level needs this many runs of a case: one odd process must not move the anchor


@dataclass(frozen=True)
class Reanchor:
    baseline: Baseline
    factor: float  # the common factor (per_case: the median of the cases' factors)
    cases: int  # cases with a level (re-anchored where `moved`)
    skipped: tuple[str, ...]  # calibrated cases with fewer than MIN_RUNS runs in the history
    shift: CommonShift | None  # what the recent runs show (None: no common shift the test sees)
    moved: bool  # False: the baseline is the one given (no shift, and neither `force` nor `per_case`)


def case_factor(case: BaselineCase, recent_ms: Sequence[float]) -> float | None:
    values = case.time_values()
    if not case.calibrated or len(recent_ms) < MIN_RUNS:
        return None
    # the median run: a process that landed in a slower state now and then does not move the anchor; against
    # the calibration's median, like for like (its mean sits above its median where a share of processes is in
    # a slower state: 20% of them +2% put every re-anchored centre 0.4% below the processes' usual level)
    return statistics.median(recent_ms) / statistics.median(values)


def reanchored(
    baseline: Baseline,
    recent_ms: Mapping[str, Sequence[float]],
    env: Environment,
    update: Update,
    per_case: bool = False,
    recent_mcycles: Mapping[str, Sequence[float]] | None = None,
    force: bool = False,
    floor_pct: float = 1.0,
) -> Reanchor | None:
    """The baseline with its calibrated cases' values scaled onto their recent level; None when no case has
    MIN_RUNS runs to take a level from. Cases with cycles (`recent_mcycles`: their recent runs' median cycles)
    have their calibration cycles moved the same way, by the cycles' own factors: a power state moves a
    compute-bound case's time and not its cycles. Without a common shift in the recent runs (`recent_shift`)
    nothing moves (`moved` False) unless `force` or `per_case`."""
    factors = {cid: f for cid, c in baseline.cases.items() if (f := case_factor(c, recent_ms.get(cid, ()))) is not None}
    if not factors:
        return None
    common = statistics.median(factors.values())
    skipped = tuple(sorted(cid for cid, c in baseline.cases.items() if c.calibrated and cid not in factors))
    shift = recent_shift(baseline, recent_ms, factors, floor_pct, env)
    if shift is None and not (force or per_case):
        return Reanchor(baseline, common, len(factors), skipped, None, moved=False)
    cases = dict(baseline.cases)
    for cid, own in factors.items():
        cases[cid] = scaled(cases[cid], own if per_case else common)
    cycle_factors = {
        cid: statistics.median(runs) / statistics.median(c.process_mcycles)
        for cid, c in baseline.cases.items()
        if c.process_mcycles and len(runs := (recent_mcycles or {}).get(cid, ())) >= MIN_RUNS
    }
    common_cycles = statistics.median(cycle_factors.values()) if cycle_factors else 1.0
    for cid, own in cycle_factors.items():
        factor = own if per_case else common_cycles
        cases[cid] = replace(cases[cid], process_mcycles=tuple(v * factor for v in cases[cid].process_mcycles))
    updates = (*baseline.updates, replace(update, cases=len(factors)))
    moved = replace(baseline, cases=cases, environment=env, updates=updates)
    return Reanchor(moved, common, len(factors), skipped, shift, moved=True)


def recent_shift(
    baseline: Baseline,
    recent_ms: Mapping[str, Sequence[float]],
    factors: Mapping[str, float],
    floor_pct: float,
    env: Environment,
) -> CommonShift | None:
    """The common shift the recent runs show against the calibration, by the gate's test: each case's recent
    median ranked among its calibration processes, weighted by the case's precision; None where the test sees
    none, and with fewer than gate/common.py's MIN_CASES cases (too few to tell a shift from noise)."""
    from perfgate.gate.common import centred_rank, common_shift

    changes: dict[str, tuple[float, float]] = {}
    ranks: dict[str, float] = {}
    for cid, factor in factors.items():
        values = baseline.cases[cid].time_values()
        if len(values) < 2:
            continue
        centre = statistics.median(values)
        changes[cid] = (100.0 * (factor - 1.0), max(100.0 * statistics.stdev(values) / centre, 1e-3))
        ranks[cid] = centred_rank(statistics.median(recent_ms[cid]), values)
    return common_shift(changes, floor_pct, baseline.environment, env, ranks)


def scaled(case: BaselineCase, factor: float) -> BaselineCase:
    """Every time of the case times `factor` (its speedups are ratios: a shared shift cancels in them)."""
    return replace(
        case,
        median_ms=case.median_ms * factor,
        samples_ms=tuple(v * factor for v in case.samples_ms),
        process_medians_ms=tuple(v * factor for v in case.process_medians_ms),
        sample_points_ms=tuple(v * factor for v in case.sample_points_ms),
        autotune_process_median_ms=None
        if case.autotune_process_median_ms is None
        else case.autotune_process_median_ms * factor,
    )
