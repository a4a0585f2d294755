"""A calibration process that ran the Triton autotuner is a warm-up, left out of the noise (issue 17): it
tuned and pinned the others, which a gate process never does. GPU-free: runs are records, and the
calibration's child processes are stand-ins that report the times they were told."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.baseline import BaselineCase
from perfgate.baseline import calibrate as calibrate_module
from perfgate.baseline.calibrate import calibrate
from perfgate.baseline.review import calibration_notes
from perfgate.baseline.write import calibrated_baseline
from perfgate.config.settings import Settings
from perfgate.measure.processes import ChildRun
from perfgate.model import Run
from tests.helpers import ENV, make_run

TUNED, PLAIN = "k.py::test_matmul", "k.py::test_copy"
PINS = (("matmul_kernel", "BLOCK_M: 128, BLOCK_N: 128, num_warps: 8"),)
# process 1 autotuned the matmul (3% slower: the tuner's benchmarking warmed and moved the GPU state), then
# six pinned processes ~0.2% apart; the copy has no autotuner and is steady in every process
MATMUL_US = (206.4, 200.0, 200.4, 199.6, 200.2, 199.8, 200.1)
COPY_US = (50.0, 50.1, 49.9, 50.05, 49.95, 50.0, 50.02)


def _runs(matmul_us: tuple[float, ...] = MATMUL_US, autotuned: bool = True) -> list[Run]:
    """One run per process; every process's matmul carries the pins it tuned or held."""
    runs = []
    for m, c in zip(matmul_us, COPY_US):
        run = make_run({TUNED: [m / 1000] * 20, PLAIN: [c / 1000] * 20})
        results = tuple(replace(r, autotune=PINS if autotuned and r.case_id == TUNED else ()) for r in run.results)
        runs.append(replace(run, results=results))
    return runs


def _calibrated(runs: list[Run], autotuned_first: bool, tmp_path: Path) -> dict[str, BaselineCase]:
    return dict(
        calibrated_baseline(
            None, runs, tmp_path / "b.json", "t", "calibrate", Settings(), autotuned_first=autotuned_first
        ).cases
    )


def test_the_process_that_ran_the_autotuner_is_a_warmup_left_out_of_the_noise(tmp_path):
    case = _calibrated(_runs(), True, tmp_path)[TUNED]
    assert case.process_medians_ms == pytest.approx([m / 1000 for m in MATMUL_US[1:]])
    assert case.autotune_process_median_ms == pytest.approx(0.2064)
    assert case.median_ms == pytest.approx(0.2000, abs=1e-4)


def test_the_noise_is_what_it_would_be_without_the_autotuning_process(tmp_path):
    with_warmup = _calibrated(_runs(), True, tmp_path)[TUNED]
    pinned_only = _calibrated(_runs()[1:], False, tmp_path)[TUNED]
    assert with_warmup.noise_pct == pinned_only.noise_pct and with_warmup.threshold_pct == pinned_only.threshold_pct
    assert with_warmup.noise_pct is not None and with_warmup.noise_pct < 0.5
    kept_in = _calibrated(_runs(), False, tmp_path)[TUNED]  # had process 1 counted: a noise ~5x larger
    assert kept_in.noise_pct is not None and kept_in.noise_pct > 4 * with_warmup.noise_pct


def test_a_slow_process_that_did_not_autotune_stays_in_the_noise(tmp_path):
    # The same slow first process, but no autotuner ran in it: it is a draw of the gate's processes.
    case = _calibrated(_runs(autotuned=False), False, tmp_path)[TUNED]
    assert len(case.process_medians_ms) == len(MATMUL_US) and case.autotune_process_median_ms is None
    # the calibration autotuned (the matmul) but the copy has no autotuner: its process 1 is kept
    copy = _calibrated(_runs(), True, tmp_path)[PLAIN]
    assert copy.process_medians_ms == pytest.approx([c / 1000 for c in COPY_US])
    assert copy.autotune_process_median_ms is None


def test_calibration_notes_name_the_autotuning_process_and_only_for_the_autotuned_case(tmp_path):
    runs = _runs()
    baseline = calibrated_baseline(None, runs, tmp_path / "b.json", "t", "calibrate", Settings(), autotuned_first=True)
    notes = [n for n in calibration_notes(baseline, runs, True) if "autotuner" in n]
    assert notes == [
        f"perfgate note: {TUNED}: process 1 ran the autotuner (206.4 us); it is a warm-up, left out of the noise"
    ]


class _StandinChildRunner:
    """A calibration's child process: returns the next process's declared results; records the pins it held."""

    processes: list[Run] = []
    pinned_with: list[Path | None] = []

    def __init__(self, rootdir: Path, settings: Settings, baseline_file: Path | None = None) -> None:
        self.baseline_file = baseline_file

    def run(self, pytest_args: list[str], on_case=None) -> ChildRun:
        _StandinChildRunner.pinned_with.append(self.baseline_file)
        run = _StandinChildRunner.processes[len(_StandinChildRunner.pinned_with) - 1]
        return ChildRun(run.results, (), ENV, 0)


@pytest.mark.parametrize("autotuned", [True, False])
def test_calibrate_runs_one_more_process_when_the_first_autotunes_so_n_remain(autotuned, tmp_path, monkeypatch):
    monkeypatch.setattr(calibrate_module, "ChildRunner", _StandinChildRunner)
    monkeypatch.setattr(_StandinChildRunner, "processes", _runs(autotuned=autotuned))
    monkeypatch.setattr(_StandinChildRunner, "pinned_with", [])
    result = calibrate(Settings(rootdir=tmp_path, pin_autotune=True), 6, [])
    assert result.autotuned_first is autotuned and len(result.runs) == (7 if autotuned else 6)
    pinned = _StandinChildRunner.pinned_with[1:]
    assert all(p is not None and p.name == "pins.json" for p in pinned) if autotuned else not any(pinned)
    case = calibrated_baseline(
        None,
        list(result.runs),
        tmp_path / "b.json",
        "t",
        "calibrate",
        Settings(),
        autotuned_first=result.autotuned_first,
    ).cases[TUNED]
    assert len(case.process_medians_ms) == 6  # N processes count in the noise either way


def test_the_gate_judges_by_the_noise_of_the_pinned_processes_alone(tmp_path):
    from perfgate.gate.noise import estimate_noise
    from perfgate.gate.window import with_noise

    baseline = calibrated_baseline(
        None, _runs(), tmp_path / "b.json", "t", "calibrate", Settings(), autotuned_first=True
    )
    gate_run = _runs(matmul_us=(200.1,))[0]
    [matmul] = [r for r in with_noise(gate_run.results, baseline, Settings(), {}) if r.case_id == TUNED]
    noise = matmul.thresholds.time_noise
    expected = estimate_noise([m / 1000 for m in MATMUL_US[1:]], (), 0.1)
    assert noise is not None and expected is not None
    assert noise.noise_pct == pytest.approx(expected.noise_pct) and noise.df == len(MATMUL_US) - 2


def test_calibration_warns_about_a_case_strict_mode_will_fail_on_every_run(tmp_path):
    """Calibration processes +74414% apart (one process hit a cold cache) are no calibration of one
    version of the code: the strict ceiling fails such a case on every run, so calibrate says so."""
    wild = (50.0, 50.1, 49.9, 50.05, 37256.9, 50.0)
    runs = _runs(autotuned=False)[:6]
    runs = [
        replace(
            run,
            results=tuple(
                replace(r, timing=replace(r.timing, median_ms=w / 1000)) if r.case_id == PLAIN else r
                for r in run.results
            ),
        )
        for run, w in zip(runs, wild, strict=True)
    ]
    baseline = calibrated_baseline(None, runs, tmp_path / "b.json", "t", "calibrate", Settings())
    (warning,) = [n for n in calibration_notes(baseline, runs, False) if "ceiling" in n]
    assert (
        warning.startswith(f"perfgate warning: {PLAIN}: calibration processes +74") and "strict mode fails" in warning
    )
    assert not [n for n in calibration_notes(baseline, runs, False, ceiling_pct=1e6) if "ceiling" in n]


def test_what_a_case_detects_comes_with_the_range_six_processes_allow(tmp_path):
    from perfgate.baseline.write import detects_range

    runs = _runs(autotuned=False)[:6]
    baseline = calibrated_baseline(None, runs, tmp_path / "b.json", "t", "calibrate", Settings())
    case = baseline.cases[TUNED]
    low, high = detects_range(case.process_medians_ms, runs[0].results[0], Settings(), 2)
    assert low < case.threshold_pct < high
