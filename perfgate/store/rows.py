"""Records <-> rows. Columns are listed here explicitly (never derived from the dataclasses), so adding a
field to a record is a visible schema change with its own migration, not a silent break."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict, replace
from typing import Any

from perfgate.model import (
    CaseResult,
    CaseThresholds,
    Environment,
    GpuState,
    Metric,
    Run,
    RunInfo,
    Speedup,
    TestOutcome,
    Timer,
    TimingStats,
    UnmeasuredTest,
)

ENV_COLUMNS = ("device_kind", "device_name", "device_uuid", "compute_capability", "driver_version", "cuda_version",
               "torch_version", "triton_version", "python_version", "perfgate_version", "hostname", "platform")
RUN_COLUMNS = ("run_uid", "started_at", "finished_at", "git_commit", "git_branch", "git_dirty", "argv",
               "profile_settings", *ENV_COLUMNS)
STAT_COLUMNS = ("timer", "n_samples", "median_ms", "mean_ms", "stdev_ms", "min_ms", "max_ms", "q1_ms", "q3_ms",
                "gbps", "tflops")
CASE_COLUMNS = ("run_id", "case_id", *STAT_COLUMNS, "bytes_moved", "flops", "profile_errors", "nodeid",
                "location_file", "location_line", "device_uuid", "thresholds", "confirmation_medians",
                "confirmation_speedups", "profile_notes")
IMPORTED_UID_PREFIX = "pytest-benchmark-"  # parse/pytest_benchmark.py: runs imported from pytest-benchmark JSON
GPU_COLUMNS = ("polls", "sm_clock_mhz", "sm_clock_min_mhz", "mem_clock_mhz", "temperature_max_c", "power_median_w",
               "power_limit_w", "throttle_reasons", "throttled_fraction", "clocks_locked", "cooldown_ms",
               "excluded_samples")


def insert_sql(table: str, columns: Sequence[str]) -> str:
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


def run_row(run: Run) -> tuple[Any, ...]:
    i, e = run.info, run.environment
    values: dict[str, Any] = {"run_uid": i.run_uid, "started_at": i.started_at, "finished_at": i.finished_at,
                              "git_commit": i.git_commit, "git_branch": i.git_branch, "git_dirty": int(i.git_dirty),
                              "argv": i.argv, "profile_settings": i.profile_settings}
    values.update({c: getattr(e, c) for c in ENV_COLUMNS})
    return tuple(values[c] for c in RUN_COLUMNS)


def case_row(run_id: int, r: CaseResult) -> tuple[Any, ...]:
    t = r.timing
    return (run_id, r.case_id, t.timer.value, t.n_samples, t.median_ms, t.mean_ms, t.stdev_ms, t.min_ms, t.max_ms,
            t.q1_ms, t.q3_ms, t.gbps, t.tflops, r.bytes_moved, r.flops, json.dumps(list(r.profile_errors)),
            r.nodeid, r.location[0] if r.location else None, r.location[1] if r.location else None,
            r.device_uuid, json.dumps(asdict(r.thresholds)), json.dumps(list(r.confirmation_medians_ms)),
            json.dumps(list(r.confirmation_speedups)), json.dumps(list(r.profile_notes)))


def sample_rows(run_id: int, results: Sequence[CaseResult]) -> Iterator[tuple[Any, ...]]:
    for r in results:
        for i, v in enumerate(r.samples_ms):
            yield (run_id, r.case_id, i, v)


def reference_sample_rows(run_id: int, results: Sequence[CaseResult]) -> Iterator[tuple[Any, ...]]:
    for r in results:
        if r.speedup is not None:
            for i, v in enumerate(r.speedup.reference_samples_ms):
                yield (run_id, r.case_id, i, v)


def metric_rows(run_id: int, results: Sequence[CaseResult]) -> Iterator[tuple[Any, ...]]:
    for r in results:
        for m in r.metrics:
            yield (run_id, r.case_id, m.source, m.kernel, m.name, m.value, m.unit)


def gpu_rows(run_id: int, results: Sequence[CaseResult]) -> Iterator[tuple[Any, ...]]:
    for r in results:
        if r.gpu_state is not None:
            g = asdict(r.gpu_state)
            g["clocks_locked"] = int(g["clocks_locked"])
            yield (run_id, r.case_id, *(g[c] for c in GPU_COLUMNS))


def autotune_rows(run_id: int, results: Sequence[CaseResult]) -> Iterator[tuple[Any, ...]]:
    for r in results:
        for kernel, config in r.autotune:
            yield (run_id, r.case_id, kernel, config)


def speedup_rows(run_id: int, results: Sequence[CaseResult]) -> Iterator[tuple[Any, ...]]:
    for r in results:
        if r.speedup is not None:
            s = r.speedup
            yield (run_id, r.case_id, s.reference, s.median, s.ci_low, s.ci_high)


def unmeasured_rows(run_id: int, info: RunInfo) -> Iterator[tuple[Any, ...]]:
    for u in info.unmeasured:
        yield (run_id, u.nodeid, u.outcome.value, u.reason)


# --- reading back ---------------------------------------------------------------------------------

def run_from_row(row: dict[str, Any], results: tuple[CaseResult, ...],
                 unmeasured: tuple[UnmeasuredTest, ...]) -> Run:
    if (row["run_uid"] or "").startswith(IMPORTED_UID_PREFIX):
        # imported before the pytest_benchmark timer existed, they were stored as "host": never comparable
        # with perfgate's own host clock (a different calibration), whatever the row says
        results = tuple(replace(r, timing=replace(r.timing, timer=Timer.PYTEST_BENCHMARK))
                        if r.timing.timer is Timer.HOST else r for r in results)
    env = Environment(**{c: row[c] or "" for c in ENV_COLUMNS})
    info = RunInfo(started_at=row["started_at"] or "", finished_at=row["finished_at"] or "",
                   git_commit=row["git_commit"] or "", git_branch=row["git_branch"] or "",
                   git_dirty=bool(row["git_dirty"]), hostname=row["hostname"] or "", argv=row["argv"] or "",
                   profile_settings=row["profile_settings"] or "", run_uid=row["run_uid"] or "",
                   unmeasured=unmeasured)
    return Run(info=info, environment=env, results=results, run_id=int(row["id"]))


def unmeasured_from_row(row: dict[str, Any]) -> UnmeasuredTest:
    return UnmeasuredTest(row["nodeid"], TestOutcome(row["outcome"]), row["reason"] or "")


def case_from_row(row: dict[str, Any], samples: tuple[float, ...], metrics: tuple[Metric, ...],
                  gpu: GpuState | None, autotune: tuple[tuple[str, str], ...], speedup: Speedup | None) -> CaseResult:
    stats = {c: row[c] for c in STAT_COLUMNS}
    stats["timer"] = Timer(stats["timer"])
    location = (row["location_file"], int(row["location_line"])) if row["location_file"] else None
    return CaseResult(
        case_id=row["case_id"], timing=TimingStats(**stats), samples_ms=samples, metrics=metrics,
        bytes_moved=row["bytes_moved"], flops=row["flops"], profile_errors=tuple(_json_list(row["profile_errors"])),
        profile_notes=tuple(_json_list(row["profile_notes"])), thresholds=_thresholds(row["thresholds"]),
        gpu_state=gpu, autotune=autotune, speedup=speedup,
        confirmation_medians_ms=tuple(float(v) for v in _json_list(row["confirmation_medians"])),
        confirmation_speedups=tuple(float(v) for v in _json_list(row["confirmation_speedups"])),
        nodeid=row["nodeid"] or "", location=location, device_uuid=row["device_uuid"] or "")


def _json_list(text: str | None) -> list[Any]:
    value = json.loads(text) if text else []
    if not isinstance(value, list):
        raise ValueError("expected a JSON list")
    return value


def _thresholds(text: str | None) -> CaseThresholds:
    """Stored thresholds; a run stored before version 2 had none and gets today's defaults."""
    if not text:
        return CaseThresholds()
    raw = json.loads(text)
    raw["metrics"] = tuple((str(k), float(v)) for k, v in raw.get("metrics", ()))
    return CaseThresholds(**raw)


def gpu_from_row(row: dict[str, Any]) -> GpuState:
    values = {c: row[c] for c in GPU_COLUMNS}
    values["clocks_locked"] = bool(values["clocks_locked"])
    return GpuState(**values)
