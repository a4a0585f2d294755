"""Runs whose cases carry a given noise window (relative to their calibration), for the tests of what a window
beyond every calibration process means: the unseen-mode note (tests/test_unseen_mode.py) and the run's share of
unseen modes (tests/test_mode_share.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from perfgate.config.settings import Settings
from perfgate.gate.findings import GateFacts
from perfgate.gate.noise import estimate_noise
from perfgate.gate.run import evaluate
from perfgate.model import CaseThresholds, GateResult
from tests.helpers import calibrated_of, make_run, noisy

# ten calibration processes ~0.2% apart, all in the fast mode
SPREAD = (0.997, 0.9985, 0.999, 0.9995, 1.0, 1.0003, 1.0007, 1.001, 1.0015, 1.003)
FAST = [1.0 + d for d in (0.001, -0.002, 0.0005, -0.0005, 0.002, -0.001)]
MODED = FAST[:3] + [1.029, 1.031, 1.030] + FAST[3:]  # newest first: three of nine runs in a mode 3% slower


def gate_with_windows(
    tmp_path: Path, window: dict[str, list[float]], factors: dict[str, float], processes: int, settings: Settings
) -> GateResult:
    """A run of each case at its factor over `processes` processes (a fresh process lands where the run's did),
    each case's noise window `window[case]` (relative to its calibration), gated with `settings`."""
    calibration = make_run({cid: noisy(1.0, seed=i, sd=0.0005) for i, cid in enumerate(factors)})
    baseline = calibrated_of(calibration, tmp_path, SPREAD)
    results = []
    for i, (cid, f) in enumerate(factors.items()):
        res = make_run({cid: noisy(f, seed=50 + i, sd=0.0005)}).results[0]
        cal = baseline.cases[cid].time_values()
        noise = estimate_noise(cal, [v * cal[0] / SPREAD[0] for v in window[cid]], 0.1)
        res = replace(res, thresholds=CaseThresholds(time_noise=noise), confirmation_medians_ms=(f,) * (processes - 1))
        results.append(res)
    return evaluate(replace(calibration, results=tuple(results)), baseline, settings, GateFacts())
