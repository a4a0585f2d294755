"""Each case's noise resolved at gate time: the baseline's calibration processes plus the noise window, the
process values of recent passing gate runs on the tracked branch (store/window.py reads them), stored
with the case (CaseThresholds.time_noise / speedup_noise / cycles_noise) so `perfgate compare` on the stored run
reaches the same verdict later, whatever the history holds by then.

The committed baseline stays the source of truth for the centre and the autotune pins; the window only
widens (or narrows) the noise, and only on the branch it is told to trust: a pull request's own runs
never shape the noise it is judged by.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from perfgate.baseline import Baseline, BaselineCase
from perfgate.config.settings import Settings
from perfgate.gate.cycles import cycles_noise
from perfgate.gate.noise import MIN_REFERENCE_PROCESSES, estimate_noise, noise_floor
from perfgate.metrics import SPEEDUP_METRIC
from perfgate.model import CaseResult, NoiseEstimate, Verdict

if TYPE_CHECKING:
    from perfgate.store.window import PassingGateMedian


@dataclass(frozen=True)
class WindowValues:
    """A case's values from the noise window, newest first (speedups as measured, not reciprocals)."""

    medians_ms: tuple[float, ...] = ()
    speedups: tuple[float, ...] = ()
    mcycles: tuple[float, ...] = ()  # median SM cycles, of the runs that read the clock


def with_noise(
    results: Sequence[CaseResult], baseline: Baseline | None, settings: Settings, windows: Mapping[str, WindowValues]
) -> tuple[CaseResult, ...]:
    """`results` with each compared case's noise resolved from its calibration and its window."""
    if baseline is None:
        return tuple(results)
    out = []
    for res in results:
        base = baseline.cases.get(res.case_id)
        if base is None or base.timer is not res.timing.timer:
            out.append(res)
            continue
        window = windows.get(res.case_id, WindowValues())
        floor = noise_floor(res.timing.timer, settings.noise_floor_pct)
        time_noise = estimate_noise(base.time_values(), window.medians_ms, floor)
        speedup_noise = _speedup_noise(res, base, window, floor)
        thresholds = replace(
            res.thresholds,
            time_noise=time_noise,
            speedup_noise=speedup_noise,
            cycles_noise=cycles_noise(res, base, window.mcycles, settings),
        )
        out.append(replace(res, thresholds=thresholds))
    return tuple(out)


def _speedup_noise(res: CaseResult, base: BaselineCase, window: WindowValues, floor: float) -> NoiseEstimate | None:
    if res.speedup is None:
        return None
    calibration = (
        base.speedup_values()
        or tuple(1.0 / m.value for m in base.metrics if m.name == SPEEDUP_METRIC and m.value > 0)[:1]
    )
    return estimate_noise(calibration, tuple(1.0 / s for s in window.speedups if s > 0), floor)


def judged_with_noise(points: Sequence[PassingGateMedian], calibration: int) -> tuple[PassingGateMedian, ...]:
    """An uncalibrated case's window (`calibration` processes, fewer than three): its runs, newest first,
    without those judged INCONCLUSIVE while the case had no between-process noise (the calibration's
    processes and the window's runs before them fewer than three). Such a run was called inconclusive by the
    within-run test against `threshold_pct`, not as a draw of the noise's slow side; in the window it made a
    step its own noise (issue 31: a 1.2x slowdown, inconclusive once, then +30% ">= 279% unchanged"). The
    inconclusive runs judged with noise stay, as for a calibrated case (store/verdicts.py): leaving all of
    them out cut the window at its noise band and raised the false alarms of unchanged uncalibrated cases
    several-fold (scripts/replay_uncalibrated.py). `points` are the newest runs read (store/window.py); when
    they do not reach back to the case's first, the oldest read stand in for it: a case whose every run was
    inconclusive without noise stays without noise however many it has."""
    kept: list[PassingGateMedian] = []
    for p in reversed(points):  # oldest first: as the runs were judged
        if p.verdict is Verdict.INCONCLUSIVE and calibration + len(kept) < MIN_REFERENCE_PROCESSES:
            continue
        kept.append(p)
    return tuple(reversed(kept))
