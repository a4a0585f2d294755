"""A mode the calibration did not see, said once (issue 31, requirement 1): a case whose noise window holds
processes beyond every calibration process (gate/noise.py `_window_own`: a library heuristic that now picks a
slower kernel in some processes, or a mode all the calibration processes missed). Its threshold already
covers the mode (the window's own rank bound R_w, gate/decision.py); this names it, so a user can tell a mode
from a code change:

- one note per gate run listing the cases, with the mode's size (the median of the window's processes
  beyond the calibration's extreme, from the calibration's centre, and how far past that extreme), how many
  of the window's runs hold it, and the remedy with its cost (`perfgate calibrate`, which then sees it);
- a regressed case with such a window says so in its "why" line: a change of about the mode's size may be the
  mode, not the code; one well past the mode is said not to be it.

Derived from the stored run and the baseline only, so `perfgate compare` says the same.
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from perfgate.baseline import Baseline, BaselineCase
from perfgate.gate.noise import EXTREMES_KEPT
from perfgate.metrics import CYCLES_METRIC, SPEEDUP_METRIC, TIME_METRIC, WINDOW_MODE
from perfgate.model import CaseResult, Comparison, Finding, FindingKind, GateResult, Run, Verdict

SHOWN_CASES = 3  # cases named in the one finding; the rest are counted
TIMED = (SPEEDUP_METRIC, CYCLES_METRIC, TIME_METRIC)  # the gated measure, in the order one is chosen


@dataclass(frozen=True)
class UnseenMode:
    """One side of one case's window beyond every calibration process."""

    case_id: str
    slower: bool  # False: a faster mode
    at_pct: float  # the median of the window's processes beyond the calibration's extreme, from its centre (%)
    past_pct: float  # how far that median lies past the calibration's extreme process (%, positive)
    runs: int  # window processes beyond the calibration's extreme
    window_runs: int  # the window's runs
    capped: bool = False  # only the EXTREMES_KEPT most extreme are stored: `runs` or more

    @property
    def held(self) -> str:
        return f"{self.runs}{'+' if self.capped else ''} of {self.window_runs}"


def case_modes(case_id: str, res: CaseResult, base: BaselineCase, metric: str) -> tuple[UnseenMode, ...]:
    """The modes the calibration did not see in `res`'s noise of its gated `metric` (time, cycles or the
    speedup's reciprocal, like the noise itself): none for a steady case or a run stored before R_w."""
    noise, calibration = {
        SPEEDUP_METRIC: (res.thresholds.speedup_noise, base.speedup_values()),
        CYCLES_METRIC: (res.thresholds.cycles_noise, base.cycle_values()),
    }.get(metric, (res.thresholds.time_noise, base.time_values()))
    if noise is None or len(calibration) < 2 or not (noise.window_upper_pct or noise.window_lower_pct):
        return ()
    centre = sum(calibration) / len(calibration)
    highest, lowest = (100.0 * (v - centre) / centre for v in (max(calibration), min(calibration)))
    out = []
    for own, edge, slower in ((noise.window_upper_pct, highest, True), (noise.window_lower_pct, lowest, False)):
        beyond = [d for d in own if (d > edge if slower else d < edge)]
        if beyond:
            at = statistics.median(beyond)
            capped = len(own) >= EXTREMES_KEPT and len(beyond) == len(own)
            out.append(UnseenMode(case_id, slower, at, abs(at - edge), len(beyond), noise.window_runs, capped))
    return tuple(out)


def gated_metric(rows: Iterable[Comparison]) -> str:
    """The timed measure a case is gated on among its comparisons (time when none is)."""
    gated = {c.metric for c in rows if c.gated and c.metric in TIMED}
    return next((m for m in TIMED if m in gated), TIME_METRIC)


def run_modes(results: Sequence[CaseResult], baseline: Baseline | None, gate: GateResult) -> list[UnseenMode]:
    """Every compared case's unseen modes, in case order."""
    if baseline is None:
        return []
    by_case: dict[str, list[Comparison]] = {}
    for c in gate.comparisons:
        by_case.setdefault(c.case_id, []).append(c)
    out: list[UnseenMode] = []
    for res in sorted(results, key=lambda r: r.case_id):
        base, rows = baseline.cases.get(res.case_id), by_case.get(res.case_id, [])
        if base is None or base.timer is not res.timing.timer or not any(c.noise_pct is not None for c in rows):
            continue
        out += case_modes(res.case_id, res, base, gated_metric(rows))
    return out


def mode_rows(res: CaseResult, base: BaselineCase, timed: Iterable[Comparison | None]) -> tuple[Comparison, ...]:
    """A regressed case's "why" rows for the slower modes its window shows (gate/compare.py: `timed`, its
    timed comparisons)."""
    rows = [r for r in timed if r is not None]
    metric = gated_metric(rows)
    gated = next((r for r in rows if r.metric == metric and r.gated), None)
    return tuple(why_row(m, gated) for m in case_modes(res.case_id, res, base, metric) if m.slower)


BEYOND_NOISES = 2.0  # a change this many process noises past the mode's centre is not a process of the mode


def why_row(mode: UnseenMode, row: Comparison | None = None) -> Comparison:
    """A regressed case's explanation: its window shows a mode, so a change of about the mode's size may be
    the mode's; a time or cycles change well past the mode (`row`, the gated comparison: every process beyond
    the mode's centre by BEYOND_NOISES noises) is not, and the line says so rather than offer the mode as an
    excuse (an outside review, issue 31). A speedup's change is a ratio of two times: left hedged."""
    side = "slower" if mode.slower else "faster"
    seen = (
        f"its noise window shows a {side} mode the calibration did not see ({mode.at_pct:+.1f}%, "
        f"{mode.past_pct:.1f}% past its {'slowest' if mode.slower else 'fastest'} process, in {mode.held} window runs)"
    )
    change = row.change_pct if row is not None and row.metric != SPEEDUP_METRIC else None
    noise = (row.noise_pct or 0.0) if row is not None else 0.0
    if change is not None and mode.slower and change > mode.at_pct + BEYOND_NOISES * noise:
        tail = (
            f"its change ({change:+.1f}%) lies past that mode by more than {BEYOND_NOISES:g} process noises "
            f"({noise:.1f}% each): not the mode"
        )
    else:
        tail = "a change of about that size may be the mode, not the code; `perfgate calibrate` learns it"
    return Comparison.words(mode.case_id, WINDOW_MODE, f"{seen}: {tail}")


def run_findings(run: Run, baseline: Baseline | None, gate: GateResult) -> tuple[Finding, ...]:
    """The run's one note, if any case's window shows a mode (gate/findings.py, baseline mode)."""
    runs = next((u.calibrated_runs for u in reversed(baseline.updates) if u.calibrated_runs), 0) if baseline else 0
    modes = run_modes(run.results, baseline, gate)
    found = finding(modes, runs, changes_named(gate, {m.case_id for m in modes}))
    return () if found is None else (found,)


def changes_named(gate: GateResult, moded: Collection[str] = ()) -> tuple[str, ...]:
    """What this run names as a possible change, which a recalibration now would learn as noise: the cases
    whose gated timed measure is regressed or inconclusive (a step's first runs are inconclusive while its
    window holds none of them) unless their own window shows an unseen mode (`moded`: the mode may be all
    they show, and at 100 cases some such case is inconclusive in most runs), and a common-mode shift
    (re-anchored, not recalibrated)."""
    cases = sorted(
        {
            c.case_id
            for c in gate.comparisons
            if c.gated
            and c.metric in TIMED
            and c.verdict in (Verdict.REGRESSED, Verdict.INCONCLUSIVE)
            and c.case_id not in moded
        }
    )
    return tuple(cases) + (
        ("a common-mode shift",) if gate.common_shift is not None and gate.common_shift.named else ()
    )


def finding(modes: Sequence[UnseenMode], calibrated_runs: int = 0, pending: Sequence[str] = ()) -> Finding | None:
    """The one note of a gate run: the slower modes' cases, then the faster ones', and the remedy's cost. With
    `pending` (changes_named) the remedy waits: recalibrating on a run that names a code change takes it for
    noise (an outside replay: a +3% step recalibrated away at its onset, never named)."""
    slower = [m for m in modes if m.slower]
    faster = [m for m in modes if not m.slower]
    if not modes:
        return None
    cost = f"{calibrated_runs} fresh processes of the suite, as the last calibration" if calibrated_runs else ""
    parts = []
    if slower:
        parts.append(
            f"{len(slower)} case(s) have noise-window runs in a slower mode, beyond every calibration process "
            f"({_named(slower)}): their thresholds cover it (the window's own rank bound), so unchanged code stays "
            "green and a regression must go beyond the mode"
        )
    if faster:
        parts.append(f"{len(faster)} case(s) have window runs in a faster mode ({_named(faster)})")
    remedy = (
        "; `perfgate calibrate --replace --reason 'a new mode'` learns it"
        + (f" ({cost})" if cost else "")
        + " and gives the thresholds back their power"
    )
    if pending:
        shown = ", ".join(pending[:SHOWN_CASES]) + (
            f" and {len(pending) - SHOWN_CASES} more" if len(pending) > SHOWN_CASES else ""
        )
        remedy = (
            f"; do not recalibrate on this run: it names a possible change ({shown}), which a calibration now would "
            "learn as noise; `perfgate calibrate --replace --reason 'a new mode'` on a run that names none"
        )
    return Finding(FindingKind.UNSEEN_MODE, "; ".join(parts) + remedy, modes[0].case_id)


def _named(modes: Sequence[UnseenMode]) -> str:
    shown = [
        f"{m.case_id} {m.at_pct:+.1f}%, {m.past_pct:.1f}% past the calibration's {'slowest' if m.slower else 'fastest'}"
        f" process, {m.held} window runs"
        for m in modes[:SHOWN_CASES]
    ]
    more = f"; and {len(modes) - SHOWN_CASES} more" if len(modes) > SHOWN_CASES else ""
    return "; ".join(shown) + more
