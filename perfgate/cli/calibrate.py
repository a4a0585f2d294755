"""`perfgate calibrate --runs N --reason "why" [-- PYTEST_ARGS]`: N fresh processes -> the calibrated
baseline for this device (the work is in baseline/calibrate.py)."""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from perfgate.baseline import Baseline, baseline_path
from perfgate.baseline.calibrate import calibrate
from perfgate.baseline.review import budget_note, calibration_notes
from perfgate.baseline.write import calibrated_baseline, update_baseline_file
from perfgate.cli.settings import command_settings
from perfgate.config.settings import Settings
from perfgate.errors import ConfigError
from perfgate.measure.environment import who
from perfgate.model import CaseResult
from perfgate.report.progress import elapsed_text, open_progress

MIN_RUNS = 3


def calibrate_command(args: argparse.Namespace) -> int:
    if args.runs is not None and args.runs < MIN_RUNS:
        raise ConfigError(
            f"perfgate calibrate: --runs must be at least {MIN_RUNS} (between-process noise needs "
            f"several processes; without --runs the suite's size decides, at least 10)"
        )
    if not args.reason.strip():
        raise ConfigError("perfgate calibrate: --reason must say why the baseline changes")
    settings = command_settings(args, enabled=True)
    started = time.monotonic()
    with open_progress() as progress:
        calibration = calibrate(settings, args.runs, list(args.pytest_args), progress, keep_cases=not args.replace)
    runs = calibration.runs
    env = runs[0].environment
    path = settings.baseline_file or baseline_path(settings.baseline_dir, env)
    if settings.store:
        from perfgate.store import open_store

        with open_store(settings.db_path) as store:
            for run in runs:
                store.save_run(run)
        print(f"perfgate: stored the {len(runs)} calibration runs in {settings.db_path}")

    def change(old: Baseline | None) -> Baseline:
        if old is not None and args.replace:  # keep the update log, not the cases
            old = replace(old, cases={})
        return calibrated_baseline(old, runs, path, who(), args.reason, settings, calibration.autotuned_first)

    new = update_baseline_file(path, change)
    assert new is not None
    measured = {r.case_id: r for run in runs for r in run.results}
    print("\n".join(_table(new, measured, settings)))
    for line in calibration_notes(new, runs, calibration.autotuned_first, settings.ceiling_pct):
        print(line)
    note = budget_note(len(new.cases), calibration.processes, settings.false_alarm_pct)
    if note:
        print(note)
    print(
        f"perfgate: wrote calibrated baseline {path}: {len(runs[0].results)} case(s) from {len(runs)} processes "
        f"in {elapsed_text(time.monotonic() - started)}"
    )
    return 0


def _table(b: Baseline, cases: dict[str, CaseResult], settings: Settings) -> list[str]:
    """One row per calibrated case: what it detects with 80% power, and the range of that (90%) given how
    little six processes know about their own spread."""
    from perfgate.baseline.write import detects_range
    from perfgate.report.format import fmt_value
    from perfgate.report.terminal import render_table

    rows = []
    for cid, c in sorted(b.cases.items()):
        if cid not in cases:
            continue
        span = detects_range(c.process_medians_ms, cases[cid], settings, len(cases)) if c.calibrated else None
        rows.append(
            (
                cid,
                fmt_value(c.time_ms, "ms"),
                f"{c.noise_pct:.2f}%" if c.noise_pct is not None else "-",
                f">= {c.threshold_pct:.2f}%" if c.threshold_pct is not None else "-",
                f"{span[0]:.2f}-{span[1]:.2f}%" if span else "-",
                str(len(c.process_medians_ms)),
                "; ".join(f"{k}: {v}" for k, v in c.autotune) or "-",
            )
        )
    return render_table(rows, ("case", "time", "noise", "detects", "90% range", "processes", "autotune"))
