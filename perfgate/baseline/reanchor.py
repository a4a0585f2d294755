"""Re-anchoring: the baseline's centres moved onto the level the history shows now, its noise kept.

After a common-mode shift (gate/common.py: a driver update, a new board, a machine that drifted), every
case's calibration still describes the spread of its processes, only not their level. A re-anchor scales
each case's calibration process values by one factor: the median over the cases of (median of its last N
passing gate runs on the tracked branch) / (the median of its calibration processes), like for like.
Relative spreads, and so the noise and what each case detects, stay as calibrated; nothing is measured.
With `per_case`, each case takes its own factor instead: that also accepts changes of single cases (use it
only when they are known to be intended).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from perfgate.baseline import Baseline, BaselineCase, Update
from perfgate.model import Environment

MIN_RUNS = 3  # a level needs this many runs of a case


@dataclass(frozen=True)
class Reanchor:
    baseline: Baseline
    factor: float  # the common factor (per_case: the median of the cases' factors)
    cases: int  # cases re-anchored
    skipped: tuple[str, ...]  # calibrated cases with fewer than MIN_RUNS runs in the history


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
) -> Reanchor | None:
    """The baseline with its calibrated cases' values scaled onto their recent level; None when no case has
    MIN_RUNS runs to take a level from. Cases with cycles (`recent_mcycles`: their recent runs' median cycles)
    have their calibration cycles moved the same way, by the cycles' own factors: a power state moves a
    compute-bound case's time and not its cycles."""
    factors = {cid: f for cid, c in baseline.cases.items() if (f := case_factor(c, recent_ms.get(cid, ()))) is not None}
    if not factors:
        return None
    common = statistics.median(factors.values())
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
    skipped = tuple(sorted(cid for cid, c in baseline.cases.items() if c.calibrated and cid not in factors))
    updates = (*baseline.updates, replace(update, cases=len(factors)))
    return Reanchor(replace(baseline, cases=cases, environment=env, updates=updates), common, len(factors), skipped)


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
