"""The history as the dashboard needs it: runs, and per case and device model the points over time.

Read with a few SQL queries per case (indexed by case id), never one Run object per stored run, so a
1,000-case x 1,000-run history is read case by case in bounded memory.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from perfgate.metrics import CATALOGUE, PEAK_ALLOCATED
from perfgate.model import MetricKind
from perfgate.store import Store, checks
from perfgate.store.kinds import OUTSIDE_AB

# Profiler metrics gated by default (counters and measured ratios), charted per kernel on the case page.
GATED_COUNTERS = tuple(
    sorted(
        name
        for name, spec in CATALOGUE.items()
        if spec.kind in (MetricKind.COUNTER, MetricKind.MEASURED) and (name.startswith("nsys.") or "__" in name)
    )
)
ENV_FIELDS = ("driver_version", "cuda_version", "torch_version", "triton_version", "python_version", "perfgate_version")


@dataclass(frozen=True)
class RunMeta:
    run_id: int
    started_at: str
    git_commit: str
    git_branch: str
    git_dirty: bool
    device_name: str
    device_kind: str
    calibration: bool  # one of `perfgate calibrate`'s processes
    cases: int
    kind: str  # the stored run kind (gate, calibration, ab-base, ab-head; "" from old histories)
    versions: tuple[tuple[str, str], ...]  # (field, value) of ENV_FIELDS that are set


@dataclass(frozen=True)
class CasePoint:
    """One case in one run."""

    run_id: int
    median_ms: float
    q1_ms: float | None
    q3_ms: float | None
    confirmation_ms: tuple[float, ...]  # medians of the fresh processes that re-measured it
    speedup: float | None
    confirmation_speedups: tuple[float, ...]
    peak_bytes: float | None  # memory.peak_allocated_bytes
    throttled_fraction: float | None
    sm_clock_mhz: float | None
    power_w: float | None
    temperature_c: float | None
    autotune: str  # "kernel: config; ..." as the autotuner chose


@dataclass(frozen=True)
class CounterPoint:
    run_id: int
    metric: str
    kernel: str
    unit: str
    value: float


@dataclass(frozen=True)
class CaseSeries:
    case_id: str
    device_name: str
    reference: str  # the speedup's reference op ("" when the case has none)
    points: tuple[CasePoint, ...]  # oldest first
    counters: tuple[CounterPoint, ...]


def is_calibration(argv: str) -> bool:
    """A run stored by `perfgate calibrate` (its argv names the command). When the history stores a run
    kind, read it here instead."""
    words = argv.split()
    return any(
        w == "calibrate" and i > 0 and ("perfgate" in words[i - 1] or words[i - 1].endswith("cli.py"))
        for i, w in enumerate(words)
    )


def load_runs(store: Store) -> dict[int, RunMeta]:
    rows = store.query(
        "SELECT r.*, (SELECT count(*) FROM cases c WHERE c.run_id = r.id) AS n_cases FROM runs r ORDER BY r.id"
    )
    with store.errors("read its runs"):
        return {int(r["id"]): _run_meta(r) for r in rows}


def _run_meta(r: dict[str, Any]) -> RunMeta:
    """A run's facts for its page: texts verified and printable (store/checks.py: a history from elsewhere)."""
    where = f"run {r['id']}"

    def text(column: str) -> str:
        return checks.run_text(r[column], f"{where} {column}")

    return RunMeta(
        run_id=int(r["id"]),
        started_at=checks.run_time(r["started_at"], f"{where} started_at"),
        git_commit=text("git_commit"),
        git_branch=text("git_branch"),
        git_dirty=bool(r["git_dirty"]),
        device_name=text("device_name"),
        device_kind=text("device_kind"),
        calibration=is_calibration(text("argv")),
        cases=int(r["n_cases"]),
        kind=text("kind") if r.get("kind") else "",
        versions=tuple((f, checks.run_text(str(r[f]), f"{where} {f}")) for f in ENV_FIELDS if r.get(f)),
    )


def case_ids(store: Store) -> list[str]:
    return [r["case_id"] for r in store.query("SELECT DISTINCT case_id FROM cases ORDER BY case_id")]


_POINTS_SQL = (
    "SELECT c.run_id, coalesce(r.device_name, '') AS device_name, c.median_ms, c.q1_ms, c.q3_ms, "
    "c.confirmation_medians, c.confirmation_speedups, s.median AS speedup, s.reference, g.throttled_fraction, "
    "g.sm_clock_mhz, g.power_median_w, g.temperature_max_c, "
    "(SELECT {autotune} FROM autotune a WHERE a.run_id = c.run_id AND a.case_id = c.case_id) AS autotune "
    "FROM cases c JOIN runs r ON r.id = c.run_id "
    "LEFT JOIN speedups s ON s.run_id = c.run_id AND s.case_id = c.case_id "
    "LEFT JOIN gpu_state g ON g.run_id = c.run_id AND g.case_id = c.case_id "
    f"WHERE c.case_id = :case_id AND {OUTSIDE_AB} ORDER BY 2, c.run_id"  # A/B runs are not the case's series
)
# on its own: as a subquery above, SQLite picks the (case_id, name) index and reads every run's row per run
_PEAK_SQL = "SELECT run_id, value FROM metrics WHERE case_id = :case_id AND name = :name AND kernel = ''"


def case_series(store: Store, case_id: str, runs: dict[int, RunMeta]) -> list[CaseSeries]:
    """The case's points and gated counters, one series per device model; unusable medians are skipped."""
    by_device: dict[str, list[CasePoint]] = {}
    references: dict[str, str] = {}
    peaks = {int(r["run_id"]): r["value"] for r in store.query(_PEAK_SQL, {"case_id": case_id, "name": PEAK_ALLOCATED})}
    points_sql = _POINTS_SQL.format(autotune=store.dialect.string_agg("a.kernel || ': ' || a.config", "'; '"))
    for r in store.query(points_sql, {"case_id": case_id}):
        if not _positive(r["median_ms"]):
            continue
        by_device.setdefault(r["device_name"], []).append(_point(r, peaks.get(int(r["run_id"]))))
        if r["reference"]:
            references[r["device_name"]] = r["reference"]
    counters = _counters(store, case_id, runs)
    return [
        CaseSeries(
            case_id,
            device,
            references.get(device, ""),
            tuple(points),
            tuple(c for c in counters if runs[c.run_id].device_name == device),
        )
        for device, points in by_device.items()
    ]


def _point(r: dict[str, Any], peak_bytes: Any) -> CasePoint:
    return CasePoint(
        run_id=int(r["run_id"]),
        median_ms=float(r["median_ms"]),
        q1_ms=_number(r["q1_ms"]),
        q3_ms=_number(r["q3_ms"]),
        confirmation_ms=_numbers(r["confirmation_medians"]),
        speedup=_number(r["speedup"]),
        confirmation_speedups=_numbers(r["confirmation_speedups"]),
        peak_bytes=_number(peak_bytes),
        throttled_fraction=_number(r["throttled_fraction"]),
        sm_clock_mhz=_number(r["sm_clock_mhz"]),
        power_w=_number(r["power_median_w"]),
        temperature_c=_number(r["temperature_max_c"]),
        autotune=str(r["autotune"] or ""),
    )


def _counters(store: Store, case_id: str, runs: dict[int, RunMeta]) -> list[CounterPoint]:
    rows = store.query(
        f"SELECT run_id, name, kernel, unit, value FROM metrics WHERE case_id = :case_id "
        f"AND name IN ({store.dialect.json_values('names')}) ORDER BY name, kernel, run_id",
        {"case_id": case_id, "names": json.dumps(GATED_COUNTERS)},
    )
    return [
        CounterPoint(int(r["run_id"]), r["name"], r["kernel"] or "", r["unit"] or "", float(r["value"]))
        for r in rows
        if int(r["run_id"]) in runs and _finite(r["value"])
    ]


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _positive(value: Any) -> bool:
    return _finite(value) and float(value) > 0


def _number(value: Any) -> float | None:
    return float(value) if _finite(value) else None


def _numbers(text: object) -> tuple[float, ...]:
    """A JSON list of numbers from the history; anything else (a damaged cell) reads as none."""
    if not isinstance(text, str) or not text:
        return ()
    try:
        value = json.loads(text)
    except ValueError:
        return ()
    return tuple(float(v) for v in value if _positive(v)) if isinstance(value, list) else ()


def latest_runs_by_device(store: Store) -> Iterator[tuple[str, int]]:
    """(case id, the id of the latest run that measured it) per device model, for the overview's verdicts."""
    rows = store.query(
        "SELECT c.case_id, max(c.run_id) AS run_id FROM cases c JOIN runs r ON r.id = c.run_id "
        f"WHERE {OUTSIDE_AB} GROUP BY c.case_id, coalesce(r.device_name, '') ORDER BY 1"
    )
    for r in rows:
        yield r["case_id"], int(r["run_id"])
