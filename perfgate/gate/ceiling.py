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

Both ways of measuring have it (gate/run.py's tail applies it): baseline mode to each process against the
baseline's centre (baseline_changes), A/B mode to each pair of processes, the head's rounds against the
base's (ab/compare.py's pair_changes): a first pair ten times slower is not cleared by a calm fresh pair.
A case timed against a reference has it on its time too, which the rule only reports.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from perfgate.baseline import Baseline, BaselineCase
from perfgate.metrics import SPEEDUP_METRIC, TIME_METRIC
from perfgate.model import CaseResult, Comparison, Finding, FindingKind, GateResult, Run, Verdict

FAILING = (Verdict.REGRESSED, Verdict.BELOW_TARGET)
SKIPPED = (Verdict.NOT_COMPARABLE, Verdict.NEW, Verdict.MISSING)


@dataclass(frozen=True)
class ProcessChanges:
    """One comparison's change in each process that measured it (A/B: in each pair of processes), worse
    direction positive, and how far apart the processes it is judged against lie (a calibration; 0 when
    there is none)."""

    changes_pct: tuple[float, ...]
    spread_pct: float = 0.0
    where: str = "process(es)"  # what one change was measured in, for the finding's words


Changes = Mapping[tuple[str, str], ProcessChanges]  # (case id, metric) -> its changes


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


def baseline_changes(run: Run, baseline: Baseline | None, gate: GateResult) -> dict[tuple[str, str], ProcessChanges]:
    """Baseline mode: each time and speedup comparison's processes against the baseline's centre, and the
    spread of the baseline's calibration."""
    results = {r.case_id: r for r in run.results}
    out = {}
    for c in gate.comparisons:
        r = results.get(c.case_id)
        base = baseline.cases.get(c.case_id) if baseline is not None else None
        if r is None or base is None or c.metric not in (TIME_METRIC, SPEEDUP_METRIC):
            continue
        out[(c.case_id, c.metric)] = ProcessChanges(process_changes_pct(c, r), calibration_spread_pct(base, c.metric))
    return out


def beyond_ceiling(gate: GateResult, changes: Changes, ceiling_pct: float) -> Iterator[Finding]:
    """One finding per time or speedup comparison the rule did not fail although one of its processes, or
    the calibration it is judged against, lies beyond the ceiling. A case timed against a reference is
    gated on its speedup and its time only reported: its time has the ceiling all the same (a kernel and
    its reference ten times slower together leave the speedup where it was)."""
    for c in gate.comparisons:
        found = changes.get((c.case_id, c.metric))
        if found is None or (c.verdict in FAILING and c.gated) or c.verdict in SKIPPED:
            continue
        what = "time" if c.metric == TIME_METRIC else "speedup's reciprocal"
        if found.changes_pct and max(found.changes_pct) > ceiling_pct:
            yield Finding(
                FindingKind.BEYOND_CEILING,
                f"{c.case_id}: {what} {_list(found.changes_pct)} against the baseline in its {found.where}: "
                f"beyond the {ceiling_pct:g}% ceiling, which no noise estimate or other process clears",
                c.case_id,
            )
        elif c.gated and found.spread_pct > ceiling_pct:
            yield Finding(
                FindingKind.BEYOND_CEILING,
                f"{c.case_id}: the baseline's calibration processes differ by {found.spread_pct:+.0f}% ({what}): "
                f"beyond the {ceiling_pct:g}% ceiling, so they are no calibration of one version of the "
                f"code and their noise cannot judge a change",
                c.case_id,
            )


def _list(changes: Sequence[float]) -> str:
    return ", ".join(f"{d:+.0f}%" for d in changes)
