"""Writing baselines: from one run (`--perfgate-update-baseline`), from several processes (`perfgate
calibrate`), rendered for review, replaced atomically under a lock.

Layout is chosen for review: keys sorted, one case per block, samples on one line, and an `updates` log
saying who changed it, when, at which commit and why. Concurrent updates serialize on a lock and each
re-reads the file inside it, so two jobs updating different cases both land.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path

from perfgate.atomic import LockTimeout, atomic_write_text, exclusive_lock
from perfgate.baseline import FORMAT, MAX_UPDATES_KEPT, VERSION, Baseline, BaselineCase, Update, load_baseline
from perfgate.errors import BaselineError
from perfgate.gate.decision import DecisionSettings, decide_time, noise_pct
from perfgate.metrics import spec_for
from perfgate.model import CaseResult, Environment, GpuState, Run

LOCK_TIMEOUT_S = 600.0


def case_from_result(res: CaseResult, process_medians_ms: tuple[float, ...] = ()) -> BaselineCase:
    # only catalogue metrics: the gate compares those, and a full ncu set (thousands) would drown review
    kept = tuple(m for m in res.metrics if m.source != "timing" and spec_for(m.name) is not None)
    return BaselineCase(res.case_id, res.timing.timer, res.timing.median_ms, res.samples_ms, kept,
                        process_medians_ms, autotune=res.autotune, gpu_state=res.gpu_state)


def updated_baseline(old: Baseline | None, run: Run, path: Path, who: str, reason: str) -> Baseline:
    """Cases measured in this run replace theirs (uncalibrated: one process); the others are kept."""
    cases = dict(old.cases) if old else {}
    for res in run.results:
        cases[res.case_id] = case_from_result(res)
    update = Update(at=run.info.finished_at, by=who, commit=run.info.git_commit, reason=reason,
                    cases=len(run.results))
    return _with_update(old, path, run.environment, cases, update)


def calibrated_baseline(old: Baseline | None, runs: Sequence[Run], path: Path, who: str, reason: str,
                        decision: DecisionSettings) -> Baseline:
    """One baseline from several fresh processes: per case the median of the process medians, the samples
    and metrics of the median process, the between-process noise and what the case can detect."""
    by_case: dict[str, list[CaseResult]] = {}
    for run in runs:
        for res in run.results:
            by_case.setdefault(res.case_id, []).append(res)
    cases = dict(old.cases) if old else {}
    for case_id, results in sorted(by_case.items()):
        cases[case_id] = _calibrated_case(results, decision)
    last = runs[-1]
    update = Update(at=last.info.finished_at, by=who, commit=last.info.git_commit, reason=reason,
                    cases=len(by_case), calibrated_runs=len(runs))
    return _with_update(old, path, last.environment, cases, update)


def _calibrated_case(results: list[CaseResult], decision: DecisionSettings) -> BaselineCase:
    case = _calibrated_time(results, decision)
    speedups = tuple(r.speedup.median for r in results if r.speedup is not None)
    if len(speedups) < 3 or len(speedups) != len(results):
        return case
    from perfgate.gate.compare import speedup_decision

    first = results[0]
    assert first.speedup is not None
    # what one fresh process could detect: a run at the calibration's centre, before confirmation
    probe = replace(first, speedup=replace(first.speedup, median=statistics.median(speedups)), confirmation_speedups=())
    d = speedup_decision(probe, speedups, decision)
    return replace(case, process_speedups=speedups, speedup_noise_pct=_round(d.noise_pct),
                   speedup_threshold_pct=_round(d.threshold_pct))


def _round(x: float | None) -> float | None:
    return round(x, 4) if x is not None else None


def _calibrated_time(results: list[CaseResult], decision: DecisionSettings) -> BaselineCase:
    medians = tuple(r.timing.median_ms for r in results)
    centre = statistics.median(medians)
    representative = min(results, key=lambda r: abs(r.timing.median_ms - centre))
    case = case_from_result(representative, medians if len(medians) >= 3 else ())
    case = replace(case, median_ms=centre)
    if not case.calibrated:
        return case
    timer = representative.timing.timer
    noise = noise_pct(medians, timer, decision.noise_floor_pct)
    detect = decide_time(case.timing(), (centre,), representative.samples_ms,
                         representative.thresholds, decision).threshold_pct
    return replace(case, noise_pct=round(noise, 4) if noise is not None else None, threshold_pct=round(detect, 4))


def _with_update(old: Baseline | None, path: Path, env: Environment, cases: dict[str, BaselineCase],
                 update: Update) -> Baseline:
    updates = ((old.updates if old else ()) + (update,))[-MAX_UPDATES_KEPT:]
    return Baseline(path=path, environment=env, cases=cases, updates=updates)


def render_baseline(b: Baseline) -> str:
    """Stable text: sorted keys, samples and metric rows on one line each, so diffs show what moved."""
    env = {k: v for k, v in sorted(asdict(b.environment).items()) if k not in ("hostname",)}
    lines = ["{", f'  "format": "{FORMAT}",', f'  "version": {VERSION},',
             f'  "environment": {json.dumps(env, sort_keys=True)},', '  "updates": [']
    lines += [f"    {json.dumps(asdict(u), sort_keys=True)}{',' if i < len(b.updates) - 1 else ''}"
              for i, u in enumerate(b.updates)]
    lines += ["  ],", '  "cases": {']
    ids = sorted(b.cases)
    for i, cid in enumerate(ids):
        lines += _render_case(b.cases[cid], last=i == len(ids) - 1)
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"


def _render_case(c: BaselineCase, last: bool) -> list[str]:
    fields = [f'"timer": "{c.timer.value}"', f'"median_ms": {_short(c.median_ms)}']
    if c.process_medians_ms:
        fields.append(f'"process_medians_ms": [{", ".join(_short(v) for v in c.process_medians_ms)}]')
    if c.noise_pct is not None:
        fields.append(f'"noise_pct": {_short(c.noise_pct)}')
    if c.threshold_pct is not None:
        fields.append(f'"threshold_pct": {_short(c.threshold_pct)}')
    if c.process_speedups:
        fields.append(f'"process_speedups": [{", ".join(_short(v) for v in c.process_speedups)}]')
    for key, value in (("speedup_noise_pct", c.speedup_noise_pct), ("speedup_threshold_pct", c.speedup_threshold_pct)):
        if value is not None:
            fields.append(f'"{key}": {_short(value)}')
    fields.append(f'"samples_ms": [{", ".join(_short(v) for v in c.samples_ms)}]')
    if c.autotune:
        fields.append(f'"autotune": {json.dumps(dict(c.autotune), sort_keys=True)}')
    if c.gpu_state is not None:
        fields.append(f'"gpu_state": {json.dumps(_gpu_dict(c.gpu_state), sort_keys=True)}')
    metric_rows = [json.dumps({"source": m.source, "kernel": m.kernel, "name": m.name, "value": m.value,
                               "unit": m.unit}, sort_keys=True)
                   for m in sorted(c.metrics, key=lambda m: (m.source, m.kernel, m.name))]
    out = [f"    {json.dumps(c.case_id)}: {{"] + [f"      {f}," for f in fields] + ['      "metrics": [']
    out += [f"        {row}{',' if j < len(metric_rows) - 1 else ''}" for j, row in enumerate(metric_rows)]
    out += ["      ]", f"    }}{'' if last else ','}"]
    return out


def _gpu_dict(state: GpuState) -> dict[str, object]:
    return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in asdict(state).items() if v is not None}


def _short(v: float) -> str:
    """Six significant digits: far below timing noise, and short lines in review."""
    return repr(float(f"{v:.6g}"))


def write_baseline(b: Baseline) -> None:
    """Write atomically (unique temp file, fsync, rename): no reader ever sees half a file."""
    try:
        atomic_write_text(b.path, render_baseline(b))
    except OSError as err:
        raise BaselineError(b.path, f"cannot be written ({err.strerror or err})") from err


def update_baseline_file(path: Path, change: Callable[[Baseline | None], Baseline | None],
                         timeout_s: float = LOCK_TIMEOUT_S) -> Baseline | None:
    """Re-read the file under an exclusive lock, apply `change`, write the result (None: leave it).

    Concurrent updates serialize here; one that cannot get the lock fails loudly rather than
    overwrite another's cases."""
    try:
        with exclusive_lock(path, timeout_s):
            new = change(load_baseline(path))
            if new is not None:
                write_baseline(new)
            return new
    except LockTimeout as err:
        raise BaselineError(path, f"not updated: {err}") from err
