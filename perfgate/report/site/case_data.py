"""One case's page data (per device model: points, baseline band, change points, counters) and its overview
rows. Numbers are rounded to 6 significant digits: the page needs what a chart shows, not float noise."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from perfgate.baseline import BaselineCase
from perfgate.metrics import PEAK_ALLOCATED, SPEEDUP_METRIC, TIME_METRIC, default_threshold_pct, label
from perfgate.model import Comparison, Verdict
from perfgate.report.site.history_data import CasePoint, CaseSeries, RunMeta
from perfgate.report.site.links import case_page, run_page
from perfgate.report.site.verdicts import case_verdict
from perfgate.trends.changepoints import ChangePointSettings
from perfgate.trends.history import CaseChanges, RunPoint, changes_in

BaselineLookup = Callable[[str, str], BaselineCase | None]  # (device model, case id) -> its baseline case
MAX_COUNTER_KERNELS = 8


@dataclass(frozen=True)
class CaseDigest:
    row: dict[str, Any]  # the overview's row for one (case, device model), JSON-ready
    change_points: int
    regressions: tuple[dict[str, Any], ...] = ()  # the regressions page's entries (regressions.py)


def num(value: float | None) -> float | None:
    return None if value is None else float(f"{value:.6g}")


def case_payload(
    case_id: str,
    series: Sequence[CaseSeries],
    runs: Mapping[int, RunMeta],
    latest_rows: Mapping[tuple[str, str], list[Comparison]],
    latest: Mapping[tuple[str, str], int],
    baseline_case: BaselineLookup,
    cp_settings: ChangePointSettings,
    spark_points: int,
    kernels: Mapping[str, dict[str, Any]] | None = None,
) -> tuple[dict[str, Any], list[CaseDigest]]:
    """`kernels`: per device model, the case's compiled kernels (kernels_data.case_kernels)."""
    from perfgate.report.site.regressions import regressions_of

    devices, digests = [], []
    for s in series:
        run_id = latest.get((case_id, s.device_name), s.points[-1].run_id)
        rows = latest_rows.get((case_id, s.device_name), [])
        changes = changes_in(
            tuple(_run_point(p, runs[p.run_id]) for p in s.points), case_id, s.device_name, cp_settings
        )
        base = baseline_case(s.device_name, case_id)
        device = _device_payload(s, runs, rows, changes, base)
        device["kernels"] = (kernels or {}).get(s.device_name)
        devices.append(device)
        row = _overview_row(case_id, s, runs[run_id], rows, changes, spark_points)
        digests.append(CaseDigest(row, len(changes.changes), regressions_of(row, s, runs, changes)))
    return {"case": case_id, "devices": devices}, digests


def _run_point(p: CasePoint, meta: RunMeta) -> RunPoint:
    return RunPoint(p.run_id, meta.git_commit, meta.git_branch, meta.started_at, p.median_ms)


def _device_payload(
    s: CaseSeries, runs: Mapping[int, RunMeta], rows: list[Comparison], changes: CaseChanges, base: BaselineCase | None
) -> dict[str, Any]:
    pts = s.points
    index = {p.run_id: i for i, p in enumerate(pts)}
    by_metric = {c.metric: c for c in rows}
    return {
        "device": s.device_name,
        "reference": s.reference,
        "runs": {
            "id": [p.run_id for p in pts],
            "commit": [runs[p.run_id].git_commit[:12] for p in pts],
            "date": [runs[p.run_id].started_at[:16].replace("T", " ") for p in pts],
            "branch": [runs[p.run_id].git_branch for p in pts],
            "calibration": [runs[p.run_id].calibration for p in pts],
        },
        "time": {
            "median": [num(p.median_ms) for p in pts],
            "confirmations": [[num(v) for v in p.confirmation_ms] for p in pts],
        },
        "speedup": (
            {
                "value": [num(p.speedup) for p in pts],
                "confirmations": [[num(v) for v in p.confirmation_speedups] for p in pts],
            }
            if any(p.speedup is not None for p in pts)
            else None
        ),
        "memory": [num(p.peak_bytes) for p in pts] if any(p.peak_bytes is not None for p in pts) else None,
        "gpu": {
            "throttled": [num(p.throttled_fraction) for p in pts],
            "clock": [num(p.sm_clock_mhz) for p in pts],
            "power": [num(p.power_w) for p in pts],
            "temperature": [num(p.temperature_c) for p in pts],
        },
        "autotune": _interned([p.autotune for p in pts]),
        "baseline": _bands(base, by_metric),
        "counters": _counters(s, index),
        "changes": [
            {
                "index": index[c.first_after.run_id],
                "pct": round(c.change_pct, 2),
                "before": {"run": c.last_before.run_id, "commit": c.last_before.git_commit[:12]},
                "after": {"run": c.first_after.run_id, "commit": c.first_after.git_commit[:12]},
            }
            for c in changes.changes
        ],
        "latest": [
            {
                "metric": label(c.metric) + (f" [{c.kernel}]" if c.kernel else ""),
                "verdict": c.verdict.value,
                "change": num(c.change_pct),
                "detects": num(c.threshold_pct),
            }
            for c in rows
        ],
    }


def _interned(texts: list[str]) -> dict[str, list[Any]]:
    """Distinct strings once, and per point an index into them (-1: none): autotune configs repeat."""
    values: dict[str, int] = {}
    index = [values.setdefault(t, len(values)) if t else -1 for t in texts]
    return {"values": list(values), "index": index}


def _bands(base: BaselineCase | None, by_metric: Mapping[str, Comparison]) -> dict[str, Any]:
    """Baseline centre and threshold (percent) per charted metric; the threshold the gate applied when it
    has a row, else the one written in the baseline."""
    if base is None:
        return {}
    out: dict[str, Any] = {}
    time_row = by_metric.get(TIME_METRIC)
    out["time"] = {
        "centre": num(base.median_ms),
        "threshold": num(
            time_row.threshold_pct if time_row and time_row.threshold_pct is not None else base.threshold_pct
        ),
    }
    if base.process_speedups:
        row = by_metric.get(SPEEDUP_METRIC)
        out["speedup"] = {
            "centre": num(statistics.median(base.process_speedups)),
            "threshold": num(
                row.threshold_pct if row and row.threshold_pct is not None else base.speedup_threshold_pct
            ),
        }
    peak = next((m.value for m in base.metrics if m.name == PEAK_ALLOCATED and not m.kernel), None)
    if peak is not None:
        out["memory"] = {"centre": num(peak), "threshold": default_threshold_pct(PEAK_ALLOCATED)}
    return out


def _counters(s: CaseSeries, index: Mapping[int, int]) -> list[dict[str, Any]]:
    """One chart per gated profiler metric, one line per kernel (the first few), aligned to the points."""
    grouped: dict[str, dict[str, list[float | None]]] = {}
    units: dict[str, str] = {}
    for c in s.counters:
        if c.run_id not in index:
            continue
        kernels = grouped.setdefault(c.metric, {})
        if c.kernel not in kernels and len(kernels) >= MAX_COUNTER_KERNELS:
            continue
        values = kernels.setdefault(c.kernel, [None] * len(s.points))
        values[index[c.run_id]] = num(c.value)
        units[c.metric] = c.unit
    return [
        {
            "metric": name,
            "label": label(name),
            "unit": units[name],
            "kernels": [{"kernel": k, "values": v} for k, v in sorted(kernels.items())],
        }
        for name, kernels in sorted(grouped.items())
    ]


def rank(verdict: Verdict | None, change_points: int) -> int:
    """Overview order: regressions, then change points, then what needs a look, then the rest."""
    if verdict in (Verdict.REGRESSED, Verdict.BELOW_TARGET):
        return 0
    if change_points:
        return 1
    if verdict in (Verdict.INCONCLUSIVE, Verdict.PROFILE_FAILED, Verdict.NOT_COMPARABLE):
        return 2
    return {Verdict.IMPROVED: 3, Verdict.UNCHANGED: 4}.get(verdict, 5) if verdict is not None else 5


def _overview_row(
    case_id: str, s: CaseSeries, meta: RunMeta, rows: list[Comparison], changes: CaseChanges, spark_points: int
) -> dict[str, Any]:
    verdict = case_verdict(rows)
    time_row = next((c for c in rows if c.metric == TIME_METRIC), None)
    last = s.points[-1]
    speedup = next((p.speedup for p in reversed(s.points) if p.speedup is not None), None)
    peak = next((p.peak_bytes for p in reversed(s.points) if p.peak_bytes is not None), None)
    latest_change = changes.changes[-1] if changes.changes else None
    return {
        "case": case_id,
        "device": s.device_name,
        "href": case_page(case_id),
        "verdict": verdict.value if verdict else "not gated",
        "rank": rank(verdict, len(changes.changes)),
        "change": num(time_row.change_pct) if time_row else None,
        "detects": num(time_row.threshold_pct) if time_row else None,
        "speedup": num(speedup),
        "reference": s.reference,
        "peak": num(peak),
        "spark": [num(p.median_ms) for p in s.points[-spark_points:]],
        "changes": len(changes.changes),
        "lastChange": (
            f"{latest_change.change_pct:+.1f}% at {latest_change.last_before.git_commit[:8] or '-'}.."
            f"{latest_change.first_after.git_commit[:8] or '-'}"
            if latest_change
            else ""
        ),
        "run": meta.run_id,
        "runHref": run_page(meta.run_id),
        "date": meta.started_at[:10],
        "commit": meta.git_commit[:12],
        "median": num(last.median_ms),
    }
