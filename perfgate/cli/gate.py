"""`perfgate compare` and `perfgate baseline show|diff`: the gate without pytest, on stored data."""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.baseline import Baseline, BaselineCase, load_baseline, parse_baseline
from perfgate.cli.settings import command_settings
from perfgate.errors import BaselineError, PerfgateError
from perfgate.inputs import is_pipe, parse_json, read_pipe
from perfgate.model import Environment

if TYPE_CHECKING:
    from perfgate.baseline.reanchor import Reanchor


def compare(args: argparse.Namespace) -> int:
    """Re-gate a stored run with the plugin's orchestration: same thresholds (stored with each case), same
    confirmation medians, same baseline resolution; creates nothing but the outputs asked for."""
    from perfgate.gate.run import GateRequest, resolve_baseline, run_gate
    from perfgate.store import open_store

    settings = command_settings(args, enabled=True)
    with open_store(settings.db_path, readonly=True) as store:
        run = store.load_run(args.run)
    path, baseline, facts = resolve_baseline(settings, run.environment)
    if baseline is None:
        print(f"perfgate: no baseline at {path}; every case is new", file=sys.stderr)
    outcome = run_gate(
        GateRequest(
            run=run,
            settings=settings,
            baseline=baseline,
            baseline_path=path,
            facts=facts,
            confirmer=None,
            resolve_noise=False,
            store=False,
            may_write_baseline=False,
        )
    )
    print(f"perfgate: run {run.run_id} ({run.info.started_at}, commit {run.info.git_commit[:12] or '-'}) vs {path}")
    print("\n".join([*outcome.messages, *outcome.terminal]))
    return outcome.exit_code


def _baseline_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(path.glob("*.json"))
        if not files:
            raise PerfgateError(f"perfgate: no baseline files in {path}")
        return files
    if not path.exists():
        raise BaselineError(path, "no such file")
    return [path]


def baseline_show(args: argparse.Namespace) -> int:
    from perfgate.report.format import fmt_value
    from perfgate.report.terminal import render_table

    for f in _baseline_files(args.path):
        b = load_baseline(f)
        assert b is not None
        state = "calibrated" if b.calibrated else "uncalibrated"
        print(f"{f}: {b.environment.device_name} ({b.environment.device_kind}), {len(b.cases)} case(s), {state}")
        if machine := _machine_line(b.environment):
            print(f"  host: {machine}")
        from perfgate.baseline.imported import imported_line

        if imported := imported_line(b):
            print(f"  {imported.removeprefix('perfgate: ')}")
        for u in b.updates[-3:]:
            runs = f" from {u.calibrated_runs} processes" if u.calibrated_runs else ""
            print(f"  updated {u.at} by {u.by} at {u.commit[:12] or '-'}{runs}: {u.reason}")
        rows = [
            (
                cid,
                fmt_value(c.time_ms, "ms"),
                _pct(c.noise_pct),
                _detects(c.threshold_pct),
                _speedup(c),
                _pct(c.speedup_noise_pct),
                _detects(c.speedup_threshold_pct),
                fmt_value(sum(c.process_mcycles) / len(c.process_mcycles), "Mcycles") if c.process_mcycles else "-",
                _pct(c.mcycles_noise_pct),
                _detects(c.mcycles_threshold_pct),
                str(len(c.samples_ms)),
                str(len(c.metrics)),
            )
            for cid, c in sorted(b.cases.items())
        ]
        print(
            "\n".join(
                render_table(
                    rows,
                    (
                        "case",
                        "time",
                        "noise",
                        "detects",
                        "speedup",
                        "noise",
                        "detects",
                        "cycles",
                        "noise",
                        "detects",
                        "samples",
                        "metrics",
                    ),
                )
            )
        )
    return 0


def baseline_reanchor(args: argparse.Namespace) -> int:
    """Move the baseline's centres onto the level of the last passing runs in the history (baseline/reanchor.py)."""
    from perfgate.baseline import Update
    from perfgate.baseline.reanchor import MIN_RUNS, reanchored
    from perfgate.baseline.write import update_baseline_file
    from perfgate.gate.run import with_noise_branch
    from perfgate.measure.environment import utc_now, who
    from perfgate.store import history_exists, open_store
    from perfgate.store.window import recent_passing_gate_medians

    settings = command_settings(args)
    if not settings.noise_branch:
        settings, line = with_noise_branch(settings)
        if line:
            print(line, file=sys.stderr)
    baseline = load_baseline(args.path)
    if baseline is None:
        raise BaselineError(args.path, "no such file")
    if not history_exists(settings.db_path):
        raise PerfgateError(f"perfgate baseline reanchor: no history at {settings.db_path}")
    branch = None if settings.noise_branch == "*" else settings.noise_branch
    with open_store(settings.db_path, readonly=True) as store:
        found = recent_passing_gate_medians(
            store, baseline.environment.comparability_key(), branch, args.runs, list(baseline.cases)
        )
        newest = max((p.run_id for points in found.values() for p in points), default=0)
        env = store.load_run(newest).environment if newest else baseline.environment
        commit = next((p.git_commit for points in found.values() for p in points if p.run_id == newest), "")
    recent = {cid: [p.median_ms for p in points] for cid, points in found.items()}
    update = Update(at=utc_now(), by=who(), commit=commit, reason=args.reason, cases=0)
    mcycles = {cid: [p.median_mcycles for p in points if p.median_mcycles is not None] for cid, points in found.items()}
    result = reanchored(
        baseline,
        recent,
        env,
        update,
        per_case=args.per_case,
        recent_mcycles=mcycles,
        force=args.force,
        floor_pct=settings.min_effect_pct,
    )
    if result is None:
        raise PerfgateError(
            f"perfgate baseline reanchor: no case of {args.path} has {MIN_RUNS} passing gate runs on "
            f"{settings.noise_branch!r} in {settings.db_path}; nothing written"
        )
    if not result.moved:
        print(_unmoved_line(args.path, result, args.runs))
        return 0
    update_baseline_file(args.path, lambda _old: result.baseline)
    print(
        f"perfgate: re-anchored {result.cases} case(s) of {args.path} "
        f"({'each by its own factor, ' if args.per_case else ''}common factor x{result.factor:.4f}, "
        f"{100 * (result.factor - 1):+.2f}%) on their last {args.runs} passing run(s); noise kept; commit the file"
    )
    if result.skipped:
        print(
            f"perfgate: {len(result.skipped)} case(s) kept their centre (fewer than {MIN_RUNS} runs): "
            f"{result.skipped[0]} ..."
        )
    return 0


def _unmoved_line(path: Path, result: Reanchor, runs: int) -> str:
    """Why a re-anchor moved nothing: its runs show no common shift, or too few cases to tell one."""
    from perfgate.gate.common import MIN_CASES

    level = f"x{result.factor:.4f} ({100 * (result.factor - 1):+.2f}%) on their last {runs} passing run(s)"
    if result.cases < MIN_CASES:
        few = f"too few to tell a common shift from noise ({MIN_CASES} needed)"
        why = f"{result.cases} case(s) with a level ({level}): {few}"
    else:
        why = f"no common shift: its {result.cases} case(s) did not move together beyond chance ({level})"
    return (
        f"perfgate: baseline reanchor: {path}: {why}; nothing moved, nothing written (--force moves the centres anyway)"
    )


def _machine_line(env: Environment) -> str:
    """What else decides whether a host's times compare: cores, caches, architecture, OS, Python."""
    parts = [
        f"{env.cpu_cores} logical cores" if env.cpu_cores else "",
        env.cpu_caches,
        env.platform,
        env.os_release,
        f"Python {env.python_version}" if env.python_version else "",
    ]
    return ", ".join(p for p in parts if p)


def _pct(value: float | None) -> str:
    return f"{value:.2f}%" if value is not None else "-"


def _detects(value: float | None) -> str:
    return f">= {value:.2f}%" if value is not None else "-"


def _speedup(case: BaselineCase) -> str:
    return f"{statistics.median(case.process_speedups):.2f}x" if case.process_speedups else "-"


def _diff_side(path: Path) -> Baseline | None:
    """A baseline file, or a pipe holding one: `perfgate baseline diff <(git show main:baselines/x.json) NEW`."""
    if not is_pipe(path):
        return load_baseline(path)
    data = read_pipe(path, BaselineError)
    if not data.strip():
        raise BaselineError(path, "the pipe sent nothing (does the file exist at that commit?)")
    return parse_baseline(path, parse_json(data, path, BaselineError))


def baseline_diff(args: argparse.Namespace) -> int:
    from perfgate.report.baseline_diff import render_baseline_diff

    old = _diff_side(args.old)
    new = _diff_side(args.new)
    if new is None:
        raise BaselineError(args.new, "no such file")
    print(render_baseline_diff(old, new, markdown=args.format == "md"), end="")
    return 0
