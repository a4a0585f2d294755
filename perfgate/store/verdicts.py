"""What the gate said about a run, as stored with it: pass/fail, every metric's verdict, each case's.

A case's verdict is its most severe one over its metrics (a time unchanged and a register count regressed
is a regressed case): what the noise window of a case (store/window.py) and a Datasette facet read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from perfgate.model import GateResult, Verdict

# most severe first: the verdict a case shows when its metrics disagree
SEVERITY: tuple[Verdict, ...] = (
    Verdict.REGRESSED,
    Verdict.BELOW_TARGET,
    Verdict.PROFILE_FAILED,
    Verdict.NOT_COMPARABLE,
    Verdict.INCONCLUSIVE,
    Verdict.MISSING,
    Verdict.NEW,
    Verdict.IMPROVED,
    Verdict.UNCHANGED,
)
_RANK = {v: i for i, v in enumerate(SEVERITY)}
FAILING: frozenset[Verdict] = frozenset({Verdict.REGRESSED, Verdict.BELOW_TARGET})
# the case verdicts that keep a run out of a case's noise window: failures only. An inconclusive run is kept:
# it is most often a draw from the slow side of unchanged code's noise, and leaving it out truncates that
# side, so the false-alarm rate of unchanged code climbs run after run (issue 31: 5.3x the per-test alpha
# by runs 21-60 for a case with a 40% slow mode; tests/test_window_keeps_inconclusive.py). A real step is
# not absorbed by it: the window gives the rule its scale, its location is removed once it has moved
# (gate/noise.py), and a change point restarts the window (trends/).
OUT_OF_WINDOW: frozenset[Verdict] = FAILING


@dataclass(frozen=True)
class MetricVerdict:
    case_id: str
    metric: str
    kernel: str
    verdict: Verdict
    change_pct: float | None = None
    threshold_pct: float | None = None


@dataclass(frozen=True)
class RunVerdicts:
    gate_failed: bool
    metrics: tuple[MetricVerdict, ...]

    def by_case(self) -> dict[str, Verdict]:
        """Each case's most severe verdict."""
        out: dict[str, Verdict] = {}
        for m in self.metrics:
            old = out.get(m.case_id)
            if old is None or _RANK[m.verdict] < _RANK[old]:
                out[m.case_id] = m.verdict
        return out


def most_severe(verdicts: Iterable[Verdict]) -> Verdict | None:
    ranked = sorted(verdicts, key=_RANK.__getitem__)
    return ranked[0] if ranked else None


def verdicts_of(gate: GateResult) -> RunVerdicts:
    """One row per (case, metric, kernel): where a case has several (a profiler error per tool), the most
    severe is kept."""
    rows: dict[tuple[str, str, str], MetricVerdict] = {}
    for c in gate.comparisons:
        key = (c.case_id, c.metric, c.kernel)
        old = rows.get(key)
        if old is None or _RANK[c.verdict] < _RANK[old.verdict]:
            rows[key] = MetricVerdict(c.case_id, c.metric, c.kernel, c.verdict, c.change_pct, c.threshold_pct)
    return RunVerdicts(gate_failed=gate.failed, metrics=tuple(rows[k] for k in sorted(rows)))
