"""`perfgate calibrate --runs N --reason "why" [-- PYTEST_ARGS]`: N fresh processes -> the calibrated
baseline for this device (the work is in baseline/calibrate.py)."""

from __future__ import annotations

import argparse
from dataclasses import replace

from perfgate.baseline import Baseline, baseline_path
from perfgate.baseline.calibrate import calibrate
from perfgate.baseline.write import calibrated_baseline, update_baseline_file
from perfgate.cli.settings import command_settings
from perfgate.config.settings import Settings
from perfgate.errors import ConfigError
from perfgate.gate.compare import decision_settings
from perfgate.measure.environment import who

MIN_RUNS = 3


def calibrate_command(args: argparse.Namespace) -> int:
    if args.runs < MIN_RUNS:
        raise ConfigError(f"perfgate calibrate: --runs must be at least {MIN_RUNS} (between-process noise needs "
                          f"several processes; 10 is a good default)")
    if not args.reason.strip():
        raise ConfigError("perfgate calibrate: --reason must say why the baseline changes")
    settings = command_settings(args, enabled=True)
    runs = calibrate(settings, args.runs, list(args.pytest_args))
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
        return calibrated_baseline(old, runs, path, who(), args.reason, decision_settings(settings))

    new = update_baseline_file(path, change)
    assert new is not None
    measured = {r.case_id for run in runs for r in run.results}
    print("\n".join(_table(new, measured)))
    for line in _outlier_notes(new, measured, settings):
        print(line)
    print(f"perfgate: wrote calibrated baseline {path}: {len(runs[0].results)} case(s) from {len(runs)} processes")
    return 0


def _outlier_notes(b: Baseline, cases: set[str], settings: Settings) -> list[str]:
    """Name the processes the noise leaves out (decision.outliers): a reviewer should see them."""
    from perfgate.gate.decision import outliers
    from perfgate.report.format import fmt_value

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
    from perfgate.report.format import fmt_value
    from perfgate.report.terminal import render_table

    rows = [(cid, fmt_value(c.median_ms, "ms"), f"{c.noise_pct:.2f}%" if c.noise_pct is not None else "-",
             f">= {c.threshold_pct:.2f}%" if c.threshold_pct is not None else "-", str(len(c.process_medians_ms)),
             "; ".join(f"{k}: {v}" for k, v in c.autotune) or "-")
            for cid, c in sorted(b.cases.items()) if cid in cases]
    return render_table(rows, ("case", "median", "noise", "detects", "processes", "autotune"))
