"""The ceiling: a change no noise estimate and no other process can explain away.

The decision rule (gate/decision.py) fails a case only when every process shows the change, at a
threshold set by the case's between-process noise. Both can be talked down: process medians spread in a
baseline (or a noise window fed odd runs) make the threshold huge, and a test that behaves well in the
confirmation process clears a first process that was ten times slower. A process whose median is more
than `ceiling_pct` (100% by default: twice as slow) above the baseline's centre is beyond anything a
working machine does between processes, so strict mode fails the case whatever the rule decided; without
strict it is a warning. For the same reason a baseline whose calibration processes differ by more than the
ceiling (one twice as slow as another) is not a calibration of one version of the code: its noise would
excuse anything, and strict mode fails the cases it would judge.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from perfgate.baseline import Baseline, BaselineCase
from perfgate.metrics import SPEEDUP_METRIC, TIME_METRIC
from perfgate.model import CaseResult, Comparison, Finding, FindingKind, GateResult, Run, Verdict

FAILING = (Verdict.REGRESSED, Verdict.BELOW_TARGET)


def process_changes_pct(c: Comparison, r: CaseResult) -> tuple[float, ...]:
    """Each process's change against the baseline's centre, in the worse direction positive (time up, or
    the speedup's reciprocal up)."""
    return changes_against(c.metric, c.baseline, r.process_medians_ms, r.process_speedups)


def changes_against(
    metric: str, centre: float | None, medians_ms: Sequence[float], speedups: Sequence[float]
) -> tuple[float, ...]:
    """process_changes_pct on plain numbers (a results file's, perfgate/ci/recompute.py)."""
    if centre is None or centre <= 0:
        return ()
    if metric == TIME_METRIC:
        return tuple(100.0 * (x - centre) / centre for x in medians_ms)
    if metric == SPEEDUP_METRIC:  # the comparison's centre is the speedup whose reciprocal is the calibration's mean
        return tuple(100.0 * (centre / s - 1.0) for s in speedups if s > 0)
    return ()


def calibration_spread_pct(base: BaselineCase, metric: str) -> float:
    """How much the slowest calibration process exceeds the fastest (%; 0 without a calibration)."""
    values = base.process_medians_ms if metric == TIME_METRIC else base.speedup_values()
    low = min(values, default=0.0)
    return 100.0 * (max(values) / low - 1.0) if low > 0 else 0.0


def beyond_ceiling(run: Run, baseline: Baseline | None, gate: GateResult, ceiling_pct: float) -> Iterator[Finding]:
    """One finding per gated case the rule did not fail although a process, or the baseline's calibration,
    lies beyond the ceiling."""
    results = {r.case_id: r for r in run.results}
    for c in gate.comparisons:
        r = results.get(c.case_id)
        base = baseline.cases.get(c.case_id) if baseline is not None else None
        if (
            r is None
            or base is None
            or not c.gated
            or c.metric not in (TIME_METRIC, SPEEDUP_METRIC)
            or c.verdict in FAILING
            or c.verdict in (Verdict.NOT_COMPARABLE, Verdict.NEW, Verdict.MISSING)
        ):
            continue
        what = "time" if c.metric == TIME_METRIC else "speedup's reciprocal"
        changes = process_changes_pct(c, r)
        spread = calibration_spread_pct(base, c.metric)
        if changes and max(changes) > ceiling_pct:
            yield Finding(
                FindingKind.BEYOND_CEILING,
                f"{c.case_id}: {what} {_list(changes)} against the baseline in its process(es): beyond the "
                f"{ceiling_pct:g}% ceiling, which no noise estimate or other process clears",
                c.case_id,
            )
        elif spread > ceiling_pct:
            yield Finding(
                FindingKind.BEYOND_CEILING,
                f"{c.case_id}: the baseline's calibration processes differ by {spread:+.0f}% ({what}): "
                f"beyond the {ceiling_pct:g}% ceiling, so they are no calibration of one version of the "
                f"code and their noise cannot judge a change",
                c.case_id,
            )


def _list(changes: Sequence[float]) -> str:
    return ", ".join(f"{d:+.0f}%" for d in changes)
