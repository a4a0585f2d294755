"""`perfgate calibrate --runs N --reason "why" [-- PYTEST_ARGS]`: a baseline from N fresh processes.

Each process is a normal `pytest --perfgate` measurement (measure/children.py). The baseline keeps, per
case, the median of the process medians, every process median, the between-process noise and the change
the case can detect; later `pytest --perfgate` runs gate on that noise (decision.py). With
`pin_autotune`, the first process's autotune choices are held in the others, so the calibration measures
noise, not the autotuner changing its mind.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from dataclasses import replace
from pathlib import Path

from perfgate.baseline import Baseline, baseline_path
from perfgate.baseline_write import calibrated_baseline, update_baseline_file, updated_baseline, write_baseline
from perfgate.compare import decision_settings
from perfgate.errors import ConfigError, PerfgateError
from perfgate.measure.children import ChildRun, ChildRunner
from perfgate.measure.environment import command_line, git_info, who
from perfgate.model import Run, RunInfo, RunKind
from perfgate.project import project_settings
from perfgate.settings import Settings

MIN_RUNS = 3


def calibrate_command(args: argparse.Namespace) -> int:
    if args.runs < MIN_RUNS:
        raise ConfigError(f"perfgate calibrate: --runs must be at least {MIN_RUNS} (between-process noise needs "
                          f"several processes; 10 is a good default)")
    if not args.reason.strip():
        raise ConfigError("perfgate calibrate: --reason must say why the baseline changes")
    settings = project_settings(args.rootdir, db_path=args.db, baseline_dir=args.baseline_dir,
                                baseline_file=args.baseline_file, enabled=True)
    runs = calibrate(settings, args.runs, list(args.pytest_args))
    env = runs[0].environment
    path = settings.baseline_file or baseline_path(settings.baseline_dir, env)
    if not args.no_store and settings.store:
        from perfgate.store import open_store

        with open_store(settings.db_path) as store:
            for run in runs:
                store.save_run(run)
        print(f"perfgate: stored the {len(runs)} calibration runs in {settings.db_path}")
    def change(old: Baseline | None) -> Baseline:
        if old is not None and args.replace:  # keep the update log, not the cases
            old = replace(old, cases={})
        return calibrated_baseline(old, runs, path, who(), args.reason, decision_settings(settings))

    new = update_baseline_file(path, change)
    assert new is not None
    measured = {r.case_id for run in runs for r in run.results}
    print("\n".join(_table(new, measured)))
    for line in _outlier_notes(new, measured, settings):
        print(line)
    print(f"perfgate: wrote calibrated baseline {path}: {len(runs[0].results)} case(s) from {len(runs)} processes")
    return 0


def calibrate(settings: Settings, runs: int, pytest_args: list[str]) -> list[Run]:
    """N fresh measuring processes -> N runs (one environment); PerfgateError if any process failed."""
    runner = ChildRunner(settings.rootdir, settings, settings.baseline_file)
    out: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="perfgate-calibrate-") as tmp:
        for i in range(1, runs + 1):
            started = time.monotonic()
            child = runner.run(pytest_args)
            _check_child(i, child, out)
            run = _as_run(child)
            out.append(run)
            print(f"perfgate: calibration process {i}/{runs}: {len(run.results)} case(s) in "
                  f"{time.monotonic() - started:.1f} s", file=sys.stderr)
            if i == 1 and settings.pin_autotune and any(r.autotune for r in run.results):
                runner = _pinned_runner(settings, run, Path(tmp))
    return out


def _check_child(i: int, child: ChildRun, earlier: list[Run]) -> None:
    if child.returncode != 0:
        raise PerfgateError(f"perfgate calibrate: process {i}: pytest exited with status {child.returncode} "
                            f"(tests failed, errored or none were collected); no baseline written")
    if not child.results or child.environment is None:
        raise PerfgateError(f"perfgate calibrate: process {i} measured no perf case; no baseline written")
    if earlier and earlier[0].environment.comparability_key() != child.environment.comparability_key():
        raise PerfgateError(f"perfgate calibrate: process {i} ran on {child.environment.device_name}, process 1 on "
                            f"{earlier[0].environment.device_name}; no baseline written")


def _as_run(child: ChildRun) -> Run:
    from perfgate.plugin_setup import utc_now

    assert child.environment is not None
    commit, branch, dirty = git_info(Path.cwd())
    now = utc_now()
    info = RunInfo(started_at=now, finished_at=now, git_commit=commit, git_branch=branch, git_dirty=dirty,
                   hostname=child.environment.hostname, argv=command_line(), run_uid=uuid.uuid4().hex,
                   unmeasured=child.unmeasured, kind=RunKind.CALIBRATION)
    return Run(info=info, environment=child.environment, results=child.results)


def _pinned_runner(settings: Settings, first: Run, tmp: Path) -> ChildRunner:
    """Processes 2..N hold the autotune choices of process 1 (a throwaway baseline carries the pins)."""
    pins = tmp / "pins.json"
    write_baseline(replace(updated_baseline(None, first, pins, who(), "autotune pins"), path=pins))
    return ChildRunner(settings.rootdir, settings, pins)


def _outlier_notes(b: Baseline, cases: set[str], settings: Settings) -> list[str]:
    """Name the processes the noise leaves out (decision.outliers): a reviewer should see them."""
    from perfgate.decision import outliers
    from perfgate.report.quantity import fmt_value

    lines = []
    for cid, c in sorted(b.cases.items()):
        wild = outliers(c.process_medians_ms, c.timer, settings.noise_floor_pct) if cid in cases else frozenset()
        if wild:
            rest = [v for i, v in enumerate(c.process_medians_ms) if i not in wild]
            odd = ", ".join(f"process {i + 1} at {fmt_value(c.process_medians_ms[i], 'ms')}" for i in sorted(wild))
            lines.append(f"perfgate note: {cid}: {odd}, far from the others ({fmt_value(min(rest), 'ms')}-"
                         f"{fmt_value(max(rest), 'ms')}): left out of its noise; at gate time a process like it "
                         "is re-measured by confirmation")
    return lines


def _table(b: Baseline, cases: set[str]) -> list[str]:
    from perfgate.report.quantity import fmt_value
    from perfgate.report.terminal import render_table

    rows = [(cid, fmt_value(c.median_ms, "ms"), f"{c.noise_pct:.2f}%" if c.noise_pct is not None else "-",
             f">= {c.threshold_pct:.2f}%" if c.threshold_pct is not None else "-", str(len(c.process_medians_ms)),
             "; ".join(f"{k}: {v}" for k, v in c.autotune) or "-")
            for cid, c in sorted(b.cases.items()) if cid in cases]
    return render_table(rows, ("case", "median", "noise", "detects", "processes", "autotune"))
