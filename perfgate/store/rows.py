"""The history's columns, and rows back into records with every value re-validated (store/checks.py); a
run into rows is store/prepared.py. Columns are listed here explicitly (never derived from the
dataclasses), so adding a field to a record is a visible schema change with its own migration, not a
silent break."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from perfgate.model import (
    CaseResult,
    Environment,
    GpuState,
    Metric,
    Run,
    RunInfo,
    RunKind,
    Speedup,
    TestOutcome,
    Timer,
    TimingStats,
    UnmeasuredTest,
    Verdict,
)
from perfgate.store import checks
from perfgate.store.checks import StoredValueError
from perfgate.store.packed import unpack_f64
from perfgate.store.verdicts import MetricVerdict

ENV_COLUMNS = (
    "device_kind",
    "device_name",
    "device_uuid",
    "compute_capability",
    "driver_version",
    "cuda_version",
    "torch_version",
    "triton_version",
    "python_version",
    "perfgate_version",
    "hostname",
    "platform",
    "cpu_brand",
    "cpu_model",
    "cpu_cores",
    "cpu_caches",
    "os_release",
)
RUN_COLUMNS = (
    "run_uid",
    "started_at",
    "finished_at",
    "git_commit",
    "git_branch",
    "git_dirty",
    "argv",
    "profile_settings",
    *ENV_COLUMNS,
    "kind",
    "ab_pair",
    "ab_anchor",
)
STAT_COLUMNS = (
    "timer",
    "n_samples",
    "median_ms",
    "mean_ms",
    "stdev_ms",
    "min_ms",
    "max_ms",
    "q1_ms",
    "q3_ms",
    "gbps",
    "tflops",
)
CASE_COLUMNS = (
    "run_id",
    "case_id",
    *STAT_COLUMNS,
    "bytes_moved",
    "flops",
    "profile_errors",
    "nodeid",
    "location_file",
    "location_line",
    "device_uuid",
    "thresholds",
    "confirmation_medians",
    "confirmation_speedups",
    "profile_notes",
    "samples_f64",
    "verdict",
    "host_state",
    "confirmation_memory",
    "code",
    "median_mcycles",
    "sm_clock_mhz",
    "sm_clock_min_mhz",
    "sm_clock_max_mhz",
    "probed_samples",
    "confirmation_mcycles",
)
SPEEDUP_COLUMNS = ("run_id", "case_id", "reference", "median", "ci_low", "ci_high", "reference_samples_f64")
VERDICT_COLUMNS = ("run_id", "case_id", "metric", "kernel", "verdict", "change_pct", "threshold_pct")
METRIC_COLUMNS = ("run_id", "case_id", "source", "kernel", "name", "value", "unit")
AUTOTUNE_COLUMNS = ("run_id", "case_id", "kernel", "config")
UNMEASURED_COLUMNS = ("run_id", "nodeid", "outcome", "reason")
IMPORTED_UID_PREFIX = "pytest-benchmark-"  # parse/pytest_benchmark.py: runs imported from pytest-benchmark JSON
GPU_COLUMNS = (
    "polls",
    "sm_clock_mhz",
    "sm_clock_min_mhz",
    "mem_clock_mhz",
    "temperature_max_c",
    "power_median_w",
    "power_limit_w",
    "throttle_reasons",
    "throttled_fraction",
    "clocks_locked",
    "cooldown_ms",
    "excluded_samples",
)


def insert_sql(table: str, columns: Sequence[str]) -> str:
    """An INSERT with a named parameter per column (the names are the columns')."""
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(':' + c for c in columns)})"


def run_from_row(row: dict[str, Any], results: tuple[CaseResult, ...], unmeasured: tuple[UnmeasuredTest, ...]) -> Run:
    if (row["run_uid"] or "").startswith(IMPORTED_UID_PREFIX):
        # imported before the pytest_benchmark timer existed, they were stored as "host": never comparable
        # with perfgate's own host clock (a different calibration), whatever the row says
        results = tuple(
            replace(r, timing=replace(r.timing, timer=Timer.PYTEST_BENCHMARK)) if r.timing.timer is Timer.HOST else r
            for r in results
        )
    where = f"run {row['id']}"
    env = Environment(**{c: checks.run_text(row[c], f"{where} {c}") for c in ENV_COLUMNS})
    info = RunInfo(
        started_at=checks.run_time(row["started_at"], f"{where} started_at"),
        finished_at=checks.run_time(row["finished_at"], f"{where} finished_at"),
        git_commit=checks.run_text(row["git_commit"], f"{where} git_commit"),
        git_branch=checks.run_text(row["git_branch"], f"{where} git_branch"),
        git_dirty=bool(row["git_dirty"]),
        hostname=env.hostname,
        argv=checks.run_text(row["argv"], f"{where} argv"),
        profile_settings=checks.run_text(row["profile_settings"], f"{where} profile_settings"),
        run_uid=checks.text(row["run_uid"], f"{where} run_uid"),
        unmeasured=unmeasured,
        kind=run_kind(row["kind"], where),
        ab_pair=checks.text(row["ab_pair"], f"{where} ab_pair"),
        ab_anchor=bool(row["ab_anchor"]),
    )
    return Run(info=info, environment=env, results=results, run_id=int(row["id"]))


def run_kind(value: object, where: str) -> RunKind | None:
    if value is None:
        return None
    try:
        return RunKind(value)
    except ValueError:
        raise StoredValueError(f"{where} kind: {value!r} is not a run kind") from None


def case_verdict(value: object, where: str) -> Verdict | None:
    if value is None:
        return None
    try:
        return Verdict(value)
    except ValueError:
        raise StoredValueError(f"{where} verdict: {value!r} is not a verdict") from None


def unmeasured_from_row(row: dict[str, Any]) -> UnmeasuredTest:
    where = f"run {row['run_id']} unmeasured test {row['nodeid']!r}"
    try:
        outcome = TestOutcome(row["outcome"])
    except ValueError:
        raise StoredValueError(f"{where}: outcome {row['outcome']!r} is not a test outcome") from None
    return UnmeasuredTest(checks.text(row["nodeid"], where), outcome, checks.text(row["reason"], where))


def case_from_row(
    row: dict[str, Any],
    metrics: tuple[Metric, ...],
    gpu: GpuState | None,
    autotune: tuple[tuple[str, str], ...],
    speedup: Speedup | None,
    with_samples: bool = True,
) -> CaseResult:
    """The case of a stored row, every value checked; without its samples (left empty) where the caller
    checks the packed arrays itself (store/copy.py checks a batch's at once)."""
    where = f"run {row['run_id']} case {row['case_id']!r}"
    samples = checks.samples(unpack_f64(row["samples_f64"]), f"{where} samples_f64") if with_samples else ()
    return CaseResult(
        case_id=checks.case_id(row["case_id"], where),
        timing=timing_from_row(row, where),
        samples_ms=samples,
        metrics=metrics,
        bytes_moved=checks.count(row["bytes_moved"], f"{where} bytes_moved", optional=True),
        flops=checks.count(row["flops"], f"{where} flops", optional=True),
        profile_errors=checks.text_list(row["profile_errors"], f"{where} profile_errors"),
        profile_notes=checks.text_list(row["profile_notes"], f"{where} profile_notes"),
        thresholds=checks.thresholds(row["thresholds"], f"{where} thresholds"),
        gpu_state=gpu,
        autotune=autotune,
        speedup=speedup,
        confirmation_medians_ms=checks.positive_list(row["confirmation_medians"], f"{where} confirmation_medians"),
        confirmation_speedups=checks.positive_list(
            row["confirmation_speedups"], f"{where} confirmation_speedups", high=checks.MAX_SPEEDUP
        ),
        confirmation_memory=checks.positive_list(row["confirmation_memory"], f"{where} confirmation_memory", high=None),
        host_state=checks.host_state(row["host_state"], f"{where} host_state"),
        code=checks.code(row.get("code"), f"{where} code"),
        cycles=checks.cycles(row, where),
        confirmation_mcycles=checks.positive_list(
            row.get("confirmation_mcycles"), f"{where} confirmation_mcycles", high=checks.MAX_MCYCLES
        ),
        nodeid=checks.text(row["nodeid"], f"{where} nodeid"),
        location=_location(row, where),
        device_uuid=checks.text(row["device_uuid"], f"{where} device_uuid"),
    )


def timing_from_row(row: dict[str, Any], where: str) -> TimingStats:
    try:
        timer = Timer(row["timer"])
    except ValueError:
        raise StoredValueError(f"{where} timer: {row['timer']!r} is not a timer") from None
    stats = {c: checks.time_ms(row[c], f"{where} {c}") for c in STAT_COLUMNS[2:-2]}
    checks.ordered(stats, where)
    return TimingStats(
        timer=timer,
        n_samples=checks.count(row["n_samples"], f"{where} n_samples") or 0,
        **stats,
        gbps=checks.optional_number(row["gbps"], f"{where} gbps"),
        tflops=checks.optional_number(row["tflops"], f"{where} tflops"),
    )


def _location(row: dict[str, Any], where: str) -> tuple[str, int] | None:
    if not row["location_file"]:
        return None
    line = checks.count(row["location_line"], f"{where} location_line")
    return (checks.text(row["location_file"], f"{where} location_file"), line or 0)


def metric_from_row(row: dict[str, Any]) -> Metric:
    where = f"run {row['run_id']} case {row['case_id']!r} metric {row['name']!r}"
    return Metric(
        name=checks.text(row["name"], where),
        value=checks.number(row["value"], where, low=None),
        unit=checks.text(row["unit"], where),
        source=checks.text(row["source"], where),
        kernel=checks.text(row["kernel"], where),
    )


def speedup_from_row(row: dict[str, Any]) -> Speedup:
    where = f"run {row['run_id']} case {row['case_id']!r} speedup"
    low, median, high = (
        checks.number(row[c], f"{where} {c}", high=checks.MAX_SPEEDUP, low_open=True)
        for c in ("ci_low", "median", "ci_high")
    )
    if low > high:
        raise StoredValueError(f"{where}: ci_low {low!r} above ci_high {high!r}")
    refs = checks.samples(unpack_f64(row["reference_samples_f64"]), f"{where} reference_samples_f64")
    return Speedup(checks.text(row["reference"], where), refs, median, low, high)


def gpu_from_row(row: dict[str, Any]) -> GpuState:
    where = f"run {row['run_id']} case {row['case_id']!r} gpu_state"
    values: dict[str, Any] = {c: checks.optional_number(row[c], f"{where} {c}") for c in GPU_COLUMNS}
    for c in ("polls", "throttle_reasons", "excluded_samples"):
        values[c] = checks.count(row[c], f"{where} {c}")
    values["throttled_fraction"] = checks.number(row["throttled_fraction"], f"{where} throttled_fraction", high=1.0)
    values["cooldown_ms"] = checks.number(row["cooldown_ms"], f"{where} cooldown_ms")
    values["clocks_locked"] = bool(row["clocks_locked"])
    return GpuState(**values)


def check_case_row(row: dict[str, Any]) -> None:
    """The checks a case row meets on read, applied before it is written."""
    where = f"case {row['case_id']!r}"
    checks.case_id(row["case_id"], where)
    timing_from_row(row, where)
    checks.thresholds(row["thresholds"], f"{where} thresholds")
    checks.samples(unpack_f64(row["samples_f64"]), f"{where} samples")


def verdict_from_row(row: dict[str, Any]) -> MetricVerdict:
    where = f"run {row['run_id']} case {row['case_id']!r} verdict of {row['metric']!r}"
    try:
        verdict = Verdict(row["verdict"])
    except ValueError:
        raise StoredValueError(f"{where}: {row['verdict']!r} is not a verdict") from None
    return MetricVerdict(
        checks.case_id(row["case_id"], where),
        checks.text(row["metric"], where),
        checks.text(row["kernel"], where),
        verdict,
        checks.optional_number(row["change_pct"], f"{where} change_pct", low=None),
        checks.optional_number(row["threshold_pct"], f"{where} threshold_pct"),
    )
