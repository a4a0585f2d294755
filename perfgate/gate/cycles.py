"""A case's time in SM cycles, judged like its time (gate/decision.py's rule, on process values): the baseline's
calibration processes' median cycles are the centre, the calibration plus the noise window the noise, this run's
process and its confirmations the evidence. Whether the cycles or the time is the gated one of the two is
gate/bottleneck.py's choice; the other is reported, not gated, so a case never fails twice.
"""

from __future__ import annotations

from perfgate.baseline import BaselineCase
from perfgate.config.settings import Settings
from perfgate.gate.decision import Decision, Rule, decide
from perfgate.gate.noise import estimate_noise, noise_floor
from perfgate.metrics import CYCLES_METRIC
from perfgate.model import CaseResult, CommonShift, Comparison, Direction, NoiseEstimate

UNIT = "Mcycles"


def cycles_noise(
    res: CaseResult, base: BaselineCase, window_mcycles: tuple[float, ...], settings: Settings
) -> NoiseEstimate | None:
    """The cycles' between-process noise: the calibration's processes plus the window's (None without cycles)."""
    if res.cycles is None or not base.process_mcycles:
        return None
    floor = noise_floor(res.timing.timer, settings.noise_floor_pct)
    return estimate_noise(base.cycle_values(), window_mcycles, floor)


def cycles_decision(
    res: CaseResult, base: BaselineCase, rule: Rule, settings: Settings, shift: CommonShift | None = None
) -> Decision | None:
    """The verdict on the case's process medians in cycles (noise resolved with the run, else the calibration's),
    against the centre moved by the run's common-mode shift when it is gated and there is one (gate/common.py);
    None when the run or the baseline has none."""
    current = res.process_mcycles
    if not current or not base.process_mcycles:
        return None
    noise = res.thresholds.cycles_noise or cycles_noise(res, base, (), settings)
    return decide(
        base.cycle_values(),
        current,
        noise,
        rule,
        threshold_pct=res.thresholds.time_pct,
        shift_pct=shift.shift_pct if shift is not None else 0.0,
        shift_variance=shift.variance_share if shift is not None else 0.0,
    )


def compare_cycles(
    res: CaseResult,
    base: BaselineCase,
    settings: Settings,
    rule: Rule,
    gated: bool,
    why: str,
    shift: CommonShift | None = None,
) -> Comparison | None:
    """The cycles row (unit Mcycles): gated for a compute-bound case, else reported beside the time; `why` is the
    choice's reason (gate/bottleneck.py)."""
    d = cycles_decision(res, base, rule, settings, shift)
    if d is None or res.cycles is None:
        return None
    centre = sum(base.cycle_values()) / len(base.cycle_values())
    current = res.process_mcycles
    c = res.cycles
    clocks = f"SM clock {c.clock_median_mhz:.0f} MHz ({c.clock_min_mhz:.0f}-{c.clock_max_mhz:.0f})"
    source = f"noise from {d.noise.df + 1} processes ({d.noise.window_runs} from the history)" if d.noise else ""
    note = f"gated: {why}" if gated else f"reported, not gated ({why})"
    if shift is not None and d.noise is not None:
        note += f"; change against the run's common-mode shift ({shift.shift_pct:+.1f}%)"
    return Comparison(
        case_id=res.case_id,
        metric=CYCLES_METRIC,
        unit=UNIT,
        direction=Direction.LOWER,
        verdict=d.verdict,
        baseline=centre,
        current=sum(current) / len(current),
        change_pct=d.change_pct,
        ci_low_pct=d.ci_low_pct,
        ci_high_pct=d.ci_high_pct,
        threshold_pct=d.threshold_pct,
        noise_pct=d.noise.noise_pct if d.noise else None,
        score=d.score,
        processes=d.processes,
        note="; ".join(filter(None, (note, source, clocks))),
        detects_pct=d.detects_pct,
        gated=gated,
        suspect=d.suspect and gated,
    )
