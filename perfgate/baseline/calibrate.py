"""Calibration: a baseline from N fresh processes.

Each process is a normal `pytest --perfgate` measurement (measure/processes.py). The baseline keeps, per
case, the median of the process medians, every process median, the between-process noise and the change
the case can detect; later `pytest --perfgate` runs gate on that noise (gate/decision.py). With
`pin_autotune`, the first process's autotune choices are held in the others, so the calibration measures
noise, not the autotuner changing its mind.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from perfgate.baseline.write import updated_baseline, write_baseline
from perfgate.config.settings import Settings
from perfgate.errors import PerfgateError
from perfgate.measure.environment import utc_now, who
from perfgate.measure.processes import ChildRun, ChildRunner
from perfgate.model import Run, RunKind
from perfgate.report.progress import Progress, QuietProgress


@dataclass(frozen=True)
class Calibration:
    runs: tuple[Run, ...]
    autotuned_first: bool  # process 1 ran the autotuners and pinned the others: a warm-up for those cases


def calibrate(settings: Settings, runs: int, pytest_args: list[str], progress: Progress | None = None) -> Calibration:
    """N fresh measuring processes (N + 1 when the first autotunes: it pins the others and is a warm-up for
    its autotuned cases) -> their runs (one environment); PerfgateError if any process failed. `progress`
    shows each process and its cases as they are measured (none: nothing shown)."""
    shown: Progress = progress if progress is not None else QuietProgress()
    runner = ChildRunner(settings.rootdir, settings, settings.baseline_file)
    out: list[Run] = []
    total, autotuned = runs, False
    with tempfile.TemporaryDirectory(prefix="perfgate-calibrate-") as tmp:
        while len(out) < total:
            i = len(out) + 1
            started_at = utc_now()
            cases = len(out[0].results) if out else None  # process 1 finds out how many there are
            with shown.task(f"calibration process {i}/{total}", total=cases) as task:
                child = runner.run(pytest_args, on_case=task.advance)
            _check_child(i, child, out)
            run = _as_run(child, settings.rootdir, started_at)
            out.append(run)
            if i == 1 and settings.pin_autotune and any(r.autotune for r in run.results):
                runner = _pinned_runner(settings, run, Path(tmp))
                total, autotuned = runs + 1, True
    return Calibration(tuple(out), autotuned)


def _check_child(i: int, child: ChildRun, earlier: list[Run]) -> None:
    if child.returncode != 0:
        raise PerfgateError(
            f"perfgate calibrate: process {i}: pytest exited with status {child.returncode} "
            f"(tests failed, errored or none were collected); no baseline written"
        )
    if not child.results or child.environment is None:
        raise PerfgateError(f"perfgate calibrate: process {i} measured no perf case; no baseline written")
    if earlier and not earlier[0].environment.comparable_with(child.environment):
        raise PerfgateError(
            f"perfgate calibrate: process {i} ran on {child.environment.device_name}, process 1 on "
            f"{earlier[0].environment.device_name}; no baseline written"
        )


def _as_run(child: ChildRun, rootdir: Path, started_at: str) -> Run:
    from perfgate.gate.run import build_run

    assert child.environment is not None
    return build_run(child.results, child.unmeasured, child.environment, rootdir, started_at, kind=RunKind.CALIBRATION)


def _pinned_runner(settings: Settings, first: Run, tmp: Path) -> ChildRunner:
    """Processes 2..N hold the autotune choices of process 1 (a throwaway baseline carries the pins)."""
    pins = tmp / "pins.json"
    write_baseline(replace(updated_baseline(None, first, pins, who(), "autotune pins"), path=pins))
    return ChildRunner(settings.rootdir, settings, pins)
