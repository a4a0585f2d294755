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
from typing import TYPE_CHECKING

from perfgate.atomic import LockTimeout, atomic_write_text, exclusive_lock, remove_stale_temporaries
from perfgate.baseline import (
    FORMAT,
    MAX_UPDATES_KEPT,
    MIN_CALIBRATION_PROCESSES,
    SAMPLE_SUMMARY_POINTS,
    VERSION,
    Baseline,
    BaselineCase,
    Update,
    expand_quantiles,
    load_baseline,
    summary_points,
)
from perfgate.compiled.records import CompiledCase
from perfgate.config.settings import Settings
from perfgate.errors import BaselineError
from perfgate.metrics import spec_for
from perfgate.model import CaseResult, Environment, GpuState, HostState, Run

if TYPE_CHECKING:
    from perfgate.gate.decision import Decision

LOCK_TIMEOUT_S = 600.0


def case_from_result(res: CaseResult, process_medians_ms: tuple[float, ...] = ()) -> BaselineCase:
    # only catalogue metrics: the gate compares those, and a full ncu set (thousands) would drown review
    kept = tuple(m for m in res.metrics if m.source != "timing" and spec_for(m.name) is not None)
    return BaselineCase(
        res.case_id,
        res.timing.timer,
        res.timing.median_ms,
        res.samples_ms,
        kept,
        process_medians_ms,
        autotune=res.autotune,
        gpu_state=res.gpu_state,
        host_state=res.host_state,
        compiled=res.compiled,
    )


def updated_baseline(old: Baseline | None, run: Run, path: Path, who: str, reason: str) -> Baseline:
    """Cases measured in this run replace theirs (uncalibrated: one process); the others are kept."""
    cases = dict(old.cases) if old else {}
    for res in run.results:
        cases[res.case_id] = case_from_result(res)
    update = Update(
        at=run.info.finished_at,
        by=who,
        commit=run.info.git_commit,
        reason=reason,
        cases=len(run.results),
        dirty=run.info.git_dirty,
    )
    return _with_update(old, path, run.environment, cases, update)


def calibrated_baseline(
    old: Baseline | None,
    runs: Sequence[Run],
    path: Path,
    who: str,
    reason: str,
    settings: Settings,
    autotuned_first: bool = False,
) -> Baseline:
    """One baseline from several fresh processes: per case the median of the process medians, the samples
    and metrics of the median process, the between-process noise and what the case detects."""
    by_case: dict[str, list[CaseResult]] = {}
    for run in runs:
        for res in run.results:
            by_case.setdefault(res.case_id, []).append(res)
    cases = dict(old.cases) if old else {}
    for case_id, results in sorted(by_case.items()):
        cases[case_id] = _calibrated_case(results, settings, len(by_case), autotuned_first)
    last = runs[-1]
    update = Update(
        at=last.info.finished_at,
        by=who,
        commit=last.info.git_commit,
        reason=reason,
        cases=len(by_case),
        calibrated_runs=len(runs),
        dirty=any(r.info.git_dirty for r in runs),
    )
    return _with_update(old, path, last.environment, cases, update)


def autotune_warmup(results: Sequence[CaseResult], autotuned_first: bool) -> bool:
    """Whether the first process ran the Triton autotuner for this case and pinned the others: such a
    process is a warm-up, not a draw of what a (pinned) gate process measures (on the H100 it was the
    calibration process most often far from the others)."""
    return autotuned_first and len(results) > MIN_CALIBRATION_PROCESSES and bool(results[0].autotune)


def _calibrated_case(results: list[CaseResult], settings: Settings, cases: int, autotuned_first: bool) -> BaselineCase:
    warmup = results[0] if autotune_warmup(results, autotuned_first) else None
    kept = results[1:] if warmup is not None else results
    case = _calibrated_time(kept, settings, cases)
    if warmup is not None:
        case = replace(
            case,
            autotune_process_median_ms=warmup.timing.median_ms,
            autotune_process_speedup=warmup.speedup.median if warmup.speedup else None,
        )
    case = _calibrated_cycles(case, kept, settings, cases)
    speedups = tuple(r.speedup.median for r in kept if r.speedup is not None)
    if len(speedups) < MIN_CALIBRATION_PROCESSES or len(speedups) != len(kept):
        return case
    values = tuple(1.0 / s for s in speedups)
    d = _review_decision(values, kept[0], settings, cases)
    return replace(
        case,
        process_speedups=speedups,
        speedup_noise_pct=_round(d.noise.noise_pct if d.noise else None),
        speedup_threshold_pct=_round(d.detects_pct),
    )


def _calibrated_cycles(case: BaselineCase, kept: Sequence[CaseResult], settings: Settings, cases: int) -> BaselineCase:
    """Every process's median in SM cycles, when every process read the clock (a compute-bound case is gated
    on them: gate/bottleneck.py), with the noise and what they detect, for review."""
    mcycles = tuple(r.cycles.median_mcycles for r in kept if r.cycles is not None)
    if len(mcycles) < MIN_CALIBRATION_PROCESSES or len(mcycles) != len(kept):
        return case
    d = _review_decision(mcycles, kept[0], settings, cases)
    return replace(
        case,
        process_mcycles=mcycles,
        mcycles_noise_pct=_round(d.noise.noise_pct if d.noise else None),
        mcycles_threshold_pct=_round(d.detects_pct),
    )


def _review_decision(
    values: Sequence[float], res: CaseResult, settings: Settings, cases: int, noise_scale: float = 1.0
) -> Decision:
    """The rule applied to a process at the calibration's centre: what the case detects (80% power) in a
    gate of this many cases, before any history joins its noise (`noise_scale`: with the noise estimate
    scaled, for the range of what it detects)."""
    from perfgate.gate.decision import MAX_STAGES, Rule, decide, per_test_alpha
    from perfgate.gate.noise import estimate_noise, noise_floor

    noise = estimate_noise(values, (), noise_floor(res.timing.timer, settings.noise_floor_pct))
    if noise is not None and noise_scale != 1.0:
        noise = replace(noise, noise_pct=noise.noise_pct * noise_scale)
    t = res.thresholds
    rule = Rule(
        alpha=per_test_alpha(settings.false_alarm_pct, cases),
        stages=1 + settings.confirm_runs,
        floor_pct=t.time_pct if t.time_pct_explicit else t.min_effect_pct,
        max_stages=MAX_STAGES if settings.confirm_runs else 1,
    )
    return decide(values, [sum(values) / len(values)], noise, rule)


def detects_range(
    values: Sequence[float], res: CaseResult, settings: Settings, cases: int, confidence: float = 0.9
) -> tuple[float, float] | None:
    """What the case detects if its true noise were at either end of the noise estimate's `confidence`
    interval (chi-square on its degrees of freedom): six processes know their spread to within about -35%
    / +110% at 90%, and "detects >= 1.3%" is that uncertain."""
    from perfgate.stats import chi2_quantile

    df = len(values) - 1
    if df < 1:
        return None
    tail = (1.0 - confidence) / 2.0
    ends = []
    for q in (1.0 - tail, tail):  # a large chi-square: the noise was overestimated, the true one is lower
        d = _review_decision(values, res, settings, cases, noise_scale=(df / chi2_quantile(q, df)) ** 0.5)
        if d.detects_pct is None:
            return None
        ends.append(d.detects_pct)
    return ends[0], ends[1]


def _round(x: float | None) -> float | None:
    return round(x, 4) if x is not None else None


def _calibrated_time(results: Sequence[CaseResult], settings: Settings, cases: int) -> BaselineCase:
    medians = tuple(r.timing.median_ms for r in results)
    centre = statistics.median(medians)
    representative = min(results, key=lambda r: abs(r.timing.median_ms - centre))
    case = case_from_result(representative, medians if len(medians) >= MIN_CALIBRATION_PROCESSES else ())
    case = replace(case, median_ms=centre)
    if not case.calibrated:
        return case
    d = _review_decision(medians, representative, settings, cases)
    return replace(case, noise_pct=_round(d.noise.noise_pct if d.noise else None), threshold_pct=_round(d.detects_pct))


def _with_update(
    old: Baseline | None, path: Path, env: Environment, cases: dict[str, BaselineCase], update: Update
) -> Baseline:
    updates = kept_updates((old.updates if old else ()) + (update,))
    return Baseline(path=path, environment=env, cases=cases, updates=updates)


def kept_updates(updates: tuple[Update, ...]) -> tuple[Update, ...]:
    """The last MAX_UPDATES_KEPT updates; when those hold no calibration with a commit, the latest older one
    takes the first place: it is what an anchor run measures against (ab/anchor.py)."""
    kept = updates[-MAX_UPDATES_KEPT:]
    if len(updates) <= MAX_UPDATES_KEPT or any(u.calibrated_runs and u.commit for u in kept):
        return kept
    older = [u for u in updates[:-MAX_UPDATES_KEPT] if u.calibrated_runs and u.commit]
    return (older[-1], *updates[-(MAX_UPDATES_KEPT - 1) :]) if older else kept


def _update_fields(u: Update) -> dict[str, object]:
    """An update as written: `dirty` only where true (the files perfgate wrote before it read the same)."""
    return {k: v for k, v in asdict(u).items() if k != "dirty" or v}


def render_baseline(b: Baseline) -> str:
    """Stable text: sorted keys, samples and metric rows on one line each, so diffs show what moved."""
    env = {k: v for k, v in sorted(asdict(b.environment).items()) if k not in ("hostname",)}
    lines = [
        "{",
        f'  "format": "{FORMAT}",',
        f'  "version": {VERSION},',
        f'  "environment": {json.dumps(env, sort_keys=True)},',
        '  "updates": [',
    ]
    lines += [
        f"    {json.dumps(_update_fields(u), sort_keys=True)}{',' if i < len(b.updates) - 1 else ''}"
        for i, u in enumerate(b.updates)
    ]
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
    if c.process_mcycles:
        fields.append(f'"process_mcycles": [{", ".join(_short(v) for v in c.process_mcycles)}]')
    for key, value in (
        ("mcycles_noise_pct", c.mcycles_noise_pct),
        ("mcycles_threshold_pct", c.mcycles_threshold_pct),
        ("speedup_noise_pct", c.speedup_noise_pct),
        ("speedup_threshold_pct", c.speedup_threshold_pct),
        ("autotune_process_median_ms", c.autotune_process_median_ms),
        ("autotune_process_speedup", c.autotune_process_speedup),
    ):
        if value is not None:
            fields.append(f'"{key}": {_short(value)}')
    points = _written_samples(c)
    if len(points) < len(c.samples_ms):
        fields.append(f'"sample_count": {len(c.samples_ms)}')
    fields.append(f'"samples_ms": [{", ".join(_short(v) for v in points)}]')
    if c.autotune:
        fields.append(f'"autotune": {json.dumps(dict(c.autotune), sort_keys=True)}')
    if c.gpu_state is not None:
        fields.append(f'"gpu_state": {json.dumps(_gpu_dict(c.gpu_state), sort_keys=True)}')
    if c.host_state is not None:
        fields.append(f'"host_state": {json.dumps(_gpu_dict(c.host_state), sort_keys=True)}')
    if c.compiled is not None:
        fields.append(_render_compiled(c.compiled))
    fields += [f'"imported_from": {json.dumps(c.imported_from)}'] * bool(c.imported_from)  # baseline/imported.py
    metric_rows = [
        json.dumps(
            {"source": m.source, "kernel": m.kernel, "name": m.name, "value": m.value, "unit": m.unit}, sort_keys=True
        )
        for m in sorted(c.metrics, key=lambda m: (m.source, m.kernel, m.name))
    ]
    out = [f"    {json.dumps(c.case_id)}: {{"] + [f"      {f}," for f in fields] + ['      "metrics": [']
    out += [f"        {row}{',' if j < len(metric_rows) - 1 else ''}" for j, row in enumerate(metric_rows)]
    out += ["      ]", f"    }}{'' if last else ','}"]
    return out


def _render_compiled(c: CompiledCase) -> str:
    """One line per kernel, so a review sees which kernel's facts moved."""
    from perfgate.compiled.codec import to_dict

    data = to_dict(c)
    kernels = data.pop("kernels")
    head = json.dumps(data, sort_keys=True)[:-1]
    if not kernels:
        return f'"compiled": {head}, "kernels": []}}'
    rows = [f"        {json.dumps(k, sort_keys=True)}" for k in kernels]
    return f'"compiled": {head}, "kernels": [\n' + ",\n".join(rows) + "\n      ]}"


def _written_samples(c: BaselineCase) -> tuple[float, ...]:
    """A calibrated case's quantile summary (the points it was read with, so rewriting a file changes no
    line of a case nobody measured); every sample otherwise (an uncalibrated case's rank test needs them)."""
    if c.sample_points_ms and expand_quantiles(c.sample_points_ms, len(c.samples_ms)) == c.samples_ms:
        return c.sample_points_ms
    if c.calibrated and len(c.samples_ms) > SAMPLE_SUMMARY_POINTS:
        return summary_points(c.samples_ms)
    return c.samples_ms


def _gpu_dict(state: GpuState | HostState) -> dict[str, object]:
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


def update_baseline_file(
    path: Path, change: Callable[[Baseline | None], Baseline | None], timeout_s: float = LOCK_TIMEOUT_S
) -> Baseline | None:
    """Re-read the file under an exclusive lock, apply `change`, write the result (None: leave it).

    Concurrent updates serialize here; one that cannot get the lock fails loudly rather than
    overwrite another's cases. Holding the lock, it removes the temporaries a killed writer left."""
    try:
        with exclusive_lock(path, timeout_s):
            remove_stale_temporaries(path)
            new = change(load_baseline(path))
            if new is not None:
                write_baseline(new)
            return new
    except LockTimeout as err:
        raise BaselineError(path, f"not updated: {err}") from err
