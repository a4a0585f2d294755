"""Calibration: a baseline from N fresh processes.

Each process is a normal `pytest --perfgate` measurement (measure/processes.py). The baseline keeps, per
case, the median of the process medians, every process median, the between-process noise and the change
the case can detect; later `pytest --perfgate` runs gate on that noise (gate/decision.py). With
`pin_autotune`, the first process's autotune choices are held in the others, so the calibration measures
noise, not the autotuner changing its mind.

How many processes, unless the caller says: enough for the run's false-alarm budget to hold for noise of
any shape from the first gate run on (`processes_for`): the rank bound of gate/decision.py needs n reference
processes with 1 / C(n + 8, 8) within the per-test alpha, so 10 up to 437 gated tests, 12 at 1,000, 17 at
10,000 (at a 1% budget). Process 1 finds out how many tests the suite has.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from perfgate.baseline.write import updated_baseline, write_baseline
from perfgate.config.settings import Settings
from perfgate.errors import PYTEST_NO_TESTS_COLLECTED, PYTEST_USAGE_ERROR, PerfgateError, ToolFailed
from perfgate.gate.decision import per_test_alpha, reference_processes_needed
from perfgate.measure.environment import utc_now, who
from perfgate.measure.processes import ChildRun, ChildRunner
from perfgate.model import CaseResult, Run, RunKind
from perfgate.report.progress import Progress, QuietProgress

DEFAULT_PROCESSES = 10  # the fewest a calibration takes unless told: the noise known to -27%/+65% (90%, 9 df)


@dataclass(frozen=True)
class Calibration:
    runs: tuple[Run, ...]
    autotuned_first: bool  # process 1 ran the autotuners and pinned the others: a warm-up for those cases
    processes: int  # the processes each case's noise comes from (the warm-up not counted)
    sized_for: int | None = None  # the gated tests the count was chosen for (None: the caller chose it)


def processes_for(gated_tests: int, false_alarm_pct: float) -> int:
    """Calibration processes for `gated_tests` tests to keep the run's false-alarm budget from the first
    gate run, whatever the noise's shape (two modes, heavy tails): at least DEFAULT_PROCESSES, and as many
    reference processes as the rank bound needs to reach the per-test alpha with the most confirmation
    processes a failure may ask for (gate/decision.py reference_processes_needed)."""
    return max(DEFAULT_PROCESSES, reference_processes_needed(per_test_alpha(false_alarm_pct, gated_tests)))


def gated_count(results: Sequence[CaseResult], known_case_ids: Collection[str], settings: Settings) -> int:
    """The gated tests of the baseline this calibration writes (gate/compare.py gated_tests): one a case,
    two for a case with a reference when its time is gated too; cases the baseline keeps count once."""
    per_ref = 2 if settings.gate_time_with_reference else 1
    measured = {r.case_id: per_ref if r.speedup is not None else 1 for r in results}
    return sum(measured.values()) + len(set(known_case_ids) - set(measured))


def calibrate(
    settings: Settings,
    runs: int | None,
    pytest_args: list[str],
    progress: Progress | None = None,
    keep_cases: bool = True,
) -> Calibration:
    """N fresh measuring processes (N + 1 when the first autotunes: it pins the others and is a warm-up for
    its autotuned cases) -> their runs (one environment); PerfgateError if any process failed. `runs=None`:
    N from the suite's size by `processes_for`: the cases process 1 measured and, with `keep_cases`, the
    other cases of the baseline file it will update. `progress` shows each process and its cases as they
    are measured (none: nothing shown)."""
    shown: Progress = progress if progress is not None else QuietProgress()
    runner = ChildRunner(settings.rootdir, settings, settings.baseline_file)
    out: list[Run] = []
    wanted = runs if runs is not None else DEFAULT_PROCESSES  # until process 1 has counted the cases
    total, autotuned, sized_for = wanted, False, None
    with tempfile.TemporaryDirectory(prefix="perfgate-calibrate-") as tmp:
        while len(out) < total:
            i = len(out) + 1
            started_at = utc_now()
            cases = len(out[0].results) if out else None  # process 1 finds out how many there are
            with shown.task(f"calibration process {i}/{total}", total=cases) as task:
                child = _run_child(runner, pytest_args, i, task.advance)
            _check_child(i, child, out)
            run = _as_run(child, settings.rootdir, started_at)
            out.append(run)
            if i > 1:
                continue
            if runs is None:
                sized_for = gated_count(run.results, _kept_case_ids(settings, run) if keep_cases else (), settings)
                wanted = processes_for(sized_for, settings.false_alarm_pct)
                shown.note(
                    f"perfgate: {sized_for} gated test(s): {wanted} calibration processes hold the "
                    f"{settings.false_alarm_pct:g}% false-alarm budget from the first gate run whatever the "
                    f"noise's shape (--runs N chooses another number)"
                )
            total = wanted
            if settings.pin_autotune and any(r.autotune for r in run.results):
                runner = _pinned_runner(settings, run, Path(tmp))
                total, autotuned = wanted + 1, True
    return Calibration(tuple(out), autotuned, wanted, sized_for)


def _kept_case_ids(settings: Settings, first: Run) -> Collection[str]:
    """The cases of the baseline file this calibration updates (kept there, so gated with the others); one
    that does not load counts nothing here (writing the baseline says what is wrong with it)."""
    from perfgate.baseline import baseline_path, load_baseline

    path = settings.baseline_file or baseline_path(settings.baseline_dir, first.environment)
    try:
        old = load_baseline(path)
    except PerfgateError:
        return ()
    return tuple(old.cases) if old is not None else ()


def _run_child(runner: ChildRunner, pytest_args: list[str], i: int, on_case: Callable[[str], None]) -> ChildRun:
    try:
        return runner.run(pytest_args, on_case=on_case)
    except ToolFailed as err:  # pytest refused its arguments before perfgate's plugin ran: pytest's own line
        if err.returncode != PYTEST_USAGE_ERROR:
            raise
        return ChildRun((), (), None, PYTEST_USAGE_ERROR, err.stderr_tail)


def _check_child(i: int, child: ChildRun, earlier: list[Run]) -> None:
    if child.returncode == PYTEST_USAGE_ERROR:
        raise PerfgateError(
            f"perfgate calibrate: process {i}: pytest: {child.said or 'it refused its arguments'} (exit status 4, "
            "a usage error); no baseline written"
        )
    if child.returncode == PYTEST_NO_TESTS_COLLECTED:
        raise PerfgateError(
            f"perfgate calibrate: process {i}: pytest collected no perf test (exit status 5): the paths, -k and -m "
            "given select none; no baseline written"
        )
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
